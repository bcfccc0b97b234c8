"""GPU utilisation over a window: GPU-hours allocated, idle inside allocations,
unallocated, and drained/down, per partition and account, with the trend per
period. Pure arithmetic in :func:`compute`; :func:`utilization` asks the
backend. No Textual.

Where each figure comes from (also in the report's ``sources``):

* allocated: sacct AllocTRES ``gres/gpu`` x (End, or now, - Start), clipped to the window,
  over every run of each job (``-D``: a requeued or preempted job's earlier runs held GPUs);
* capacity: the nodes' GPUs now (sinfo/scontrol) x the window (nodes added or
  removed during the window are not tracked);
* drained/down: sacctmgr node events (drain, down, reboot) x the node's GPUs,
  minus what jobs still held on the node meanwhile (a draining node);
* idle inside allocations: gres/gpuutil recorded in the steps' TRESUsageInAve
  where AccountingStorageTRES tracks it, else the jobs' DCGM_FI_DEV_GPU_UTIL over
  their runs from the site's Prometheus (``gpu_utils``), else "not measured";
* unallocated: capacity - allocated - drained.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from cockpit.backends.accounting import JobQuery
from cockpit.models import Node, Partition
from cockpit.models.accounting import FINISHED_STATES, JobRecord, NodeEvent
from cockpit.models.accounting_reports import UtilRow, Utilization

GOOD_BAND = (70.0, 80.0)  # what clusters with good scheduling reach (sizing guides)
RENT_LINE = 50.0  # below it, renting beats owning
NOT_MEASURED = "not measured"


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def _interval(job: JobRecord, now: float) -> tuple[float, float] | None:
    if not job.start_time:
        return None
    end = job.end_time or now
    return float(job.start_time), float(max(end, job.start_time))


def bucket_for(span_s: float) -> int:
    """A day for windows of two days and more, else an hour."""
    return 86400 if span_s >= 2 * 86400 else 3600


def _down_intervals(events: tuple[NodeEvent, ...], now: float) -> dict[str, list[tuple[float, float]]]:
    """Merged unavailable intervals per node."""
    raw: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e.kind in ("drain", "down", "reboot"):
            raw[e.node].append((float(e.start), float(e.end or now)))
    merged = {}
    for node, ivs in raw.items():
        ivs.sort()
        out = [list(ivs[0])]
        for s, t in ivs[1:]:
            if s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], t)
            else:
                out.append([s, t])
        merged[node] = [(s, t) for s, t in out]
    return merged


class _Window:
    def __init__(self, jobs, events, nodes, now):
        self.jobs = [(j, iv) for j in jobs if j.gpus and (iv := _interval(j, now))]
        self.gpus = {n.name: n.gpu_total for n in nodes}
        self.down = _down_intervals(events, now)
        self.now = now

    def allocated(self, t0, t1, keep) -> tuple[float, int]:
        secs, count = 0.0, 0
        for j, (s, e) in self.jobs:
            if keep(j):
                o = _overlap(s, e, t0, t1)
                if o > 0:
                    secs += j.gpus * o
                    count += 1
        return secs / 3600, count

    def drained(self, t0, t1, nodes) -> float:
        secs = 0.0
        for node in nodes:
            for s, e in self.down.get(node, ()):
                o = _overlap(s, e, t0, t1)
                if o <= 0:
                    continue
                held = sum(j.gpus / max(j.node_count, 1) * _overlap(js, je, max(s, t0), min(e, t1))
                           for j, (js, je) in self.jobs if node in j.nodes)
                secs += max(0.0, self.gpus.get(node, 0) * o - held)
        return secs / 3600

    def row(self, scope, name, t0, t1, keep, nodes, idle_frac) -> UtilRow:
        alloc, count = self.allocated(t0, t1, keep)
        idle = None if idle_frac is None else alloc * idle_frac
        if nodes is None:  # an account: no capacity of its own
            return UtilRow(scope, name, int(t0), int(t1), None, alloc, idle, None, None, count)
        cap = sum(self.gpus.get(n, 0) for n in nodes) * (t1 - t0) / 3600
        drained = self.drained(t0, t1, nodes)
        return UtilRow(scope, name, int(t0), int(t1), cap, alloc, idle, drained,
                       max(0.0, cap - alloc - drained), count)


def compute(jobs: tuple[JobRecord, ...], events: tuple[NodeEvent, ...], nodes: tuple[Node, ...],
            partitions: tuple[Partition, ...], start: int, end: int, *, bucket_s: int | None = None,
            partition: str = "", account: str = "", idle_frac: float | None = None) -> Utilization:
    """The report for [start, end). ``idle_frac``: the share of allocated GPU time that
    was idle (from gres/gpuutil), None where not measured."""
    w = _Window(jobs, events, nodes, end)
    bucket = bucket_s or bucket_for(end - start)
    part_nodes = {p.name: p.nodes for p in partitions}
    all_nodes = tuple(n.name for n in nodes)
    rows = []
    scope_keep = _keep(partition, account)
    scope_nodes = part_nodes.get(partition, all_nodes) if partition else all_nodes
    rows.append(w.row("cluster" if not (partition or account) else "selection",
                      _label(partition, account), start, end, scope_keep, None if account else scope_nodes, idle_frac))
    for p in sorted(part_nodes):
        if partition and p != partition:
            continue
        rows.append(w.row("partition", p, start, end, _both(scope_keep, lambda j, p=p: p in j.partition.split(",")),
                          part_nodes[p], idle_frac))
    for a in sorted({j.account for j, _ in w.jobs if scope_keep(j)}):
        rows.append(w.row("account", a, start, end, _both(scope_keep, lambda j, a=a: j.account == a), None, idle_frac))
    trend = []
    t = start
    while t < end:
        t1 = min(t + bucket, end)
        trend.append(w.row("period", "", t, t1, scope_keep, None if account else scope_nodes, idle_frac))
        t = t1
    return Utilization(start=start, end=end, bucket_s=bucket, rows=tuple(rows), trend=tuple(trend),
                       sources={}, jobs=rows[0].jobs)


def _label(partition: str, account: str) -> str:
    parts = ([f"partition {partition}"] if partition else []) + ([f"account {account}"] if account else [])
    return ", ".join(parts) or "all"


def _keep(partition: str, account: str):
    def keep(j: JobRecord) -> bool:
        return (not partition or partition in j.partition.split(",")) and (not account or j.account == account)
    return keep


def _both(a, b):
    return lambda j: a(j) and b(j)


def idle_fraction(jobs: tuple[JobRecord, ...]) -> tuple[float | None, int]:
    """(share of allocated GPU time idle, jobs that recorded gres/gpuutil) from steps."""
    num = den = 0.0
    measured = 0
    for j in jobs:
        utils = [(s.tres_in_ave["gres/gpuutil"], s.elapsed_s) for s in j.steps if "gres/gpuutil" in s.tres_in_ave]
        if not utils or not j.gpus:
            continue
        measured += 1
        weight = j.gpus * j.elapsed_s
        util = sum(u * (e or 1) for u, e in utils) / (sum(e for _, e in utils) or len(utils))
        num += weight * (1 - min(util, 100.0) / 100.0)
        den += weight
    return (num / den if den else None), measured


def idle_from_utils(jobs: tuple[JobRecord, ...], utils: dict[Any, float]) -> tuple[float | None, int]:
    """(share of allocated GPU time idle, jobs measured) from each job's mean GPU
    utilisation over its run (``utils``: job id -> %, from Prometheus)."""
    num = den = 0.0
    measured = 0
    for j in jobs:
        if j.job_id not in utils or not j.gpus:
            continue
        measured += 1
        weight = j.gpus * max(j.elapsed_s, 1)
        num += weight * (1 - min(utils[j.job_id], 100.0) / 100.0)
        den += weight
    return (num / den if den else None), measured


UNDERCOUNT_NAMED = 5  # jobs named in the warning; the rest are counted


def undercounted_gpus(jobs: tuple[JobRecord, ...]) -> tuple[str, ...]:
    """One warning for the runs whose AllocTRES gres/gpu is below their ReqTRES gres/gpu.

    Slurm allocates at least the GPUs a job asks, so a run that started with fewer
    recorded is an undercount in accounting, not a smaller job: Slurm 24.11 and 26.05
    record ``gres/gpu=3`` for a 2-node ``--gres=gpu:3`` job on one untyped and one typed
    node, which held 6 (tests/data/slurm-24.11/site-history/untyped-and-typed-alloctres.txt).
    The report still counts what Slurm recorded; this says where that is short, and by
    how much."""
    short = []
    for j in jobs:
        asked = j.req_tres.get("gres/gpu")
        if j.start_time and asked is not None and j.gpus < asked:
            short.append((j, int(asked)))
    if not short:
        return ()
    named = ", ".join(f"{j.job_id} ({j.gpus} of {asked})" for j, asked in short[:UNDERCOUNT_NAMED])
    more = f" and {len(short) - UNDERCOUNT_NAMED} more" if len(short) > UNDERCOUNT_NAMED else ""
    missing = sum(asked - j.gpus for j, asked in short)
    return (f"{len(short)} job run(s) hold fewer GPUs in AllocTRES than ReqTRES asked: {named}{more}; "
            f"their GPU-hours count what Slurm recorded ({missing} GPU(s) short in all)",)


async def utilization(acct: Any, snapshot: Any, start: int, now: float, *, partition: str = "",
                      account: str = "", tracked: str = "", gpu_utils: Any = None) -> Utilization:
    """Ask accounting for the window's jobs and node events, then :func:`compute`.
    ``tracked`` is AccountingStorageTRES (gres/gpuutil there: read the steps too).
    Raises BackendError/ParseError (one line)."""
    from dataclasses import replace

    end = int(now)
    # RUNNING: jobs that ran at some time in the window; the finished states: jobs that
    # ended in it. Together every job that held GPUs in the window, and no pending one.
    # every_run (-D): each run of a requeued or preempted job held GPUs; with the state
    # filter and no -D, Slurm 24.11+ gives only the job's last, never-started record.
    q = JobQuery(start=start, states=("RUNNING",) + FINISHED_STATES, exit_codes=False, every_run=True,
                 partitions=(partition,) if partition else (), accounts=(account,) if account else ())
    jobs = await acct.jobs(q)
    known = {n.name for n in snapshot.nodes}
    events = await acct.node_events("", start)
    costs = jobs.costs + events.costs
    warnings = jobs.warnings + events.warnings
    idle, measured, idle_src = None, 0, f"{NOT_MEASURED}: AccountingStorageTRES has no gres/gpuutil"
    if "gres/gpuutil" in tracked:
        steps = await acct.step_usage(q)
        costs += steps.costs
        warnings += steps.warnings
        idle, measured = idle_fraction(steps.items)
        idle_src = (f"gres/gpuutil in TRESUsageInAve of {measured} job(s)' steps" if measured else
                    f"{NOT_MEASURED}: gres/gpuutil is tracked but no job recorded it (no GPU plugin gathered it)")
    if idle is None and gpu_utils is not None:  # no gres/gpuutil: the site's DCGM series over each run
        utils, how = await gpu_utils(jobs.items, start, end)
        idle, measured = idle_from_utils(jobs.items, utils)
        if measured:
            idle_src = f"{how} of {measured} job(s)"
        elif how:
            idle_src = f"{NOT_MEASURED}: {how}"
    warnings += undercounted_gpus(jobs.items)
    report = compute(jobs.items, tuple(e for e in events.items if e.node in known), snapshot.nodes, snapshot.partitions,
                     start, end, partition=partition, account=account, idle_frac=idle)
    sources = {
        "allocated": "sacct -X -D AllocTRES gres/gpu x (End or now - Start) of every run, clipped to the window",
        "capacity": "GPUs per node now (" + (snapshot.source or "the backend") + ") x the window",
        "drained": "sacctmgr show event (drain/down/reboot) x the node's GPUs, less what jobs held there",
        "idle_in_alloc": idle_src,
        "unallocated": "capacity - allocated - drained",
    }
    return replace(report, sources=sources, costs=costs, warnings=tuple(dict.fromkeys(warnings)))
