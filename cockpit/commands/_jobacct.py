"""``cockpit job why ID [--start] [--json]`` and ``cockpit job show ID [--json]``.

``why``: a pending job explained: Slurm's reason, the sprio breakdown, the
limits it hits with their usage, reservations its time limit crosses, its
dependencies, the largest free block of its GPUs per leaf switch or NVLink
domain; ``--start`` adds ``squeue --start`` (a backfill simulation in the
controller, so only on demand). Without slurmdbd the limits are one line
("limits: accounting is not configured ...") and the rest is still shown.

``show``: a job as accounting recorded it (any state), with the efficiency of
a finished one (CPU, memory, GPU, each saying where the figure came from).

Exit codes: 0 printed; 2 bad input (unknown id, a job that is not pending);
3 no accounting (``show``) or Slurm could not be asked.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from cockpit.errors import EXIT_FAILED, EXIT_OK, UsageError


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add ``why`` and ``show`` under ``cockpit job``."""
    w = sub.add_parser("why", help="why a job is pending: priority, limits, reservations, dependency, free GPUs")
    w.add_argument("job", metavar="JOBID")
    w.add_argument("--start", action="store_true", help="also ask squeue --start (costs the controller a backfill run)")
    w.add_argument("--json", action="store_true", help="one JSON object (docs/accounting-json.md)")
    w.set_defaults(func=job_why)
    s = sub.add_parser("show", help="a job from accounting, with the efficiency of a finished one")
    s.add_argument("job", metavar="JOBID")
    s.add_argument("--json", action="store_true", help="one JSON object (docs/accounting-json.md)")
    s.set_defaults(func=job_show)


def why_lines(w) -> list[str]:
    from cockpit.commands._acct_out import cell
    from cockpit.core.whyparts import when
    from cockpit.hostlist import collapse

    now = time.time()
    out = [f"job {w.job_id}: {cell(w.summary, 300)}", f"  Slurm's reason: {cell(w.reason, 120) or '-'}",
           f"  asks: {cell(w.asks, 200)}"]
    if w.priority is not None:
        parts = " + ".join(f"{k} {v:g}" for k, v in w.priority.factors.items() if v)
        ahead = "" if w.ahead is None else f"; {w.ahead} pending job(s) of its partition rank higher"
        out.append(f"  priority {w.priority.priority:g} = {parts or '0'}{ahead}")
    for f in w.limits:
        out.append(f"  limit: {cell(f.text, 200)}")
    for r in w.reservations:
        out.append(f"  reservation: {cell(r.text, 240)}")
    for d in w.dependencies:
        out.append(f"  dependency: {cell(d.text, 200)}")
    shown = [b for b in w.free_blocks if b.kind != "node"][:4] + [b for b in w.free_blocks if b.kind == "node"]
    for b in shown:  # the largest few (all of them in --json)
        fits = "fits" if b.fits else "does not fit"
        out.append(f"  free GPUs: {b.kind} {cell(b.name, 40)} ({collapse(b.nodes)}): {b.free_gpus} free, "
                   f"{b.nodes_that_fit} node(s) with room for it: {fits}")
    if w.start_estimate:
        out.append(f"  expected start (squeue --start): {when(w.start_estimate, now)} on {cell(w.start_nodes) or '?'}")
    elif w.start_nodes or w.start_estimate is None and any("squeue --start" in c.command for c in w.costs):
        out.append("  expected start (squeue --start): not known to the scheduler yet")
    for n in w.notes:
        out.append(f"  {cell(n, 240)}")
    return out


async def job_why(args: argparse.Namespace, session: Any) -> int:
    """Raises UsageError (2), BackendError (3)."""
    from cockpit.commands._acct_out import print_costs, print_json, print_lines
    from cockpit.core.whypending import why_pending
    from cockpit.models.accounting_serialize import why_to_dict

    w = await why_pending(session.backend, args.job.strip(), time.time(), start_estimate=args.start)
    if args.json:
        print_json(why_to_dict(w))
        return EXIT_OK
    print_lines(why_lines(w))
    print_costs(w.costs)
    return EXIT_OK


def show_lines(job, eff) -> list[str]:
    from cockpit.commands._acct_out import cell, clock, duration
    from cockpit.core.accounting import failure_text
    from cockpit.hostlist import collapse

    code = "-" if job.exit_code is None else f"{job.exit_code}" + (f" (signal {job.exit_signal})" if job.exit_signal else "")
    out = [f"job {job.job_id} {cell(job.name, 60)}: {job.state}" + (f", {cell(failure_text(job), 120)}" if failure_text(job) else ""),
           f"  user {cell(job.user)}, account {cell(job.account)}, partition {cell(job.partition)}, QOS {cell(job.qos) or '-'}",
           f"  submitted {clock(job.submit_time)}, started {clock(job.start_time)}, ended {clock(job.end_time)}",
           f"  elapsed {duration(job.elapsed_s)}, time limit " + ("none" if job.time_limit is None else f"{job.time_limit} min")
           + f", exit code {code}",
           f"  nodes {cell(collapse(job.nodes), 80) or '-'} ({job.node_count}), CPUs {job.cpus}, GPUs {job.gpus}"]
    if eff is not None:
        out.append("  efficiency:")
        for m in eff.measures:
            value = "-" if m.percent is None else f"{m.percent:g}%"
            used = f" ({m.used})" if m.used else ""
            out.append(f"    {m.name:<7} {value}{used}: {m.source}")
    else:
        out.append("  efficiency: once the job has finished")
    return out


async def job_show(args: argparse.Namespace, session: Any) -> int:
    """Raises UsageError (2), AccountingUnavailable/BackendError (3)."""
    from cockpit.commands._acct_out import cell, print_costs, print_json, print_lines
    from cockpit.core.accounting import failure_text, require_accounting
    from cockpit.core.efficiency import efficiency
    from cockpit.models.accounting import FINISHED_STATES
    from cockpit.models.accounting_serialize import SCHEMA_VERSION, cost_to_dict, efficiency_to_dict, job_to_dict

    job_id = args.job.strip()
    if not job_id.replace("_", "").isdecimal():
        raise UsageError(f"job id {args.job!r}: expected a number such as 123 or 123_4")
    acct = await require_accounting(session.backend)
    found = await acct.job(job_id)
    job = next((j for j in found.items if j.job_id == job_id or str(j.job_id_raw) == job_id), None)
    if job is None:
        raise UsageError(f"job {job_id}: accounting has no record of it")
    eff = None
    use: dict | None = None
    warnings = list(found.warnings)
    if job.state in FINISHED_STATES:
        from cockpit.telemetry.promsource import finished_job_history

        history, how = await finished_job_history(session.config, job)
        eff = efficiency(job, history, how)
    elif job.state == "RUNNING" and job.gpus and session.config.telemetry.prometheus_url:
        use, why = await _gpu_use_now(session, job_id)
        if use is None:
            warnings.append(f"job {job_id}: GPU use now unknown: {why}")
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "job": job_to_dict(job, failure_text(job)),
                    "efficiency": None if eff is None else efficiency_to_dict(eff),
                    "steps": [{"step_id": s.step_id, "name": s.name, "state": s.state, "exit_code": s.exit_code,
                               "elapsed_s": s.elapsed_s, "total_cpu_s": s.total_cpu_s} for s in job.steps],
                    "gpu_use_now": use,
                    "costs": [cost_to_dict(c) for c in found.costs], "warnings": warnings})
    else:
        lines = show_lines(job, eff)
        if use is not None:
            lines.append(f"  GPU use now: {use['util_avg']:.0f}% on average, lowest {use['util_min']:.0f}%, "
                         f"{use['gpus']} GPU(s) reporting ({cell(use['source'], 200)})")
        print_lines(lines)
        print_costs(found.costs)
    # A step line that could not be read is left out and named; the exit code says so.
    for w in warnings:
        print(f"cockpit: warning: {w}", file=sys.stderr)
    return EXIT_FAILED if warnings else EXIT_OK


async def _gpu_use_now(session: Any, job_id: str) -> tuple[dict | None, str]:
    """A running job's GPU use now from Prometheus (server-side per-job aggregate), over
    the GPU indexes the live Slurm record gives; (None, why) when it cannot be said."""
    from cockpit.telemetry.promsource import running_job_use

    from cockpit.core.joblog import JobLogError, find_job

    lookup = session.backend.capabilities().lookup
    try:  # one job where the backend can ask for one, else the queue (as job tail does)
        live = await lookup.fetch_job(job_id) if lookup is not None else await find_job(session.backend, job_id)
    except JobLogError:
        live = None
    if live is None:
        return None, "Slurm no longer lists it"
    got, how = await running_job_use(session.config, live)
    if got is None or got.get("util_avg") is None or got.get("util_min") is None:
        return None, how or "Prometheus gave no average for its GPUs"
    return {"util_avg": got.get("util_avg"), "util_min": got.get("util_min"), "gpus": int(got.get("gpus", 0)),
            "source": how}, how
