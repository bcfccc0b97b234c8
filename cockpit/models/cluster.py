"""Frozen records: Node, Partition, Job, Topology, ClusterSnapshot.

Most are frozen slots dataclasses. The records a site has tens or hundreds of
thousands of (Job and its JobGpus; Node, GpuGroup and SharedGres) are frozen
msgspec Structs with ``gc=False``: they can never be part of a reference cycle
(their fields are strings, numbers, tuples and frozensets), so the cyclic
garbage collector need not track them. At 500k jobs a full collection walked
~2.6 million tracked objects (Job, JobGpus, their frozensets and the rows'
tuples) and froze keys for ~2 s; untracked, it walks the containers only
(bench/bench_gc.py). At 20k nodes, tracked Nodes and GpuGroups were 40k objects
holding 480k references, walked at every thaw (BENCH_BREAKDOWN at 500k: a full
collection after a thaw 100 ms with them, 80 ms without). Use :func:`record_fields` and :func:`record_replace` for either kind.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

def record_fields(obj_or_cls: Any) -> tuple[str, ...]:
    """The field names of a model record (a dataclass or a msgspec Struct), in order."""
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    names = getattr(cls, "__struct_fields__", None)
    return tuple(names) if names is not None else tuple(f.name for f in dataclasses.fields(cls))


def record_replace(obj: Any, **changes: Any) -> Any:
    """A copy of a model record (dataclass or msgspec Struct) with ``changes``."""
    if isinstance(obj, msgspec.Struct):
        return msgspec.structs.replace(obj, **changes)
    return dataclasses.replace(obj, **changes)


# Base node states after normalisation (lower case, Slurm's words).
NODE_BASE_STATES = frozenset(
    {"idle", "allocated", "mixed", "down", "error", "future", "unknown", "completing"}
)
# Flags we keep (lower case). "drain" is the admin flag; "drained"/"draining"
# are derived display states (Slurm: DRAIN+IDLE = drained, DRAIN+ALLOC/MIXED = draining).
NODE_FLAGS = frozenset(
    {
        "drain",
        "not_responding",
        "reboot_requested",
        "reboot_issued",
        "maint",
        "reserved",
        "completing",
        "fail",
        "power_down",
        "powered_down",
        "powering_up",
        "powering_down",
        "planned",
        "invalid",
        "invalid_reg",
        "cloud",
        "dynamic_norm",
        "blocked",
        "resume",
        "undrain",
        "power_save",
        "perfctrs",
    }
)

JOB_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "SUSPENDED",
        "COMPLETING",
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "REQUEUED",
        "RESIZING",
        "REVOKED",
        "SIGNALING",
        "SPECIAL_EXIT",
        "STAGE_OUT",
        "STOPPED",
        "CONFIGURING",
        "UNKNOWN",
    }
)


# The fields of a node or job that matter to an operator: one that could not be
# read is named in the record's ``unknown`` and shown as unknown, while the rest
# of the record stays in the view (issue 21).
UNKNOWN_FIELDS = frozenset({"state", "gpus", "reason"})
UNKNOWN_CELL = "?"


def or_unknown(record: "Node | Job", field: str, shown: str) -> str:
    """``shown``, or ``?`` when the record's ``field`` could not be read."""
    return UNKNOWN_CELL if field in record.unknown else shown


class GpuGroup(msgspec.Struct, frozen=True, gc=False):
    """GPUs of one type on one node: ``gpu:h100:8`` with indexes 0-2 in use."""

    type: str | None
    count: int
    alloc_indexes: tuple[int, ...] = ()
    # GPUs in use where Slurm counts them without indexes (untyped ``gres_used``
    # "gpu:4" in 24.11's restd); None: the indexes are the whole truth.
    used: int | None = None

    @property
    def alloc_count(self) -> int:
        return len(self.alloc_indexes) if self.alloc_indexes or self.used is None else self.used


class SharedGres(msgspec.Struct, frozen=True, gc=False):
    """A GPU-sharing GRES of one type on one node: ``shard:h100:16`` or ``mps:600``.

    Shards and MPS are shares of the node's GPUs, not more GPUs: they are never
    counted in GPU totals."""

    name: str  # "shard" or "mps"
    type: str | None
    total: int
    # in use; None where Slurm's use was not read (a grouped sinfo record of several nodes)
    used: int | None = None


def mig_profile(gtype: str | None) -> str:
    """The MIG profile a GPU type ends in (``nvidia_h100_80gb_hbm3_1g.10gb`` -> ``1g.10gb``), or ""."""
    m = _MIG_PROFILE.search(gtype or "")
    return m.group(1) if m else ""


# MIG device names (NVIDIA's MIG user guide, "MIG Device Names"): [Nc.]Ng.Mgb[+me], alone
# as a type (1g.10gb) or after the GPU's name as AutoDetect=nvml names them
# (nvidia_h100_80gb_hbm3_4g.40gb, tests/data/slurm-gres/stackhpc-*) or sites do (a100l.2g.20gb).
_MIG_PROFILE = re.compile(r"(?:^|[_.\-])((?:\d+c\.)?\d+g\.\d+gb(?:\+me)?)$", re.IGNORECASE)


def _extra_cell(count: int, used: int | None, what: str) -> str:
    return f"+{'?' if used is None else used}/{count} {what}"


class Node(msgspec.Struct, frozen=True, gc=False):
    name: str
    state: str  # one of NODE_BASE_STATES
    flags: frozenset[str] = frozenset()
    reason: str | None = None
    reason_user: str | None = None
    reason_time: int | None = None
    cpus: int = 0
    alloc_cpus: int = 0
    memory_mb: int = 0
    alloc_memory_mb: int = 0
    partitions: tuple[str, ...] = ()
    gpus: tuple[GpuGroup, ...] = ()
    address: str | None = None
    features: tuple[str, ...] = ()
    boot_time: int | None = None
    # Fields that matter (UNKNOWN_FIELDS) that could not be read: the node is
    # shown with them as unknown ("?"), never as 0 GPUs or idle.
    unknown: frozenset[str] = frozenset()
    # Beside the whole GPUs: the shares of them Slurm schedules (shard, mps), and the
    # MIG slices (a GPU type that is a MIG profile, one GpuGroup per type). A MIG
    # slice is not a GPU here: ``gpu_total`` counts whole GPUs (docs/inputs.md).
    sharing: tuple[SharedGres, ...] = ()
    mig: tuple[GpuGroup, ...] = ()

    @property
    def gpu_total(self) -> int:
        return sum(g.count for g in self.gpus)

    @property
    def gpu_alloc(self) -> int:
        return sum(g.alloc_count for g in self.gpus)

    @property
    def mig_total(self) -> int:
        return sum(g.count for g in self.mig)

    @property
    def mig_alloc(self) -> int:
        return sum(g.alloc_count for g in self.mig)

    def shared(self, name: str) -> tuple[int, int | None]:
        """(total, in use) of the sharing GRES ``name`` (``shard``, ``mps``) over its types;
        in use is None when any of them was not read."""
        items = [s for s in self.sharing if s.name == name]
        used = [s.used for s in items]
        return sum(s.total for s in items), (None if None in used else sum(u or 0 for u in used))

    @property
    def gpu_cell(self) -> str:
        """``3/8`` (allocated/total), ``?`` when the node's GPUs could not be read."""
        return UNKNOWN_CELL if "gpus" in self.unknown else f"{self.gpu_alloc}/{self.gpu_total}"

    @property
    def gres_extra(self) -> str:
        """What the node has beside whole GPUs, compact, in use/total: ``+4/16 shard``,
        ``+0/7 1g.10gb``, ``+0/600 mps``; "" without any (or when its GRES were not read)."""
        if "gpus" in self.unknown:
            return ""
        parts = []
        for name in dict.fromkeys(s.name for s in self.sharing):
            total, used = self.shared(name)
            if total:
                parts.append(_extra_cell(total, used, name))
        parts += [_extra_cell(g.count, g.alloc_count, mig_profile(g.type) or g.type or "mig") for g in self.mig]
        return " ".join(parts)

    @property
    def gpu_summary(self) -> str:
        """The GPU cell with what the node shares and slices: ``3/8 +4/16 shard``."""
        extra = self.gres_extra
        return f"{self.gpu_cell} {extra}" if extra else self.gpu_cell

    @property
    def display_state(self) -> str:
        """The word an operator expects: drained, draining, down, idle ..."""
        if "state" in self.unknown:
            return "unknown"
        if self.state == "down":
            return "down"
        if "drain" in self.flags:
            return "draining" if self.state in ("allocated", "mixed", "completing") else "drained"
        return self.state

    @property
    def is_unavailable(self) -> bool:
        # a state that could not be read is never counted as free GPUs
        return self.state in ("down", "error", "future") or "drain" in self.flags or "state" in self.unknown


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: tuple[str, ...] = ()
    state: str = "UP"
    is_default: bool = False
    max_time: int | None = None  # minutes, None = unlimited
    total_cpus: int = 0


class JobGpus(msgspec.Struct, frozen=True, gc=False):
    """GPUs a job holds on one node (from ``gres_detail``/``GRES=...(IDX:..)``)."""

    node: str
    type: str | None
    count: int
    indexes: tuple[int, ...] = ()


def gpus_by_node(gpus: Iterable[JobGpus]) -> dict[str, JobGpus]:
    """A job's GPUs as one JobGpus per node, in Slurm's order. Slurm gives one entry per
    GPU type, so an untyped request on a node with two types (``gpu:a100:4(IDX:0-3)`` and
    ``gpu:1g.10gb:4(IDX:4-7)``) is two entries for one node: a dict by node kept only the
    last one. The merged entry's type joins the distinct types with "+", its count is the
    sum, and its indexes are all of them, sorted (none when an entry holding GPUs names
    none: then Slurm did not say which of the node's GPUs are the job's)."""
    out: dict[str, JobGpus] = {}
    for g in gpus:
        had = out.get(g.node)
        if had is None:
            out[g.node] = g
            continue
        types = [t for t in dict.fromkeys(f"{had.type or ''}+{g.type or ''}".split("+")) if t]
        known = (had.indexes or not had.count) and (g.indexes or not g.count)
        out[g.node] = JobGpus(g.node, "+".join(types) or None, had.count + g.count,
                              tuple(sorted({*had.indexes, *g.indexes})) if known else ())
    return out


class Job(msgspec.Struct, frozen=True, gc=False):
    job_id: int
    name: str = ""
    user: str = ""
    account: str = ""
    partition: str = ""
    state: str = "UNKNOWN"  # primary state, one of JOB_STATES
    state_flags: frozenset[str] = frozenset()  # e.g. {"REQUEUED"} next to PENDING
    reason: str = ""
    nodes: tuple[str, ...] = ()
    node_count: int = 0
    gpus: tuple[JobGpus, ...] = ()  # allocated, per node
    gpus_per_node: int = 0  # requested (tres_per_node), for pending jobs too
    gpu_type: str | None = None
    array_job_id: int | None = None
    array_task_id: int | None = None
    array_task_string: str | None = None  # pending array remainder, e.g. "3-10%2"
    het_job_id: int | None = None
    het_job_offset: int | None = None
    submit_time: int | None = None
    start_time: int | None = None
    end_time: int | None = None
    time_limit: int | None = None  # minutes, None = unlimited
    command: str = ""
    work_dir: str = ""
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    exit_signal: int | None = None
    cpus: int = 0
    held: bool = False
    unknown: frozenset[str] = frozenset()  # UNKNOWN_FIELDS that could not be read, shown as "?"

    @property
    def gpu_cell(self) -> str:
        """The GPU count as text, ``?`` when the job's GPUs could not be read."""
        return UNKNOWN_CELL if "gpus" in self.unknown else str(self.gpu_count)

    @property
    def gpu_count(self) -> int:
        alloc = sum(g.count for g in self.gpus)
        return alloc or self.gpus_per_node * max(self.node_count, 1 if self.gpus_per_node else 0)

    @property
    def display_id(self) -> str:
        """``123_4`` for array tasks, ``123+1`` for het components, else ``123``."""
        if self.array_job_id is not None and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        if self.array_job_id is not None and self.array_task_string:
            return f"{self.array_job_id}_[{self.array_task_string}]"
        if self.het_job_id is not None and self.het_job_offset is not None:
            return f"{self.het_job_id}+{self.het_job_offset}"
        return str(self.job_id)


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    level: int = 0
    nodes: tuple[str, ...] = ()  # direct nodes (leaf switches)
    switches: tuple[str, ...] = ()  # child switches
    link_speed: int | None = None


@dataclass(frozen=True, slots=True)
class Block:
    name: str
    nodes: tuple[str, ...] = ()
    index: int | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class Topology:
    """Slurm's network topology: ``tree`` (switches), ``block`` (blocks) or ``none``."""

    kind: str = "none"
    switches: tuple[Switch, ...] = ()
    blocks: tuple[Block, ...] = ()

    def leaf_of(self, node: str) -> str | None:
        """The leaf switch (tree) or block (block) that holds ``node``."""
        for blk in self.blocks:
            if node in blk.nodes:
                return blk.name
        for sw in self.switches:
            if node in sw.nodes:
                return sw.name
        return None

    def parent_of(self, switch: str) -> str | None:
        for sw in self.switches:
            if switch in sw.switches:
                return sw.name
        return None

    def path(self, node: str) -> tuple[str, ...]:
        """Switches from the node's leaf up to the top: ``('leaf1', 'spine')``."""
        out: list[str] = []
        cur = self.leaf_of(node)
        while cur is not None and cur not in out:
            out.append(cur)
            cur = self.parent_of(cur)
        return tuple(out)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    nodes: tuple[Node, ...] = ()
    partitions: tuple[Partition, ...] = ()
    jobs: tuple[Job, ...] = ()
    topology: Topology = field(default_factory=Topology)
    fetched_at: float = 0.0
    source: str = ""
    slurm_version: str = ""
    errors: tuple[str, ...] = ()
    simulated: bool = False
    # Kinds whose first load is still arriving: their data here is the part read so far
    # (cockpit.core.poller publishes a big first load in parts).
    loading: tuple[str, ...] = ()

    def node(self, name: str) -> Node | None:
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    def job(self, job_id: int) -> Job | None:
        for j in self.jobs:
            if j.job_id == job_id:
                return j
        return None
