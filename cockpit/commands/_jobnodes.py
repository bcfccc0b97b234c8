"""``cockpit job tail`` and ``cockpit job procs``: a job's output and processes,
read where they are (locally, or over SSH on the job's nodes).

``job tail`` reads the file here when it can, else on the job's batch host
(its first node) over SSH; with ``--host`` (Slurm on a login node) always on
the node. It says on stderr where the lines come from (``node01:/path``).
``job procs`` lists the job's processes on every node it runs on
(``scontrol listpids`` on the node, with ps state and GPU index).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cockpit.errors import EXIT_FAILED, EXIT_OK, UsageError


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add ``tail`` and ``procs`` under ``cockpit job``."""
    t = sub.add_parser("tail", help="print the end of a job's stdout/stderr (here, or over SSH on its node)")
    t.add_argument("job", metavar="JOBID")
    t.add_argument("-n", "--lines", type=int, default=20, help="lines to print (default 20)")
    t.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    t.add_argument("--stderr", action="store_true", help="the job's stderr instead of stdout")
    where = t.add_mutually_exclusive_group()
    where.add_argument("--from-node", dest="where", action="store_const", const="node",
                       help="read it on the job's batch host over SSH, even when readable here")
    where.add_argument("--local", dest="where", action="store_const", const="local",
                       help="read it here only, never over SSH")
    t.set_defaults(func=job_tail, where="auto")
    p = sub.add_parser("procs", help="a job's processes on each of its nodes (over SSH)")
    p.add_argument("job", metavar="JOBID")
    p.add_argument("--json", action="store_true", help="one object: processes per node, errors per node")
    p.set_defaults(func=job_procs)


def _node_settings(session: Any, args: argparse.Namespace) -> Any:
    from cockpit.commands.exec import fanout_settings

    return fanout_settings(session, args)


async def job_tail(args: argparse.Namespace, session: Any) -> int:
    """Print the last lines (and follow). Raises JobLogError (exit 1) with the
    file and where it was read ("pending: no output yet" for a pending job);
    UsageError for a negative count."""
    from cockpit.core.joblog import find_job, open_job_output, resolve_path
    from cockpit.core.text import sanitize

    if args.lines < 0:
        raise UsageError(f"--lines must be 0 or more, got {args.lines}")
    from cockpit.commands.exec import simulated_nodes

    job = await find_job(session.backend, args.job)
    demo = simulated_nodes(session)  # a simulated job's output is on its simulated node, never here
    path = None if job.state == "PENDING" else await resolve_path(job, session.backend, stderr=args.stderr)
    out = open_job_output(job, stderr=args.stderr, where="node" if demo is not None else args.where,
                          remote_session=bool(session.config.general.host),
                          settings=_node_settings(session, args), pool=demo, path=path)
    label = "stderr" if args.stderr else "stdout"
    # the demo's files are on its simulated nodes: say so, as the TUI's log title does
    how = (" (from the simulated node)" if demo is not None else " (over SSH)") if out.node else ""
    print(f"==> job {job.job_id} {label}: {sanitize(out.source)}{how} <==", file=sys.stderr, flush=True)
    try:
        for line in await out.tail(args.lines, partial=not args.follow):
            print(line)
        if args.follow:
            sys.stdout.flush()
            async for line in out.follow():
                print(line, flush=True)
    finally:
        await out.close()
    return EXIT_OK


def _procs_table(procs: dict, errors: dict[str, str]) -> list[str]:
    from cockpit.core.text import sanitize, truncate
    from cockpit.tui.rows import duration  # the TUI's words (2d07h), without Textual

    head = ("NODE", "PID", "STEP", "STATE", "ELAPSED", "GPU", "COMMAND")
    rows = [head]
    for node, plist in procs.items():
        for p in plist:
            rows.append((node, str(p.pid), sanitize(p.step), sanitize(p.state) or "-",
                         "-" if p.elapsed_s is None else duration(p.elapsed_s),
                         "-" if p.gpu_index is None else str(p.gpu_index), truncate(sanitize(p.command), 120)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    for node in procs:
        if not procs[node]:
            lines.append(f"{node}: no processes of this job")
    return [line.rstrip() for line in lines]


async def job_procs(args: argparse.Namespace, session: Any) -> int:
    """Processes per node; exit 1 when a node could not be asked. Raises
    JobLogError for an unknown job, UsageError for a job without nodes."""
    from cockpit.core.joblog import find_job
    from cockpit.core.jobprocs import job_processes, procs_to_json
    from cockpit.core.text import sanitize
    from cockpit.remote.pool import SshPool

    job = await find_job(session.backend, args.job)
    if not job.nodes:
        raise UsageError(f"job {args.job} runs on no node ({job.state.lower()}): no processes to list")
    from cockpit.commands.exec import simulated_nodes

    pool = simulated_nodes(session) or SshPool(_node_settings(session, args))
    try:
        procs, errors = await job_processes(pool, job.job_id, job.nodes)
    finally:
        await pool.close()
    if args.json:
        json.dump(procs_to_json(job.job_id, procs, errors), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for line in _procs_table(procs, errors):
            print(line)
    for node, why in sorted(errors.items()):
        print(f"{node}: error: {sanitize(why)}", file=sys.stderr)
    return EXIT_FAILED if errors else EXIT_OK
