"""Jobs that look stuck, with their evidence: what the Pulse lists first (no Textual).

A running job is a suspect when

* its output has not changed for ``[tui] silent_after`` seconds (the output watch,
  cockpit/tui/outputwatch.py, reads its stdout's mtime);
* the GPUs Slurm gave it are at (nearly) 0% use (live telemetry: the nodes of
  silent jobs are polled besides the nodes on screen);
* it runs far past its usual time: more than twice the median run time of the
  jobs of the same user and name that cockpit saw end (at least three).

Everything here runs in the Pulse's worker thread, never on the UI thread.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cockpit.hostlist import collapse
from cockpit.models import Job
from cockpit.tui.rows import Column, Row, Schema, duration

IDLE_UTIL = 5.0  # percent: a GPU below this does nothing useful
USUAL_FACTOR = 2.0
USUAL_RUNS = 3  # ended runs needed before "usual" means anything
MIN_LONG = 3600  # a job shorter than this is never "past its usual time"
SUSPECT_NODES = 64  # at most this many nodes of suspects are polled for telemetry


@dataclass(frozen=True, slots=True)
class Suspect:
    job: Job
    evidence: tuple[str, ...]
    silent_for: float | None = None  # seconds since its output changed
    gpu_util: float | None = None  # mean over its GPUs, percent
    rank: float = 0.0  # larger: listed first


def job_gpu_util(job: Job, telemetry: Mapping[tuple[str, int], Mapping[str, Any]]) -> tuple[float, int] | None:
    """(mean utilisation %, GPUs read) of the job's GPUs, None when none was read."""
    utils = []
    for g in job.gpus:
        for idx in g.indexes:
            t = telemetry.get((g.node, idx))
            u = t.get("util") if t else None
            if isinstance(u, (int, float)):
                utils.append(float(u))
    return (sum(utils) / len(utils), len(utils)) if utils else None


MAX_NAMES = 10_000  # (user, job name) pairs remembered: names with a timestamp in them are all new


class UsualTimes:
    """Run times of the jobs that ended while cockpit watched, by (user, name)."""

    def __init__(self, keep: int = 20, names: int = MAX_NAMES) -> None:
        self.keep, self.names = keep, names
        self._runs: dict[tuple[str, str], deque[float]] = {}

    def ended(self, job: Job, when: float) -> None:
        start = job.start_time
        end = job.end_time or when
        if start and end > start:
            key = (job.user, job.name)
            runs = self._runs.pop(key, None) or deque(maxlen=self.keep)
            runs.append(end - start)
            self._runs[key] = runs  # the newest last: names that end jobs stay, one-off names go
            while len(self._runs) > self.names:
                del self._runs[next(iter(self._runs))]

    def known(self) -> list[tuple[str, str]]:
        """The (user, name) pairs with a usual run time (USUAL_RUNS runs or more)."""
        return [k for k, runs in self._runs.items() if len(runs) >= USUAL_RUNS]

    def usual(self, job: Job) -> tuple[float, int] | None:
        """(median run time, runs seen) for jobs like ``job``; None under USUAL_RUNS runs."""
        runs = self._runs.get((job.user, job.name))
        if not runs or len(runs) < USUAL_RUNS:
            return None
        return statistics.median(runs), len(runs)


def find_suspects(jobs: Iterable[Job], now: float, *, last_output: Mapping[int, float],
                  telemetry: Mapping[tuple[str, int], Mapping[str, Any]], usual: UsualTimes | None = None,
                  silent_after: float = 600.0) -> tuple[Suspect, ...]:
    """The running jobs with evidence of being stuck, the most suspicious first."""
    out = []
    for job in jobs:
        if job.state != "RUNNING":
            continue
        evidence, rank = [], 0.0
        mtime = last_output.get(job.job_id)
        silent = now - mtime if mtime is not None else None
        if silent is not None and silent >= silent_after:
            evidence.append(f"output silent {duration(silent)}")
            rank += 2 + silent / 3600
        util = job_gpu_util(job, telemetry) if job.gpus else None
        if util is not None and util[0] < IDLE_UTIL:
            evidence.append(f"{util[1]} GPU(s) at {util[0]:.0f}% use")
            rank += 2
        seen = usual.usual(job) if usual is not None else None
        elapsed = now - job.start_time if job.start_time else None
        if seen and elapsed and elapsed > MIN_LONG and elapsed > USUAL_FACTOR * seen[0]:
            evidence.append(f"running {duration(elapsed)}, usually {duration(seen[0])} ({seen[1]} runs seen)")
            rank += 1
        if evidence:
            rank += job.gpu_count / 1000  # among equals, the job holding more GPUs first
            out.append(Suspect(job, tuple(evidence), silent, util[0] if util else None, rank))
    out.sort(key=lambda s: (-s.rank, s.job.job_id))
    return tuple(out)


def suspect_nodes(suspects: Sequence[Suspect], silent: Sequence[Job]) -> tuple[str, ...]:
    """Nodes whose GPUs telemetry should read for the suspects (and silent jobs), capped."""
    nodes: dict[str, None] = {}
    for job in [*(s.job for s in suspects), *silent]:
        for n in job.nodes:
            nodes[n] = None
            if len(nodes) >= SUSPECT_NODES:
                return tuple(nodes)
    return tuple(nodes)


# ---------------------------------------------------------------- the Pulse's tables
SUSPECT_SCHEMA = Schema(
    fields=("id", "user", "name", "gpus", "nodes", "evidence"),
    columns=(Column("JOBID", 8, 0, pin=True), Column("USER", 6, 1, pin=True), Column("NAME", 8, 2),
             Column("GPUS", 4, 3, "right", pin=True), Column("NODES", 6, 4), Column("EVIDENCE", 10, 5, pin=True, cap=70)),
    aliases={},
)
BAD_NODE_SCHEMA = Schema(
    fields=("name", "state", "since", "reason", "user"),
    columns=(Column("NODE", 6, 0, pin=True), Column("STATE", 8, 1, pin=True),
             Column("AGE", 7, 2, "right", lambda v, now: duration(now - v) if v else "", inverse=True),
             Column("REASON", 10, 3, pin=True), Column("BY", 4, 4)),
    aliases={},
)


def suspect_row(s: Suspect) -> Row:
    from cockpit.text import clean

    job = s.job
    nodes = collapse(job.nodes) if job.nodes else ""
    evidence = "; ".join(s.evidence)
    cells = (job.display_id, clean(job.user, 200), clean(job.name, 200), str(job.gpu_count), clean(nodes, 200),
             evidence)
    return Row(job.job_id, cells, (job.display_id, job.user, job.name, job.gpu_count, nodes, evidence), "bad")


def bad_node_row(node: Any) -> Row:
    from cockpit.text import clean
    from cockpit.tui.rows import node_state_text, node_style

    cells = (clean(node.name, 200), node_state_text(node), "", clean(node.reason or "", 200),
             clean(node.reason_user or "", 200))
    values = (node.name, node.display_state, node.reason_time, node.reason or "", node.reason_user or "")
    return Row(node.name, cells, values, node_style(node))
