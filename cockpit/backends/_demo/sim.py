"""The simulated scheduler: jobs start when they fit and end when their time is up.

Time moves in fixed ticks on a grid anchored at the scenario's start, so the
state at time T is the same however often (or rarely) it is looked at: a
frozen clock gives byte-identical snapshots, and polling every second or every
minute sees the same history. Randomness comes from one seeded generator that
only the tick hook (job arrivals) consumes.

The scheduler is a small imitation of Slurm's: priority order, a queue depth
like ``default_queue_depth``, a per-user GPU limit (QOS), dependencies, holds,
array task limits, required nodes, and a crude backfill for short jobs.
"""

from __future__ import annotations

import bisect
import heapq
import random
from collections import deque
from collections.abc import Callable

from cockpit.backends._demo.state import (
    FINISHED_STATES,
    MIN_JOB_AGE,
    PENDING,
    RUNNING,
    SimJob,
    SimNode,
)
from cockpit.hostlist import collapse
from cockpit.models import Partition

TICK = 15  # seconds of simulated time per step
MAX_CATCHUP = 6 * 3600  # a clock that jumps further only replays the last 6 hours
QUEUE_DEPTH = 100  # Slurm's default_queue_depth: jobs looked at per pass
BACKFILL_MAX = 1440  # minutes: jobs this short may start ahead of a blocked one
QOS_GPUS_PER_USER = 64  # MaxTRESPerUser=gres/gpu=64 on the train partition
QOS_PARTITION = "train"


class Simulation:
    """Mutable cluster state plus the rules that move it forward."""

    def __init__(self, nodes: list[SimNode], partitions: list[Partition], start: int,
                 rng: random.Random) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.partitions = {p.name: p for p in partitions}
        self.jobs: dict[int, SimJob] = {}
        self.time = start  # last tick processed (on the grid)
        self.rng = rng
        self.next_id = 1
        self.arrivals: Callable[[Simulation, int], None] | None = None
        self._pending: list[tuple[int, int, int]] = []  # (-priority, submit, id), sorted
        self._pending_in: dict[str, int] = {}  # partition -> pending jobs
        self._ends: list[tuple[int, int, int]] = []  # heap of (end, id, run_seq)
        self._gone: deque[tuple[int, int]] = deque()  # (gone_at, id), in time order
        self._run_seq: dict[int, int] = {}
        self._done_ok: dict[int, bool] = {}  # finished job id -> completed successfully
        self._dirty = True

    # -- time ----------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Process every tick up to ``now``."""
        target = int(now)
        if target - self.time > MAX_CATCHUP:
            skip = (target - MAX_CATCHUP - self.time) // TICK
            self.time += skip * TICK
        while self.time + TICK <= target:
            self.time += TICK
            self._tick(self.time)

    def _tick(self, now: int) -> None:
        self._end_due(now)
        while self._gone and self._gone[0][0] <= now:
            gone_at, job_id = self._gone.popleft()
            job = self.jobs.get(job_id)
            if job is not None and job.gone_at == gone_at:
                del self.jobs[job_id]
        if self.arrivals is not None:
            self.arrivals(self, now)
        if self._dirty:
            self.schedule(now)

    def _end_due(self, now: int) -> None:
        while self._ends and self._ends[0][0] <= now:
            end, job_id, seq = heapq.heappop(self._ends)
            job = self.jobs.get(job_id)
            if job is None or job.state != RUNNING or self._run_seq.get(job_id) != seq:
                continue  # cancelled or requeued since this end was planned
            if job.duration is None or job.duration >= job.time_limit * 60:
                self.finish(job, "TIMEOUT", end, reason="TimeLimit")
            elif job.outcome == "FAILED":
                self.finish(job, "FAILED", end, exit_code=job.exit_code or 1, reason="NonZeroExitCode")
            else:
                self.finish(job, "COMPLETED", end, exit_code=0)

    # -- queue ---------------------------------------------------------------
    def new_id(self) -> int:
        job_id = self.next_id
        self.next_id += 1
        return job_id

    def submit(self, job: SimJob) -> SimJob:
        """Add a pending job to the queue (its id must be unused)."""
        job.state = PENDING
        self.jobs[job.job_id] = job
        self._queue(job)
        return job

    def _queue(self, job: SimJob) -> None:
        bisect.insort(self._pending, self._key(job))
        self._pending_in[job.partition] = self._pending_in.get(job.partition, 0) + 1
        self._dirty = True

    def bulk_submit(self, jobs: list[SimJob]) -> None:
        """Queue many pending jobs at once (one sort instead of one insert each)."""
        for job in jobs:
            job.state = PENDING
            self.jobs[job.job_id] = job
        self._pending.extend(self._key(j) for j in jobs)
        self._pending.sort()
        for job in jobs:
            self._pending_in[job.partition] = self._pending_in.get(job.partition, 0) + 1
        self._dirty = True

    def pending_count(self, partition: str | None = None) -> int:
        if partition is None:
            return len(self._pending)
        return self._pending_in.get(partition, 0)

    @staticmethod
    def _key(job: SimJob) -> tuple[int, int, int]:
        return (-job.priority, job.submit_time, job.job_id)

    def _unqueue(self, job: SimJob) -> None:
        key = self._key(job)
        i = bisect.bisect_left(self._pending, key)
        if i < len(self._pending) and self._pending[i] == key:
            del self._pending[i]
            self._pending_in[job.partition] -= 1

    # -- resources -----------------------------------------------------------
    def start(self, job: SimJob, nodes: list[str], now: int) -> None:
        """Allocate the lowest free GPU indexes on ``nodes`` and run ``job``."""
        self._unqueue(job)
        job.gpu_idx = {}
        for name in nodes:
            node = self.nodes[name]
            idx = tuple(node.free_gpus()[: job.gpus_per_node])
            for i in idx:
                node.owners[i] = job.job_id
            node.cpu_alloc[job.job_id] = job.cpus_per_node
            node.mem_alloc[job.job_id] = job.mem_per_node
            if idx:
                job.gpu_idx[name] = idx
        job.nodes = list(nodes)
        job.state, job.reason = RUNNING, "None"
        job.start_time, job.end_time, job.exit_code = now, None, None
        seq = self._run_seq.get(job.job_id, 0) + 1
        self._run_seq[job.job_id] = seq
        run = job.time_limit * 60 if job.duration is None else min(job.duration, job.time_limit * 60)
        heapq.heappush(self._ends, (now + run, job.job_id, seq))

    def _release(self, job: SimJob) -> None:
        for name in job.nodes:
            node = self.nodes[name]
            node.owners = [None if o == job.job_id else o for o in node.owners]
            node.cpu_alloc.pop(job.job_id, None)
            node.mem_alloc.pop(job.job_id, None)
        self._dirty = True

    def finish(self, job: SimJob, state: str, now: int, exit_code: int | None = 0,
               reason: str = "None") -> None:
        """End ``job`` (running or pending) as ``state``; squeue keeps it MinJobAge."""
        if job.state == RUNNING:
            self._release(job)
        elif job.state == PENDING:
            self._unqueue(job)
        job.state, job.reason, job.exit_code = state, reason, exit_code
        job.end_time = now
        job.gone_at = now + MIN_JOB_AGE
        self._gone.append((job.gone_at, job.job_id))
        self._done_ok[job.job_id] = state == "COMPLETED"

    def requeue(self, job: SimJob, now: int) -> None:
        """Put a running or finished job back in the queue, as ``scontrol requeue``."""
        if job.state == RUNNING:
            self._release(job)
        job.state_flags.add("REQUEUED")
        job.nodes, job.gpu_idx = [], {}
        job.start_time = job.end_time = job.exit_code = job.gone_at = None
        job.begin_time = now + 60  # Slurm delays a requeued job's start (BeginTime)
        job.reason = "BeginTime"
        self.submit(job)

    # -- placement -----------------------------------------------------------
    def fits(self, node: SimNode, job: SimJob) -> bool:
        return (
            node.available
            and len(node.free_gpus()) >= job.gpus_per_node
            and node.free_cpus() >= job.cpus_per_node
        )

    def place(self, job: SimJob, pool: list[SimNode] | None = None) -> list[str] | None:
        """Nodes for ``job`` now, preferring one leaf switch; None if it does not fit.
        ``pool``: the nodes worth looking at (default: the whole partition)."""
        if job.req_nodes:
            pool = [self.nodes[n] for n in job.req_nodes]
        elif pool is None:
            pool = [self.nodes[n] for n in self.partitions[job.partition].nodes]
        cands = [n for n in pool if self.fits(n, job) and n.name not in job.excluded]
        if len(cands) < job.node_count:
            return None
        if job.req_nodes:
            return [n.name for n in cands[: job.node_count]]
        if job.node_count == 1:
            # Best fit: fill partly used nodes first and keep whole nodes for big jobs.
            best = min(cands, key=lambda n: len(n.free_gpus()))
            return [best.name]
        by_leaf: dict[str, list[SimNode]] = {}
        for n in cands:
            by_leaf.setdefault(n.leaf, []).append(n)
        fitting = [grp for grp in by_leaf.values() if len(grp) >= job.node_count]
        if fitting:
            grp = min(fitting, key=len)
            return [n.name for n in grp[: job.node_count]]
        return [n.name for n in cands[: job.node_count]]

    # -- scheduling ----------------------------------------------------------
    def schedule(self, now: int) -> None:
        """One pass over the top of the queue: start what fits, give reasons to the rest."""
        self._dirty = False
        usage = self._gpu_usage()
        blocked: set[str] = set()
        pools: dict[str, list[SimNode]] = {}
        for _key in list(self._pending[:QUEUE_DEPTH]):
            job = self.jobs[_key[2]]
            if job.is_array_remainder:
                self._schedule_array(job, now, blocked)
                continue
            reason = self._blocker(job, now, usage)
            if reason is None and job.partition in blocked and job.time_limit > BACKFILL_MAX:
                reason = "Priority"
            nodes = self.place(job, self._pool(pools, job.partition)) if reason is None else None
            if reason is None and nodes is None:
                reason = "Priority" if job.partition in blocked else "Resources"
                blocked.add(job.partition)
            if reason is not None:
                job.reason = reason
                continue
            self.start(job, nodes, now)
            if job.partition == QOS_PARTITION and job.qos == "normal":
                usage[job.user] = usage.get(job.user, 0) + job.gpus_per_node * job.node_count

    def _pool(self, pools: dict[str, list[SimNode]], partition: str) -> list[SimNode]:
        """Nodes of ``partition`` with anything free, computed once per pass: on a
        full 10,000-node cluster that is a short list."""
        if partition not in pools:
            pools[partition] = [
                n for n in (self.nodes[name] for name in self.partitions[partition].nodes)
                if n.available and n.free_cpus() > 0
            ]
        return pools[partition]

    def _gpu_usage(self) -> dict[str, int]:
        usage: dict[str, int] = {}
        for node in self.nodes.values():
            if QOS_PARTITION not in node.partitions:
                continue
            for owner in node.owners:
                job = self.jobs.get(owner) if owner is not None else None
                if job is not None and job.partition == QOS_PARTITION and job.qos == "normal":
                    usage[job.user] = usage.get(job.user, 0) + 1
        return usage

    def _blocker(self, job: SimJob, now: int, usage: dict[str, int]) -> str | None:
        """Slurm's pending reason for ``job``, or None when only resources matter."""
        if job.held:
            return "JobHeldAdmin" if job.held == "admin" else "JobHeldUser"
        if job.depends_on is not None:
            dep = self.jobs.get(job.depends_on)
            if dep is not None and dep.state not in FINISHED_STATES:
                return "Dependency"
            if not self._done_ok.get(job.depends_on, False):
                return "DependencyNeverSatisfied"
        if job.begin_time is not None and now < job.begin_time:
            return "BeginTime"
        bad = [n for n in job.req_nodes if not self.nodes[n].available]
        if bad:
            return f"ReqNodeNotAvail, UnavailableNodes:{collapse(bad)}"
        want = job.gpus_per_node * job.node_count
        if job.qos == "normal" and job.partition == QOS_PARTITION and usage.get(job.user, 0) + want > QOS_GPUS_PER_USER:
            return "QOSMaxGPUPerUser"
        return None

    def _schedule_array(self, rem: SimJob, now: int, blocked: set[str]) -> None:
        """Start array tasks while the ``%N`` limit and the resources allow."""
        while rem.array_pending:
            running = sum(
                1 for j in self.jobs.values()
                if j.array_job_id == rem.array_job_id and j.state == RUNNING
            )
            if rem.held:
                rem.reason = "JobHeldAdmin" if rem.held == "admin" else "JobHeldUser"
                return
            if rem.array_max_running and running >= rem.array_max_running:
                rem.reason = "JobArrayTaskLimit"
                return
            nodes = None if rem.partition in blocked else self.place(rem)
            if nodes is None:
                rem.reason = "Priority" if rem.partition in blocked else "Resources"
                return
            self.start(self._next_task(rem), nodes, now)

    def _next_task(self, rem: SimJob) -> SimJob:
        """The next array task as a job of its own; the last one keeps the array's id."""
        task = rem.array_pending.pop(0)
        rem.touch()
        # Per-task randomness from a string seed, so it never shifts the main generator.
        trng = random.Random(f"{rem.array_job_id}-{task}")
        duration = trng.randint(20, 40) * 60
        if not rem.array_pending:
            rem.array_task_id, rem.duration = task, duration
            rem.stdout = rem.stdout.replace("%a", str(task))
            return rem
        job = SimJob(
            job_id=self.new_id(), name=rem.name, user=rem.user, account=rem.account,
            partition=rem.partition, node_count=rem.node_count,
            gpus_per_node=rem.gpus_per_node, cpus_per_node=rem.cpus_per_node,
            time_limit=rem.time_limit, submit_time=rem.submit_time, duration=duration,
            priority=rem.priority, array_job_id=rem.array_job_id, array_task_id=task,
            work_dir=rem.work_dir, command=rem.command,
            stdout=rem.stdout.replace("%a", str(task)),
        )
        self.jobs[job.job_id] = job
        self._queue(job)  # start() takes it off again
        return job
