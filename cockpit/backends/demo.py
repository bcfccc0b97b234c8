"""The demo backend: an embedded simulated GPU cluster, no Slurm needed.

About 64 nodes x 8 H100 in three partitions under a leaf/spine tree, with
jobs that start and finish as the clock moves, a job that hangs, a node
drained for an Xid, a down node, every common pending reason, an array job
and a heterogeneous job. Everything it returns is marked simulated.

The simulation is deterministic: the same seed and the same clock readings
give the same snapshots, so a frozen clock makes the TUI's snapshot tests
stable. Actions (cancel, drain, resume, hold, release, requeue, reboot) change
the simulated state and fail with Slurm's own words for unknown ids. Batch
scripts submitted to it become simulated jobs (_demo/batch.py), and its probe
runner answers read-only commands from the simulated nodes (_demo/nodes.py):
nothing the demo does runs a program on this machine.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from cockpit.backends._demo import scenario
from cockpit.backends._demo.admin import DemoAdmin
from cockpit.backends._demo.batch import Submissions
from cockpit.backends._demo.files import DemoFiles
from cockpit.backends._demo.state import job_model, node_model
from cockpit.backends.base import Capabilities
from cockpit.errors import CommandFailed
from cockpit.hostlist import collapse
from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology

SLURM_VERSION = "24.11.5"
REBOOT_S = 180  # seconds a node takes to reboot once idle


class DemoBackend(DemoAdmin):
    """Backend protocol over a simulated cluster (plus the admin actions of DemoAdmin)."""

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
        self._files = DemoFiles(self)  # the shared filesystem: job outputs
        self._batch = Submissions(self)  # jobs submitted with submit_batch
        self._caps: Capabilities | None = None

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
        """The node drained for Xid 79; its kernel log and nvidia-smi show the lost GPU."""
        return self._sc.xid_node

    @property
    def xid_gpu(self) -> int:
        """The index of the xid node's GPU that fell off the bus."""
        return self._sc.xid_gpu

    @property
    def slow_nccl_node(self) -> str:
        """The node at ~30% of its peers' NCCL bandwidth (debug partition, dgx051 of 64)."""
        return self._sc.slow_nccl_node

    @property
    def slow_storage_node(self) -> str:
        """The node whose local NVMe RAID0 is slow (one drive at PCIe x1; dgx003 of 64):
        the pre-flight storage check names it (_demo/storage.py)."""
        return self._sc.slow_storage_node

    @property
    def throttled_node(self) -> str:
        """The node whose GPUs 5 and 6 throttle under full load (a failed fan; dgx002 of 64):
        the pre-flight burn-in flags it and proposes a drain (_demo/burnin.py)."""
        return self._sc.throttled_node

    @property
    def straggler_node(self) -> str:
        """The hung job's node whose rank is stuck outside the all_reduce."""
        return self._sc.straggler_node

    @property
    def straggler_rank(self) -> int:
        return self._sc.straggler_rank

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
        self._reboots(int(now))
        return int(now)

    def _reboots(self, now: int) -> None:
        """Nodes asked to reboot come back REBOOT_S after they were asked, once idle."""
        for node in self._sim.nodes.values():
            if node.reboot is None or node.cpu_alloc or now < node.reboot[1] + REBOOT_S:
                continue
            nextstate, asked = node.reboot
            node.reboot, node.boot_time = None, asked + REBOOT_S
            if nextstate == "down":
                node.down = True
            else:
                node.drain = node.down = node.not_responding = False
                node.reason = node.reason_user = node.reason_time = None
            self._sim.schedule(now)

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
        self._reboots(int(fetched))
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

    # -- what else it can do: accounting and the scheduler's views, simulated --------
    def capabilities(self) -> Capabilities:
        """Accounting and scheduling (_demo/accounting.py), job inspection, the gate's
        executor and probes: all answered from the simulated cluster."""
        if self._caps is None:
            from cockpit.backends._demo.accounting import DemoOffers

            offers = DemoOffers(self)
            self._caps = Capabilities(accounting=offers, scheduling=offers, inspection=self, lookup=self,
                                      executor=self, probes=self, simulated=True)
        return self._caps

    async def fetch_job(self, job_id: int | str) -> Job | None:
        """One job (``123`` or an array task ``123_4``); None once squeue forgot it."""
        self._now()
        try:
            return job_model(self._job(["squeue", "-j", str(job_id)], job_id, ""))
        except CommandFailed:
            return None

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        """(state, reason) as squeue prints them; ("GONE", "") once forgotten. A job
        submitted to the demo moves on at each look (see _demo/batch.py)."""
        now = self._now()
        text = str(job_id).strip()
        got = self._batch.state(int(text), now) if text.isdecimal() else None
        if got is not None:
            return got
        try:
            job = self._job(["squeue", "-j", text], text, "")
        except CommandFailed:
            return "GONE", ""
        return job.state, "" if job.reason == "None" else job.reason

    async def job_excluded_nodes(self, job_id: int | str) -> str:
        """The job's ExcNodeList as a hostlist ("" for none or an unknown job)."""
        try:
            return collapse(self._job(["squeue", "-j", str(job_id)], job_id, "").excluded)
        except CommandFailed:
            return ""

    def _nodes(self) -> tuple[Node, ...]:
        return tuple(node_model(n) for n in self._sim.nodes.values())

    def _jobs(self) -> tuple[Job, ...]:
        return tuple(job_model(self._sim.jobs[k]) for k in sorted(self._sim.jobs))
