"""The demo backend: an embedded simulated GPU cluster, no Slurm needed.

About 64 nodes x 8 H100 in three partitions under a leaf/spine tree, with
jobs that start and finish as the clock moves, a job that hangs, a node
drained for an Xid, a down node, every common pending reason, an array job
and a heterogeneous job. Everything it returns is marked simulated.

The simulation is deterministic: the same seed and the same clock readings
give the same snapshots, so a frozen clock makes the TUI's snapshot tests
stable. Actions (cancel, drain, resume, hold, release, requeue) change the
simulated state and fail with Slurm's own words for unknown ids.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from cockpit.backends._demo import scenario
from cockpit.backends._demo.state import FINISHED_STATES, PENDING, RUNNING, SimJob, SimNode, job_model, node_model
from cockpit.backends.slurm_text import duration_minutes
from cockpit.errors import CommandFailed, ParseError
from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology

SLURM_VERSION = "24.11.5"


class DemoBackend:
    """Backend protocol over a simulated cluster (plus simple admin actions)."""

    name = "demo"
    description = "demo (simulated cluster)"
    simulated = True
    cannot_act = ""

    def __init__(
        self,
        seed: int = 7,
        clock: Callable[[], float] | None = None,
        nodes: int = 64,
        gpus_per_node: int = 8,
        operator: str = "operator",
    ) -> None:
        """Build the cluster as it is at ``clock()``. Raises UsageError for a bad size."""
        self.seed = seed
        self.clock = clock or time.time
        self.operator = operator  # the user name actions are recorded under
        self._sc = scenario.build(seed, int(self.clock()), nodes, gpus_per_node)
        self._sim = self._sc.sim

    # -- what acts and probes for the demo: the simulated cluster, never this machine --
    def action_executor(self, config: object = None):
        from cockpit.backends._demo.executor import DemoExecutor

        return DemoExecutor(self)

    def probe_runner(self, config: object = None):
        from cockpit.backends._demo.probes import DemoProbes

        return DemoProbes(self)

    # -- facts about the scenario (for tests, runbooks and the tour) ----------
    @property
    def hung_job_id(self) -> int:
        """The job that runs but stopped writing output (``llama-70b-pretrain``)."""
        return self._sc.hung_job_id

    @property
    def hung_since(self) -> int:
        """Epoch time of the hung job's last output line."""
        return self._sc.hung_since

    @property
    def xid_node(self) -> str:
        return self._sc.xid_node

    @property
    def down_node(self) -> str:
        return self._sc.down_node

    @property
    def array_job_id(self) -> int:
        return self._sc.array_job_id

    @property
    def het_job_id(self) -> int:
        return self._sc.het_job_id

    @classmethod
    def scale(cls, jobs: int = 100_000, nodes: int = 10_000, seed: int = 7,
              clock: Callable[[], float] | None = None) -> DemoBackend:
        """A large cluster for benchmarks: ``nodes`` nodes and about ``jobs`` jobs,
        the excess queued as pending (Slurm only looks at the top of the queue)."""
        backend = cls(seed=seed, clock=clock, nodes=nodes)
        sim = backend._sim
        rng = random.Random(seed + 1)
        now = sim.time
        extra = []
        for _ in range(max(0, jobs - len(sim.jobs))):
            job = scenario.make_job(sim, rng, rng.choice(scenario.TEMPLATES), now - rng.randint(0, 86_400), 8)
            job.reason = "Priority"
            extra.append(job)
        sim.bulk_submit(extra)
        return backend

    # -- Backend protocol ----------------------------------------------------
    def _now(self) -> int:
        now = self.clock()
        self._sim.advance(now)
        return int(now)

    async def version(self) -> str:
        return SLURM_VERSION

    async def fetch_nodes(self) -> tuple[Node, ...]:
        self._now()
        return self._nodes()

    async def fetch_jobs(self) -> tuple[Job, ...]:
        self._now()
        return self._jobs()

    async def fetch_partitions(self) -> tuple[Partition, ...]:
        return tuple(self._sim.partitions.values())

    async def fetch_topology(self) -> Topology:
        return self._sc.topology

    async def snapshot(self) -> ClusterSnapshot:
        fetched = self.clock()
        self._sim.advance(fetched)
        return ClusterSnapshot(
            nodes=self._nodes(),
            partitions=tuple(self._sim.partitions.values()),
            jobs=self._jobs(),
            topology=self._sc.topology,
            fetched_at=fetched,
            source=f"demo: simulated cluster (seed {self.seed})",
            slurm_version=SLURM_VERSION,
            simulated=True,
        )

    async def close(self) -> None:
        return None

    def _nodes(self) -> tuple[Node, ...]:
        return tuple(node_model(n) for n in self._sim.nodes.values())

    def _jobs(self) -> tuple[Job, ...]:
        return tuple(job_model(self._sim.jobs[k]) for k in sorted(self._sim.jobs))

    # -- actions -------------------------------------------------------------
    async def cancel_job(self, job_id: int | str) -> None:
        """``scancel``: the job (and its array tasks / het components) ends CANCELLED.
        Raises CommandFailed for an unknown or finished job."""
        argv = ["scancel", str(job_id)]
        now = self._now()
        job = self._job(argv, job_id, "scancel: error: Kill job error on job id {}: ")
        if job.state in FINISHED_STATES:
            raise CommandFailed(argv, 1, f"scancel: error: Kill job error on job id {job_id}: "
                                         "Job/step already completing or completed")
        for target in self._family(job):
            if target.state in (PENDING, RUNNING):
                self._sim.finish(target, "CANCELLED", now, exit_code=0)
        self._sim.schedule(now)

    async def hold_job(self, job_id: int | str) -> None:
        """``scontrol hold``. Raises CommandFailed unless the job is pending."""
        argv = ["scontrol", "hold", str(job_id)]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        job.held, job.reason = "admin", "JobHeldAdmin"

    async def release_job(self, job_id: int | str) -> None:
        """``scontrol release``. Raises CommandFailed unless the job is pending."""
        argv = ["scontrol", "release", str(job_id)]
        now = self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        job.held, job.reason = None, "None"
        self._sim.schedule(now)

    async def requeue_job(self, job_id: int | str) -> None:
        """``scontrol requeue``: a running or finished job goes back to the queue.
        Raises CommandFailed for an unknown or pending job."""
        argv = ["scontrol", "requeue", str(job_id)]
        now = self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state == PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is pending execution for job {job_id}")
        for target in self._family(job):
            if target.state != PENDING:
                self._sim.requeue(target, now)
        self._sim.schedule(now)

    async def drain_node(self, name: str, reason: str) -> None:
        """``scontrol update NodeName=.. State=DRAIN Reason=..``. Running jobs go on;
        nothing new starts there. Raises CommandFailed for an unknown node or no reason."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}"]
        now = self._now()
        node = self._node(argv, name)
        if not reason or not reason.strip():
            raise CommandFailed(argv, 1, "You must specify a reason when DOWNING or DRAINING a node. Request denied")
        node.drain, node.reason, node.reason_user, node.reason_time = True, reason, self.operator, now

    async def resume_node(self, name: str) -> None:
        """``scontrol update NodeName=.. State=RESUME``. Raises CommandFailed for an
        unknown node or one that is neither drained nor down."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=RESUME"]
        now = self._now()
        node = self._node(argv, name)
        if not (node.drain or node.down):
            raise CommandFailed(argv, 1, "slurm_update error: Invalid node state specified")
        node.drain = node.down = node.not_responding = False
        node.reason = node.reason_user = node.reason_time = None
        self._sim.schedule(now)

    async def requeue_hold_job(self, job_id: int | str) -> None:
        """``scontrol requeuehold``: requeue, then hold. Raises CommandFailed as requeue_job."""
        await self.requeue_job(job_id)
        for target in self._family(self._job([], job_id, "")):
            target.held, target.reason = "admin", "JobHeldAdmin"

    async def signal_job(self, job_id: int | str, signal: str = "TERM") -> None:
        """``scancel --signal``: simulated processes ignore it. Raises CommandFailed
        for an unknown or finished job."""
        argv = ["scancel", f"--signal={signal}", str(job_id)]
        self._now()
        job = self._job(argv, job_id, "scancel: error: Kill job error on job id {}: ")
        if job.state in FINISHED_STATES:
            raise CommandFailed(argv, 1, f"scancel: error: Kill job error on job id {job_id}: "
                                         "Job/step already completing or completed")

    async def undrain_node(self, name: str) -> None:
        """``State=UNDRAIN``: clear the drain flag only. Raises CommandFailed for an
        unknown node or one that is not drained."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=UNDRAIN"]
        now = self._now()
        node = self._node(argv, name)
        if not node.drain:
            raise CommandFailed(argv, 1, "slurm_update error: Invalid node state specified")
        node.drain = False
        if not node.down:
            node.reason = node.reason_user = node.reason_time = None
        self._sim.schedule(now)

    async def set_node_down(self, name: str, reason: str) -> None:
        """``State=DOWN Reason=..``: jobs on the node end NODE_FAIL, as in Slurm.
        Raises CommandFailed for an unknown node or no reason."""
        argv = ["scontrol", "update", f"NodeName={name}", "State=DOWN", f"Reason={reason}"]
        now = self._now()
        node = self._node(argv, name)
        if not reason or not reason.strip():
            raise CommandFailed(argv, 1, "You must specify a reason when DOWNING or DRAINING a node. Request denied")
        for job_id in {j for j in node.owners if j is not None}:
            job = self._sim.jobs.get(job_id)
            if job is not None and job.state == RUNNING:
                self._sim.finish(job, "NODE_FAIL", now, exit_code=1)
        node.down, node.reason, node.reason_user, node.reason_time = True, reason, self.operator, now
        self._sim.schedule(now)

    async def set_time_limit(self, job_id: int | str, time_limit: str) -> None:
        """``scontrol update JobId=.. TimeLimit=..`` (Slurm's time syntax).
        Raises CommandFailed for an unknown or finished job or a bad limit."""
        argv = ["scontrol", "update", f"JobId={job_id}", f"TimeLimit={time_limit}"]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state in FINISHED_STATES:
            raise CommandFailed(argv, 1, f"scontrol: error: Job has already finished for job {job_id}")
        try:
            minutes = duration_minutes(str(time_limit))
        except ParseError:
            raise CommandFailed(argv, 1, f"scontrol: error: Invalid TimeLimit value: {time_limit}") from None
        job.time_limit = minutes if minutes is not None else 0

    async def top_job(self, job_id: int | str) -> None:
        """``scontrol top``: first among its user's pending jobs. Raises CommandFailed
        unless the job is pending."""
        argv = ["scontrol", "top", str(job_id)]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        mine = [j.priority for j in self._sim.jobs.values() if j.user == job.user and j.state == PENDING]
        job.priority = max(mine) + 1

    async def nice_job(self, job_id: int | str, nice: int) -> None:
        """``scontrol update JobId=.. Nice=N``: lower the priority by N. Raises
        CommandFailed unless the job is pending."""
        argv = ["scontrol", "update", f"JobId={job_id}", f"Nice={nice}"]
        self._now()
        job = self._job(argv, job_id, "scontrol: error: ")
        if job.state != PENDING:
            raise CommandFailed(argv, 1, f"scontrol: error: Job is no longer pending execution for job {job_id}")
        job.priority = max(0, job.priority - int(nice))

    # -- lookups -------------------------------------------------------------
    def _job(self, argv: list[str], job_id: int | str, prefix: str) -> SimJob:
        """The job for ``123`` or an array task ``123_4``; CommandFailed if unknown."""
        text = str(job_id).strip()
        head, _, task = text.partition("_")
        job = None
        if head.isdecimal() and not task:
            job = self._sim.jobs.get(int(head))
        elif head.isdecimal() and task.isdecimal():
            job = next((j for j in self._sim.jobs.values()
                        if j.array_job_id == int(head) and j.array_task_id == int(task)), None)
        if job is None:
            raise CommandFailed(argv, 1, prefix.format(text) + "Invalid job id specified")
        return job

    def _family(self, job: SimJob) -> list[SimJob]:
        """What Slurm acts on for this id: a whole array for the array's id, every
        component for a het leader, else the job alone."""
        if job.array_job_id == job.job_id or (job.het_job_id == job.job_id and job.het_offset == 0):
            key = "array_job_id" if job.array_job_id == job.job_id else "het_job_id"
            return [j for j in self._sim.jobs.values() if getattr(j, key) == job.job_id]
        return [job]

    def _node(self, argv: list[str], name: str) -> SimNode:
        node = self._sim.nodes.get(name)
        if node is None:
            raise CommandFailed(argv, 1, "slurm_update error: Invalid node name specified")
        return node
