"""``cockpit runbook list`` and ``cockpit runbook run NAME --job ID | --node N``.

Without ``--yes`` a runbook only proposes its actions (the exact argv is
shown); ``--yes`` executes them through the actions layer (audit, read-only),
``--dry-run`` records what would run. Files copied off a node feed the probes
that read them (``--kernel-log``, ``--job-log``, ``--nvidia-smi``, ``--nvlink``,
``--py-spy``, ``--slurm-file``, ``--ib-root``). Files without ``--job`` are a
post-mortem: nothing connects anywhere, a probe with no file for it is n/a, and
actions are proposed only once ``--node`` names the node the files came from.
Exit codes by the verdict rule (docs/verdicts.md): 0 OK, 1 WARN, 2 CRIT,
3 UNKNOWN (nothing could be judged; also for bad input, as for ``cockpit check``).
"""

from __future__ import annotations

import json
import sys

from cockpit.errors import CHECK_UNKNOWN, CockpitError, UsageError
from cockpit.text import one_line


def register(sub) -> None:
    p = sub.add_parser("runbook", help="runbooks for hung jobs and GPU/IB/PCIe faults (exit 0/1/2/3)")
    rsub = p.add_subparsers(dest="runbook_cmd", metavar="list|run")
    p.set_defaults(func=run_list)
    lp = rsub.add_parser("list", help="list the runbooks (bundled and site) and any broken files")
    lp.add_argument("--json", action="store_true")
    lp.set_defaults(func=run_list)
    rp = rsub.add_parser("run", help="run a runbook against a job or a node")
    rp.add_argument("name", metavar="NAME")
    who = rp.add_mutually_exclusive_group()
    who.add_argument("--job", metavar="ID", help="the job to diagnose")
    who.add_argument("--node", metavar="NODE", help="the node to diagnose (also labels post-mortem files)")
    rp.add_argument("--kernel-log", action="append", default=[], metavar="FILE", help="kernel log (or Fabric Manager log) file instead of dmesg on the node (repeatable)")
    rp.add_argument("--job-log", action="append", default=[], metavar="FILE", help="job output file instead of the job's own (repeatable)")
    rp.add_argument("--nvidia-smi", action="append", default=[], metavar="FILE", help="saved nvidia-smi output (-q, -q -x or --query-gpu CSV)")
    rp.add_argument("--nvlink", action="append", default=[], metavar="FILE", help="saved `nvidia-smi nvlink --status`")
    rp.add_argument("--py-spy", action="append", default=[], metavar="FILE", dest="py_spy",
                    help="saved `py-spy dump` output of the job's processes (repeatable)")
    rp.add_argument("--slurm-file", action="append", default=[], metavar="FILE",
                    help="saved seff, sacct, sshare, sdiag, sinfo, squeue, scontrol show output or a slurmctld/slurmd "
                         "log excerpt; every runbook reads it, a node runbook what it says of --node (repeatable)")
    rp.add_argument("--ib-root", metavar="DIR", help="a copy of /sys/class/infiniband to read instead of the node's")
    rp.add_argument("--stale-after", type=float, metavar="S", help="seconds without output that count as not progressing")
    rp.add_argument("--yes", action="store_true", help="do the proposed actions (otherwise only propose)")
    rp.add_argument("--dry-run", action="store_true", help="record what the actions would run, run nothing")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(func=run_runbook)


def _warn(problems) -> None:
    for pr in problems:
        print(f"cockpit: warning: runbook {pr}", file=sys.stderr)


async def run_list(args, session) -> int:
    from cockpit_runbooks import load_runbooks

    books, problems = load_runbooks()
    if getattr(args, "json", False):
        json.dump({"runbooks": [{"name": b.name, "title": b.title, "target": b.target, "source": b.source,
                                 "path": b.path, "steps": [s.id for s in b.steps]} for b in books.values()],
                   "problems": [{"path": p.path, "line": p.line, "message": p.message} for p in problems]},
                  sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for b in sorted(books.values(), key=lambda b: b.name):
            print(f"{b.name:14} {b.target:4} {b.title}  [{b.source}]")
    _warn(problems)
    return 0


def build_context(session, args, progress):
    """The runbooks' CheckContext: the gate (``--yes`` confirms), the backend's probes."""
    from cockpit.config import plugin_config
    from cockpit.plugins.host import session_context
    from cockpit_runbooks import plugin

    config = plugin_config(session.config, plugin)
    if args.stale_after is not None:
        config["stale_after_s"] = args.stale_after
    return session_context(session, plugin, yes=bool(args.yes), progress=progress, config=config)


def _print_text(report) -> None:
    from cockpit.core.joblog import sanitize  # cluster strings are shown as text, escapes stripped

    print(f"{report.severity.name}: {sanitize(report.summary())}")
    for src in report.inputs:
        print(f"  input: {sanitize(src)}")
    for s in report.steps:
        print(f"- [{s.status}] {s.id}: {s.title}" + (f" ({sanitize(s.why)})" if s.why else ""))
        for f in s.findings:
            print(f"    [{f.severity.name}] {sanitize(f.title)}")
            if f.detail:
                print(f"        {sanitize(f.detail)}")
            for ev in f.evidence[:8]:
                print(f"        - {sanitize(ev)}")
            if f.fix:
                print(f"        fix: {sanitize(f.fix)}")
        for argv in s.argv:
            import shlex

            print(f"    $ {shlex.join(argv)}")


async def run_runbook(args, session) -> int:
    from cockpit_runbooks import load_runbooks
    from cockpit_runbooks.context import RunContext
    from cockpit_runbooks.engine import run_runbook as run

    books, problems = load_runbooks()
    _warn(problems)
    try:
        book = books.get(args.name)
        if book is None:
            raise UsageError(f"unknown runbook {args.name!r} (known: {', '.join(sorted(books)) or 'none'})")
        files = args.kernel_log or args.job_log or args.nvidia_smi or args.ib_root or args.nvlink or args.py_spy \
            or args.slurm_file
        if not (args.job or args.node or files):
            raise UsageError(f"runbook {book.name} needs --job ID or --node NODE (or log files)")
        if args.yes and args.dry_run:
            raise UsageError("--yes and --dry-run exclude each other")
        quiet = args.json
        ctx = build_context(session, args, lambda m: None if quiet else print(m, file=sys.stderr, flush=True))
    except CockpitError as exc:
        print(f"cockpit: {one_line(str(exc))}", file=sys.stderr)
        return CHECK_UNKNOWN
    rc = RunContext(ctx, job_id=args.job, node=args.node, kernel_logs=tuple(args.kernel_log),
                    job_logs=tuple(args.job_log), smi_files=tuple(args.nvidia_smi), ib_root=args.ib_root,
                    nvlink_files=tuple(args.nvlink), pyspy_files=tuple(args.py_spy), slurm_files=tuple(args.slurm_file))
    mode = "act" if args.yes else "dry-run" if args.dry_run else "propose"
    try:
        report = await run(book, rc, mode)
    finally:
        await ctx.probes.close()
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _print_text(report)
    return report.exit_code
