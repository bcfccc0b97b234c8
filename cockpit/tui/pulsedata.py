"""What the Pulse shows, computed from a snapshot in its worker thread (no Textual).

:func:`compute` gives a :class:`PulseData`: the counts, the recent changes, the
suspect jobs and the drained/down nodes as table data, the jobs view's GPU% and
LAST OUT figures, the jobs the output watch should look at and the nodes whose
GPU telemetry the suspects need. :class:`ChangeTracker` remembers, across
snapshots, node and job states, which job ids were seen and when they left the
queue (``:job ID`` tells "finished" from "never existed"), and the run times of
jobs that ended (a job's "usual time").
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from cockpit.core.joblog import DEV_NULL, JobLogError, path_for
from cockpit.models import ClusterSnapshot, Job
from cockpit.tui.pulseindex import JobIndex
from cockpit.tui.rows import TableData, build_table
from cockpit.tui.suspects import UsualTimes, bad_node_row, find_suspects, suspect_nodes, suspect_row

MAX_CHANGES = 40
MAX_GONE = 100_000  # job ids remembered as "left the queue"


class Departures:
    """Job id -> when it left the queue, the MAX_GONE latest (the first to leave go
    first; leaving again keeps the first place), in containers the cyclic GC does not
    walk: a dict of ints to floats (untracked) and an ``array`` of the ids in order
    (its type is its one reference). As an OrderedDict (always tracked) the 100k ids
    of an hour at a big site were 300k references that every full collection
    (settle_heap's thaw) walked."""

    __slots__ = ("_when", "_order", "_head", "cap")

    def __init__(self, cap: int = MAX_GONE) -> None:
        self._when: dict[int, float] = {}
        self._order = array("q")
        self._head = 0  # ids before it in _order have been dropped
        self.cap = cap

    def add(self, job_id: int, when: float) -> None:
        if job_id not in self._when:
            self._order.append(job_id)
        self._when[job_id] = when
        while len(self._when) > self.cap:
            del self._when[self._order[self._head]]
            self._head += 1
        if self._head > 4096 and self._head * 2 > len(self._order):
            del self._order[:self._head]
            self._head = 0

    def get(self, job_id: int, default: float | None = None) -> float | None:
        return self._when.get(job_id, default)

    def __len__(self) -> int:
        return len(self._when)

    def items(self) -> list[tuple[int, float]]:
        """In the order they left."""
        when = self._when
        return [(j, when[j]) for j in self._order[self._head:]]


@dataclass(frozen=True)
class PulseData:
    node_states: tuple[tuple[str, int], ...]
    gpus: tuple[tuple[str, int, int, int], ...]  # partition, alloc, total, idle usable
    pending: tuple[tuple[str, int], ...]
    running: int
    pending_total: int
    changes: tuple[tuple[float, str, str], ...]  # when, what, style
    suspects: TableData = TableData.empty()
    bad_nodes: TableData = TableData.empty()
    extras: dict = None  # type: ignore[assignment]  # job id -> (GPU util %, output mtime)
    candidates: tuple[tuple[int, str, str], ...] | None = None  # (job, batch host, path): None = unchanged
    watch_nodes: tuple[str, ...] = ()


def summarise(snap: ClusterSnapshot) -> dict[str, Any]:
    """Counts for the pulse view (pure; raises nothing): a full pass, what the
    tracker keeps from deltas (tests compare the two)."""
    pend = Counter(j.reason or "None" for j in snap.jobs if j.state == "PENDING")
    return {
        **summarise_nodes(snap),
        "pending": tuple(pend.most_common(8)),
        "running": sum(1 for j in snap.jobs if j.state == "RUNNING"),
        "pending_total": sum(pend.values()),
    }


def summarise_nodes(snap: ClusterSnapshot) -> dict[str, Any]:
    """Nodes by state and GPUs per partition."""
    states = Counter(n.display_state for n in snap.nodes)
    nodes = {n.name: n for n in snap.nodes}
    gpus = []
    for p in snap.partitions:
        members = [nodes[x] for x in p.nodes if x in nodes]
        gpus.append((p.name, sum(n.gpu_alloc for n in members), sum(n.gpu_total for n in members),
                     sum(n.gpu_total - n.gpu_alloc for n in members if not n.is_unavailable)))
    return {"node_states": tuple(sorted(states.items(), key=lambda kv: -kv[1])), "gpus": tuple(gpus)}


class ChangeTracker:
    """Remembers node and job states of the last snapshot and lists what changed."""

    def __init__(self) -> None:
        self.nodes: dict[str, str] | None = None
        self.jobs: dict[int, Job] | None = None  # the index's, once fed
        self.index = JobIndex()
        self._nodes_seen: Any = None  # the snapshot's nodes and partitions last summarised (identity)
        self._parts_seen: Any = None
        self._node_summary: dict[str, Any] = {}
        self._bad: tuple[Any, TableData] = (None, TableData.empty())  # (nodes, their table)
        self.recent: deque[tuple[float, str, str]] = deque(maxlen=MAX_CHANGES)
        self.usual = UsualTimes()
        self.gone = Departures()  # job id -> when it left the queue
        self.newest = 0  # the highest job id seen
        self.summary: dict[str, Any] = {}

    def feed(self, snap: ClusterSnapshot, when: float) -> None:
        """Take a snapshot: the jobs that changed since the last one (found by the
        index), the nodes' states when the nodes changed."""
        first = self.jobs is None
        changed, left = self.index.update(snap.jobs)
        self.jobs = self.index.jobs
        if snap.nodes is not self._nodes_seen or snap.partitions is not self._parts_seen:
            self._feed_nodes(snap, when)
        if not first:
            self._job_changes(changed, left, when)
        self.newest = max(self.newest, max((j.job_id for _o, j in changed), default=0))
        self.summary = {**self._node_summary, **self.index.counts()}

    def _feed_nodes(self, snap: ClusterSnapshot, when: float) -> None:
        self._nodes_seen, self._parts_seen = snap.nodes, snap.partitions
        nodes = {n.name: n.display_state for n in snap.nodes}
        if self.nodes is not None:
            for name, st in nodes.items():
                old = self.nodes.get(name)
                if old is not None and old != st:
                    self.recent.appendleft((when, f"node {name}: {old} → {st}", st))
        self.nodes = nodes
        self._node_summary = summarise_nodes(snap)

    def _job_changes(self, changed: list, left: list[Job], when: float) -> None:
        started = new = 0
        for o, j in changed:  # jobs that started, jobs that completed (a run time)
            if o is None:
                new += 1
                continue
            st = j.state
            if o.state != st:
                if st == "RUNNING":
                    started += 1
                elif st == "COMPLETED":
                    self.usual.ended(j, when)
        for o in left:
            self.gone.add(o.job_id, when)
            if o.state == "RUNNING":
                self.usual.ended(o, when)
        if started or new or left:
            self.recent.appendleft((when, f"jobs: {new} submitted, {started} started, "
                                          f"{len(left)} left the queue", ""))

    def bad_nodes(self, snap: ClusterSnapshot) -> TableData:
        """The drained/down nodes' table, made again only when the nodes changed."""
        if self._bad[0] is not snap.nodes:
            bad = sorted((n for n in snap.nodes if n.is_unavailable or "not_responding" in n.flags),
                         key=lambda n: (-(n.reason_time or 0), n.name))
            self._bad = (snap.nodes, build_table([bad_node_row(n) for n in bad], None, None, False))
        return self._bad[1]

    def job_fate(self, job_id: int, now: float) -> str:
        """Why a job id is not in the queue, in words."""
        from cockpit.tui.rows import duration

        left = self.gone.get(job_id)
        if left is not None:
            return f"left the queue {duration(now - left) or '0s'} ago (finished, cancelled or purged)"
        if self.newest and job_id > self.newest:
            return f"not known to Slurm: the newest job is {self.newest}"
        return "not in the queue, and not seen since cockpit started (finished before, or never existed)"


def watch_candidates(jobs: Any, cap: int) -> tuple[tuple[int, str, str], ...]:
    """The running jobs whose output to watch: the ``cap`` largest by GPUs (then newest)."""
    running = (j for j in jobs if j.state == "RUNNING" and j.nodes)
    return _watched(heapq.nlargest(cap, running, key=lambda j: (j.gpu_count, j.job_id)))


def _watched(largest: Any) -> tuple[tuple[int, str, str], ...]:
    out = []
    for job in largest:
        try:
            path = path_for(job)
        except JobLogError:
            continue
        if path != DEV_NULL:
            out.append((job.job_id, job.nodes[0], path))
    return tuple(out)


def compute(snap: ClusterSnapshot, tracker: ChangeTracker, fresh: bool, now: float, *, telemetry: dict,
            outputs: dict[int, float], silent_after: float, watch: int) -> PulseData:
    """Everything the Pulse shows; ``fresh``: a new snapshot (fed to the tracker).
    The work follows what changed: the jobs come from the tracker's index."""
    if fresh or not tracker.summary:
        tracker.feed(snap, snap.fetched_at or now)
    index = tracker.index
    maybe = index.could_be_suspects(outputs, telemetry, tracker.usual.known())
    suspects = find_suspects(maybe, now, last_output=outputs, telemetry=telemetry, usual=tracker.usual,
                             silent_after=silent_after)
    jobs = index.jobs
    silent = [jobs[jid] for jid in sorted(outputs) if jid in jobs and now - outputs[jid] >= silent_after]
    extras: dict[int, tuple[float | None, float | None]] = {jid: (None, t) for jid, t in outputs.items()}
    for s in suspects:
        extras[s.job.job_id] = (s.gpu_util, outputs.get(s.job.job_id))
    return PulseData(
        changes=tuple(tracker.recent), **tracker.summary,
        suspects=build_table([suspect_row(s) for s in suspects], None, None, False),
        bad_nodes=tracker.bad_nodes(snap),
        extras=extras, candidates=_watched(index.largest_running(watch)) if fresh else None,
        watch_nodes=suspect_nodes(suspects, silent),
    )


def behind_watch(snap: ClusterSnapshot, *, outputs: dict[int, float], telemetry: dict, usual: UsualTimes | None,
                 now: float, silent_after: float, watch: int) -> tuple[tuple[tuple[int, str, str], ...], tuple[str, ...]]:
    """(the jobs whose output to watch, the suspects' and silent jobs' nodes) of a cluster
    that is not in front, by the rules :func:`compute` applies for the one in front: one
    pass over the jobs, no tracker fed, no table built."""
    running = [j for j in snap.jobs if j.state == "RUNNING"]
    suspects = find_suspects(running, now, last_output=outputs, telemetry=telemetry, usual=usual,
                             silent_after=silent_after)
    by_id = {j.job_id: j for j in snap.jobs if j.job_id in outputs}
    silent = [by_id[jid] for jid in sorted(by_id) if now - outputs[jid] >= silent_after]
    return watch_candidates(running, watch), suspect_nodes(suspects, silent)
