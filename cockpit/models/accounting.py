"""Frozen dataclasses for what Slurm's accounting knows: finished jobs (sacct),
node events (sacctmgr show event), priority factors (sprio), fair share
(sshare), reservations and the limits with their usage (scontrol show
assoc_mgr), and the cost of each query. No I/O here.

Times are UNIX epoch seconds (int) or None; durations are seconds unless the
name says minutes. TRES maps are ``{"cpu": 2, "mem": 2000, "gres/gpu": 8}``
(memory in MB), read-only by convention.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Finished job states (sacct's words); a history is a query for these.
FINISHED_STATES = (
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE",
)
# The states that count as a failure in a node's record ("4 of the last 10 jobs failed"):
# the job or its node broke. CANCELLED and TIMEOUT are the user's or the limit's doing.
FAILED_STATES = frozenset({"FAILED", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY"})


@dataclass(frozen=True, slots=True)
class QueryCost:
    """What one accounting query cost: shown next to every result."""

    command: str  # the argv, joined for display
    seconds: float
    bytes: int
    records: int
    bounds: tuple[str, ...] = ()  # how it was bounded: "window 1d", "-X", "states 9"

    def describe(self) -> str:
        size = f"{self.bytes / 1e6:.1f} MB" if self.bytes >= 100_000 else f"{self.bytes / 1e3:.1f} kB"
        bounded = f"; bounded by {', '.join(self.bounds)}" if self.bounds else ""
        took = f"{self.seconds:.2f} s" if self.seconds >= 1 else f"{self.seconds * 1000:.0f} ms"
        return f"{self.command}: {took}, {self.records} record(s), {size}{bounded}"


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step of a finished job (``batch``, ``extern``, ``0`` ...)."""

    step_id: str
    name: str = ""
    state: str = ""
    exit_code: int | None = None
    exit_signal: int | None = None
    elapsed_s: int = 0
    total_cpu_s: float | None = None  # user + system CPU time of the step's tasks
    tres_in_max: dict[str, float] = field(default_factory=dict)  # TRESUsageInMax (mem = peak RSS, MB)
    tres_in_ave: dict[str, float] = field(default_factory=dict)  # TRESUsageInAve (gres/gpuutil where recorded)


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job (array task, het component) as accounting recorded it."""

    job_id: str  # display id: 123, 123_4, 123+1
    job_id_raw: int
    name: str = ""
    user: str = ""
    account: str = ""
    partition: str = ""
    qos: str = ""
    state: str = "UNKNOWN"  # primary state: COMPLETED, FAILED, CANCELLED, TIMEOUT ...
    reason: str = ""  # Slurm's last reason for the job (why it waited, or failed)
    exit_code: int | None = None
    exit_signal: int | None = None
    derived_exit_code: int | None = None  # the highest exit code of any step
    submit_time: int | None = None
    start_time: int | None = None
    end_time: int | None = None
    elapsed_s: int = 0
    time_limit: int | None = None  # minutes, None = unlimited
    nodes: tuple[str, ...] = ()
    node_count: int = 0
    alloc_tres: dict[str, float] = field(default_factory=dict)
    req_tres: dict[str, float] = field(default_factory=dict)
    array_job_id: int | None = None
    array_task_id: int | None = None
    steps: tuple[StepRecord, ...] = ()

    @property
    def gpus(self) -> int:
        return int(self.alloc_tres.get("gres/gpu", 0))

    @property
    def cpus(self) -> int:
        return int(self.alloc_tres.get("cpu", 0))

    @property
    def failed(self) -> bool:
        return self.state in FAILED_STATES


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """One entry of ``sacctmgr show event``: a node was down/drained from start to end."""

    node: str
    start: int
    end: int | None  # None: still so
    state: str  # Slurm's state words at the event: DOWN, DRAIN, IDLE+DRAIN, ...
    reason: str = ""
    user: str = ""  # who set it (a name; Slurm prints "root(0)")

    @property
    def kind(self) -> str:
        """drain, down, reboot or other."""
        s = self.state.upper()
        if "REBOOT" in s:
            return "reboot"
        if "DOWN" in s or "FAIL" in s:  # DOWN*+DRAIN: it went down while drained
            return "down"
        if "DRAIN" in s:
            return "drain"
        return "other"


@dataclass(frozen=True, slots=True)
class PriorityFactors:
    """``sprio`` for one pending job: its priority and each weighted factor."""

    job_id: int
    user: str = ""
    partition: str = ""
    priority: float = 0.0
    factors: dict[str, float] = field(default_factory=dict)  # age, fairshare, jobsize, partition, qos, tres, site, assoc, nice


@dataclass(frozen=True, slots=True)
class Share:
    """``sshare``: one association's fair share."""

    account: str
    user: str = ""
    raw_shares: float | None = None
    norm_shares: float | None = None
    raw_usage: float | None = None
    effective_usage: float | None = None
    fairshare: float | None = None


@dataclass(frozen=True, slots=True)
class Reservation:
    """``scontrol show reservation``: one reservation (maintenance windows included)."""

    name: str
    start: int | None = None
    end: int | None = None
    nodes: tuple[str, ...] = ()
    flags: frozenset[str] = frozenset()
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    partition: str = ""
    state: str = ""  # ACTIVE / INACTIVE
    tres: str = ""

    @property
    def is_maintenance(self) -> bool:
        return "MAINT" in self.flags


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit from ``scontrol show assoc_mgr``, with its current usage.

    ``key`` is Slurm's (``MaxTRESPU``, ``GrpTRES``, ``MaxJobsPU`` ...); ``tres`` names
    the resource for TRES limits (``gres/gpu``) and is empty for counts."""

    key: str
    tres: str
    limit: float
    used: float | None = None


@dataclass(frozen=True, slots=True)
class QosLimits:
    """A QOS's limits: its own, and per user/account where Slurm tracks them."""

    name: str
    limits: tuple[Limit, ...] = ()
    per_user: dict[str, tuple[Limit, ...]] = field(default_factory=dict)
    per_account: dict[str, tuple[Limit, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AssocLimits:
    """An association (cluster/account/user[/partition]) with its limits and usage."""

    account: str
    user: str = ""
    partition: str = ""
    limits: tuple[Limit, ...] = ()


@dataclass(frozen=True, slots=True)
class LimitsState:
    """What ``scontrol show assoc_mgr`` said about the QOS and associations asked for."""

    qos: tuple[QosLimits, ...] = ()
    assocs: tuple[AssocLimits, ...] = ()
