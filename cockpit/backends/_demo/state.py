"""Mutable state of the simulated cluster, and its conversion to the frozen models.

The simulation mutates these plain objects; ``node_model``/``job_model`` turn
them into :mod:`cockpit.models` objects at fetch time. Keeping the state plain
and mutable is what lets actions (cancel, drain, resume, hold ...) be a few
lines each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cockpit.models import GpuGroup, Job, JobGpus, Node, SharedGres

GPU_TYPE = "h100"
CPUS_PER_NODE = 224  # 2 x 56 cores x 2 threads, as on an HGX H100 host
MEMORY_MB = 2_063_937  # 2 TiB minus what the OS keeps, as slurmd reports it
FEATURES = ("h100", "nvlink", "ib-ndr400")
# The one MIG node's slices: each of its last ``mig_gpus`` GPUs split into seven
# 1g.10gb (as the H100 80GB in tests/data/slurm-gres/stackhpc-*), and the one
# shard node's shards per GPU.
MIG_PROFILE, MIG_PER_GPU, SHARDS_PER_GPU = "1g.10gb", 7, 8

# Slurm keeps finished jobs in squeue for MinJobAge (300 s by default).
MIN_JOB_AGE = 300

PENDING, RUNNING = "PENDING", "RUNNING"
FINISHED_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"})


@dataclass
class SimNode:
    name: str
    partitions: tuple[str, ...]
    gpus: int
    leaf: str
    boot_time: int
    owners: list[int | None] = field(default_factory=list)  # GPU index -> job id
    cpu_alloc: dict[int, int] = field(default_factory=dict)  # job id -> CPUs
    mem_alloc: dict[int, int] = field(default_factory=dict)  # job id -> MB
    drain: bool = False
    down: bool = False
    not_responding: bool = False
    reason: str | None = None
    reason_user: str | None = None
    reason_time: int | None = None
    reboot: tuple[str, int] | None = None  # scontrol reboot ASAP: (nextstate, when asked)
    mig_gpus: int = 0  # the last GPUs split into MIG slices: no job is given them whole
    shards: int = 0  # shard GRES beside the GPUs (no simulated job asks for shards)

    def __post_init__(self) -> None:
        if not self.owners:
            self.owners = [None] * self.gpus

    @property
    def available(self) -> bool:
        """May the scheduler place new work here?"""
        return not (self.drain or self.down)

    @property
    def whole_gpus(self) -> int:
        return self.gpus - self.mig_gpus

    def free_gpus(self) -> list[int]:
        return [i for i, owner in enumerate(self.owners) if owner is None and i < self.whole_gpus]

    def free_cpus(self) -> int:
        return CPUS_PER_NODE - sum(self.cpu_alloc.values())


@dataclass
class SimJob:
    job_id: int
    name: str
    user: str
    account: str
    partition: str
    node_count: int
    gpus_per_node: int
    cpus_per_node: int
    time_limit: int  # minutes
    submit_time: int
    duration: int | None = None  # planned run time in seconds; None = until the limit
    outcome: str = "COMPLETED"  # what the job ends as when it reaches its duration
    exit_code: int | None = None
    state: str = PENDING
    state_flags: set[str] = field(default_factory=set)
    reason: str = "None"
    nodes: list[str] = field(default_factory=list)
    gpu_idx: dict[str, tuple[int, ...]] = field(default_factory=dict)
    start_time: int | None = None
    end_time: int | None = None
    held: str | None = None  # None, "user" or "admin"
    priority: int = 10_000
    qos: str = "normal"  # only "normal" is bound by the per-user GPU limit
    begin_time: int | None = None
    depends_on: int | None = None
    req_nodes: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()  # ExcNodeList: never placed there
    array_job_id: int | None = None
    array_task_id: int | None = None
    array_pending: list[int] = field(default_factory=list)  # tasks not started (remainder record)
    array_max_running: int = 0
    het_job_id: int | None = None
    het_offset: int | None = None
    work_dir: str = ""
    command: str = ""
    stdout: str = ""
    script: str = ""  # the batch script of a job submitted to the demo (sbatch on stdin)
    gone_at: int | None = None  # when squeue stops listing it (MinJobAge)
    _model: Job | None = field(default=None, repr=False, compare=False)

    def __setattr__(self, name: str, value: object) -> None:
        # Any change drops the cached model, so a snapshot of 100k jobs rebuilds
        # only the few that changed. In-place edits must call ``touch()``.
        object.__setattr__(self, name, value)
        if name != "_model":
            object.__setattr__(self, "_model", None)

    def touch(self) -> None:
        self._model = None

    @property
    def mem_per_node(self) -> int:
        return max(self.gpus_per_node, 1) * 200_000 if self.gpus_per_node else 64_000

    @property
    def is_array_remainder(self) -> bool:
        return self.array_job_id is not None and self.array_task_id is None

    def array_task_string(self) -> str | None:
        """``4-31%4`` for the pending remainder of an array job."""
        if not self.is_array_remainder or not self.array_pending:
            return None
        tasks = self.array_pending
        ranges: list[str] = []
        lo = prev = tasks[0]
        for t in tasks[1:] + [None]:
            if t is not None and t == prev + 1:
                prev = t
                continue
            ranges.append(str(lo) if lo == prev else f"{lo}-{prev}")
            if t is not None:
                lo = prev = t
        limit = f"%{self.array_max_running}" if self.array_max_running else ""
        return ",".join(ranges) + limit


def node_model(n: SimNode) -> Node:
    """The frozen Node an operator sees for this simulated node."""
    alloc_cpus = sum(n.cpu_alloc.values())
    used = tuple(i for i, owner in enumerate(n.owners) if owner is not None)
    flags: set[str] = set()
    if n.drain:
        flags.add("drain")
    if n.not_responding:
        flags.add("not_responding")
    if n.reboot is not None:
        flags.add("reboot_requested")
    if n.down:
        state = "down"
    elif alloc_cpus == 0 and not used:
        state = "idle"
    elif alloc_cpus >= CPUS_PER_NODE or len(used) == n.whole_gpus:
        state = "allocated"
    else:
        state = "mixed"
    return Node(
        name=n.name,
        state=state,
        flags=frozenset(flags),
        reason=n.reason,
        reason_user=n.reason_user,
        reason_time=n.reason_time,
        cpus=CPUS_PER_NODE,
        alloc_cpus=alloc_cpus,
        memory_mb=MEMORY_MB,
        alloc_memory_mb=sum(n.mem_alloc.values()),
        partitions=n.partitions,
        gpus=(GpuGroup(type=GPU_TYPE, count=n.whole_gpus, alloc_indexes=used),),
        mig=(GpuGroup(type=MIG_PROFILE, count=n.mig_gpus * MIG_PER_GPU),) if n.mig_gpus else (),
        sharing=(SharedGres("shard", GPU_TYPE, n.shards, used=0),) if n.shards else (),
        address=n.name,  # Slurm's default NodeAddr is the node name
        features=FEATURES,
        boot_time=n.boot_time,
    )


def job_model(j: SimJob) -> Job:
    """The frozen Job squeue would show for this simulated job (cached until it changes)."""
    if j._model is None:
        j._model = _build_job_model(j)
    return j._model


def _build_job_model(j: SimJob) -> Job:
    gpus = tuple(
        JobGpus(node=node, type=GPU_TYPE, count=len(j.gpu_idx[node]), indexes=j.gpu_idx[node])
        for node in j.nodes
        if j.gpu_idx.get(node)
    )
    end = j.end_time
    if j.state == RUNNING and j.start_time is not None:
        end = j.start_time + j.time_limit * 60  # Slurm shows the expected end
    return Job(
        job_id=j.job_id,
        name=j.name,
        user=j.user,
        account=j.account,
        partition=j.partition,
        state=j.state,
        state_flags=frozenset(j.state_flags),
        reason="" if j.reason == "None" else j.reason,
        nodes=tuple(j.nodes),
        node_count=j.node_count,
        gpus=gpus,
        gpus_per_node=j.gpus_per_node,
        gpu_type=GPU_TYPE if j.gpus_per_node else None,
        array_job_id=j.array_job_id,
        array_task_id=j.array_task_id,
        array_task_string=j.array_task_string(),
        het_job_id=j.het_job_id,
        het_job_offset=j.het_offset,
        submit_time=j.submit_time,
        start_time=j.start_time,
        end_time=end,
        time_limit=j.time_limit,
        command=j.command,
        work_dir=j.work_dir,
        stdout=j.stdout,
        stderr=j.stdout,  # Slurm's default: stderr goes to the stdout file
        exit_code=j.exit_code,
        cpus=j.cpus_per_node * j.node_count,
        held=j.held is not None,
    )
