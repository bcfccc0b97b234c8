"""The jobs of the last snapshot, indexed for the Pulse and kept from what changed (no Textual).

At 500k jobs, recomputing the Pulse over every job of every snapshot took 46% of
the app's time during the first load (issue #24). :class:`JobIndex` takes each
snapshot's jobs and finds what changed as the jobs table does
(:func:`cockpit.tui.livetable.find_changes`): from the job store's change log
when it follows the store, else with C-level passes over the object identities
the backend keeps for unchanged jobs; only the changed jobs are then looked at
in Python. It keeps:

* the running jobs, by the nodes of their GPUs (the suspects that GPU telemetry
  can convict), by (user, name) (those a usual run time can) and by GPU count
  (the output watch's largest jobs);
* the count of running jobs and of pending jobs by reason.

So the suspects are looked for among the jobs that could have evidence, not
among every running job; :func:`cockpit.tui.suspects.find_suspects` judges them
exactly as before (tests/unit/test_pulseindex.py compares with a full pass).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from cockpit.changelog import Follower
from cockpit.heap import built_outside_gc
from cockpit.models import Job
from cockpit.tui.livetable import find_changes

_ID = attrgetter("job_id")


class _Ids:
    """Job ids by key, kept so that a full collection (settle_heap's thaw) can leave
    it untracked and not walk it again: one id per key in ``one`` (str keys, int
    values: a dict of plain values), more in ``many`` (a key -> a dict of ids, each
    of plain values; few keys). A set per key, or a tuple key, kept the whole index
    tracked: the thaw at 500k jobs walked ~300k entries of it."""

    __slots__ = ("one", "many")

    def __init__(self) -> None:
        self.one: dict[str, int] = {}
        self.many: dict[str, dict[int, None]] = {}

    def add(self, key: str, jid: int) -> None:
        bucket = self.many.get(key)
        if bucket is not None:
            bucket[jid] = None
            return
        have = self.one.pop(key, None)
        if have is None or have == jid:
            self.one[key] = jid
        else:
            self.many[key] = {have: None, jid: None}

    def drop(self, key: str, jid: int) -> None:
        bucket = self.many.get(key)
        if bucket is not None:
            bucket.pop(jid, None)
            if len(bucket) == 1:
                del self.many[key]
                self.one[key] = next(iter(bucket))
        elif self.one.get(key) == jid:
            del self.one[key]

    def ids(self, key: str) -> Iterable[int]:
        bucket = self.many.get(key)
        if bucket is not None:
            return bucket
        jid = self.one.get(key)
        return () if jid is None else (jid,)

    def __len__(self) -> int:
        return len(self.one) + len(self.many)


class _Largest:
    """The largest of a population of unique keys, found without a pass over all of it.

    Keeps a buffer of the largest ``2 * cap`` keys (up to ``3 * cap`` before it is cut
    back) and its floor: every key of the population at or above the floor is in the
    buffer, so the ``cap`` largest are the buffer's while it holds ``cap`` or more.
    Below that (``cap`` of its keys left) or for another ``cap`` it is rebuilt from the
    whole population. At 500k jobs, ``heapq.nlargest`` over the running jobs' ids was
    ~80 ms of a worker thread's GIL every refresh (ids come in ascending: each one
    replaced the heap's top); the buffer costs what changed."""

    __slots__ = ("cap", "_top", "_floor", "_all")

    def __init__(self) -> None:
        self.cap = 0  # 0: not built
        self._top: set[tuple[int, int]] = set()
        self._floor: tuple[int, int] | None = None
        self._all = False  # the buffer holds the whole population

    def add(self, key: tuple[int, int]) -> None:
        if self.cap and (self._all or key >= self._floor):  # type: ignore[operator]
            self._top.add(key)
            if len(self._top) > 3 * self.cap:
                keep = sorted(self._top, reverse=True)[:2 * self.cap]
                self._top, self._floor, self._all = set(keep), keep[-1], False

    def discard(self, key: tuple[int, int]) -> None:
        if self.cap and key in self._top:
            self._top.discard(key)
            if len(self._top) < self.cap and not self._all:
                self.cap = 0  # keys below the floor may now be among the largest

    def largest(self, cap: int, population: Callable[[], Iterable[tuple[int, int]]]) -> list[tuple[int, int]]:
        """The ``cap`` largest keys, largest first."""
        if cap <= 0:
            return []
        if cap != self.cap:
            keep = heapq.nlargest(2 * cap, population())
            self.cap, self._top = cap, set(keep)
            self._all = len(keep) < 2 * cap
            self._floor = None if self._all else keep[-1]
        return sorted(self._top, reverse=True)[:cap]


def _name_key(user: str, name: str) -> str:
    """(user, name) as one str key (Slurm's names are C strings: no NUL in them)."""
    return f"{user}\0{name}"


class JobIndex:
    """Jobs by id and the running ones indexed; not thread-safe (the Pulse's worker only)."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.running: dict[int, Job] = {}
        self.by_node = _Ids()  # node -> running job id(s) with GPUs on it
        self.by_name = _Ids()  # (user, name) as _name_key -> running job id(s)
        self.by_gpus: dict[int, dict[int, None]] = {}  # GPU count -> running jobs with nodes (as keys)
        self._largest = _Largest()  # the same jobs as (GPU count, job id): the output watch's largest
        self.pending: Counter[str] = Counter()  # pending jobs by reason
        self._follow = Follower()  # the job store's changes (cockpit.changelog)

    # -- taking a snapshot ----------------------------------------------------
    def update(self, jobs: Sequence[Job]) -> tuple[list[tuple[Job | None, Job]], list[Job]]:
        """Take the jobs of a snapshot. Returns (the changed and new jobs as (old or
        None, new); the jobs that left). Its lists of every job are built out of the
        cyclic GC's walks (cockpit.heap)."""
        with self._follow.taking(), built_outside_gc(len(jobs)):
            return self._update(jobs)

    def _update(self, jobs: Sequence[Job]) -> tuple[list[tuple[Job | None, Job]], list[Job]]:
        objs = self.jobs
        found, rebuilt, removed = find_changes(jobs, _ID, objs, self._follow)
        for _k, job in rebuilt:  # equal but rebuilt: the new identity only
            self._put(job)
        changed: list[Any] = found  # made pairs in place: a second list beside it was ~35 MB at 500k new jobs
        for i, (_k, old, job) in enumerate(found):
            changed[i] = (old, job)
        left = list(map(objs.__getitem__, removed))
        for old in left:
            self._unindex(old)
            del objs[old.job_id]
        for old, job in changed:
            if old is not None:
                self._unindex(old)
            self._index(job)
        for reason in [r for r, n in self.pending.items() if n <= 0]:
            del self.pending[reason]
        return changed, left

    def _put(self, job: Job) -> None:
        self.jobs[job.job_id] = job
        if job.job_id in self.running:
            self.running[job.job_id] = job

    def _index(self, job: Job) -> None:
        jid = job.job_id
        self.jobs[jid] = job
        if job.state == "PENDING":
            self.pending[job.reason or "None"] += 1
        if job.state != "RUNNING":
            return
        self.running[jid] = job
        self.by_name.add(_name_key(job.user, job.name), jid)
        for node in {g.node for g in job.gpus}:
            self.by_node.add(node, jid)
        if job.nodes:
            count = job.gpu_count
            self.by_gpus.setdefault(count, {})[jid] = None
            self._largest.add((count, jid))

    def _unindex(self, job: Job) -> None:
        if job.state == "PENDING":
            self.pending[job.reason or "None"] -= 1  # a reason at 0 goes at the end of update()
        if job.state != "RUNNING":
            return
        jid = job.job_id
        del self.running[jid]
        self.by_name.drop(_name_key(job.user, job.name), jid)
        for node in {g.node for g in job.gpus}:
            self.by_node.drop(node, jid)
        if job.nodes:
            count = job.gpu_count
            bucket = self.by_gpus[count]
            bucket.pop(jid, None)
            if not bucket:
                del self.by_gpus[count]
            self._largest.discard((count, jid))

    # -- what the Pulse asks --------------------------------------------------
    def counts(self) -> dict[str, Any]:
        """The job counts of :func:`cockpit.tui.pulsedata.summarise`."""
        # most_common keeps ties in the order the reasons came (a full pass: the order of
        # their first job in the snapshot; here the same for a first load)
        return {"pending": tuple(self.pending.most_common(8)), "running": len(self.running),
                "pending_total": sum(self.pending.values())}

    def could_be_suspects(self, outputs: Mapping[int, float], telemetry: Mapping[Any, Any],
                          names: Iterable[tuple[str, str]]) -> list[Job]:
        """The running jobs that may have evidence, by job id: those whose output is
        watched, those with GPUs on a node telemetry read, those named in ``names``
        (whose usual run time is known)."""
        running = self.running
        ids = {j for j in outputs if j in running}
        for node in {k[0] for k in telemetry}:
            ids.update(self.by_node.ids(node))
        for user, name in names:
            ids.update(self.by_name.ids(_name_key(user, name)))
        return [running[j] for j in sorted(ids)]

    def largest_running(self, cap: int) -> list[Job]:
        """The ``cap`` running jobs with nodes that hold the most GPUs (then the newest):
        ``heapq.nlargest(cap, running, key=(gpu_count, job_id))``, from what changed."""
        by_gpus = self.by_gpus
        top = self._largest.largest(cap, lambda: ((c, j) for c, ids in by_gpus.items() for j in ids))
        return [self.running[j] for _c, j in top]

