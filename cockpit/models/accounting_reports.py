"""Frozen results that cockpit derives from accounting: a node's history, why a
job waits, the GPU utilisation report, a finished job's efficiency. Built by
cockpit.core (no I/O here); shown by the headless commands and the TUI, and
printed as JSON (docs/accounting-json.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cockpit.models.accounting import JobRecord, Limit, NodeEvent, PriorityFactors, QueryCost, Reservation


@dataclass(frozen=True, slots=True)
class NodeHistory:
    node: str
    start: int
    end: int
    events: tuple[NodeEvent, ...]  # oldest first
    recent_jobs: tuple[JobRecord, ...]  # newest first, at most ``last_jobs``
    summary: str  # "drained 3x in 14 d, 2x Xid 79, 4 of the last 10 jobs failed"
    flapping: bool
    counts: dict[str, int] = field(default_factory=dict)  # drain/down/reboot -> times
    xids: dict[int, int] = field(default_factory=dict)  # Xid -> times named in a reason
    failed_jobs: int = 0
    costs: tuple[QueryCost, ...] = ()


@dataclass(frozen=True, slots=True)
class Measure:
    """One efficiency figure and where it came from (or why there is none)."""

    name: str  # cpu, memory, gpu
    percent: float | None
    used: str  # "1.2 of 16 CPU-h", "" when not measured
    source: str


@dataclass(frozen=True, slots=True)
class Efficiency:
    job_id: str
    measures: tuple[Measure, ...]


@dataclass(frozen=True, slots=True)
class LimitFinding:
    """A set limit that applies to the job, with the usage that counts against it."""

    scope: str  # "QOS gpu8", "association root/research"
    per: str  # user root, account root, QOS, job, association
    limit: Limit
    asks: float | None  # what this job asks of the same resource
    blocks: bool  # usage + asks > limit, or Slurm's reason names it
    text: str


@dataclass(frozen=True, slots=True)
class ReservationFinding:
    reservation: Reservation
    nodes: tuple[str, ...]  # the job's candidate nodes it covers
    all_nodes: bool  # it covers every node the job could use
    text: str


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: str  # afterok, afterany, singleton ...
    job_id: str
    state: str  # the other job's state now ("" for singleton)
    fulfilled: bool
    text: str


@dataclass(frozen=True, slots=True)
class FreeBlock:
    """Free GPUs of the requested type in one NVLink domain (node or block) or leaf switch."""

    kind: str  # "leaf switch", "block", "node"
    name: str
    nodes: tuple[str, ...]
    free_gpus: int
    nodes_that_fit: int  # nodes with at least the GPUs per node the job asks for
    fits: bool


@dataclass(frozen=True, slots=True)
class WhyPending:
    job_id: str
    state: str
    reason: str  # Slurm's own
    summary: str  # the main cause in one line
    asks: str  # "1 node x 4 GPUs (h100), time limit 2 h, partition gpu, QOS gpu8"
    priority: PriorityFactors | None = None
    ahead: int | None = None  # pending jobs of the partition with a higher priority
    weights: dict[str, float] = field(default_factory=dict)
    limits: tuple[LimitFinding, ...] = ()
    reservations: tuple[ReservationFinding, ...] = ()
    dependencies: tuple[Dependency, ...] = ()
    free_blocks: tuple[FreeBlock, ...] = ()
    start_estimate: int | None = None
    start_nodes: str = ""
    notes: tuple[str, ...] = ()  # parts that could not be asked, one line each
    costs: tuple[QueryCost, ...] = ()


@dataclass(frozen=True, slots=True)
class UtilRow:
    """GPU-hours of one scope (all, a partition or an account) in one period."""

    scope: str  # "cluster", "partition", "account"
    name: str
    start: int
    end: int
    capacity: float | None  # GPU-hours the scope's nodes could give (None for accounts)
    allocated: float
    idle_in_alloc: float | None  # None: not measured
    drained: float | None
    unallocated: float | None
    jobs: int

    @property
    def utilization(self) -> float | None:
        """Allocated share of the capacity, in percent."""
        return None if not self.capacity else 100.0 * self.allocated / self.capacity


@dataclass(frozen=True, slots=True)
class Utilization:
    start: int
    end: int
    bucket_s: int
    rows: tuple[UtilRow, ...]  # whole window: cluster, partitions, accounts
    trend: tuple[UtilRow, ...]  # per bucket (cluster scope, or the filtered partition/account)
    sources: dict[str, str]  # figure -> where it came from
    jobs: int
    costs: tuple[QueryCost, ...] = ()
    warnings: tuple[str, ...] = ()  # accounting records that could not be read (each left out)
