"""pyslurm objects -> cockpit.models. Pure: no pyslurm import, no I/O.

The functions read attributes only, so they take real pyslurm objects and
stand-ins alike. The attribute names and value shapes used here are the same in
pyslurm 22.5, 24.11 and 25.11 (core/job/job.pyx, core/node.pyx,
core/partition.pyx, utils/cstr.pyx ``to_gres_dict``, utils/uint.pyx
``u32_parse``); what differs between them lives in
:mod:`cockpit.backends.pyslurm_compat`.

* ``Job``: ``id, name, user_name, account, partition, state`` (Slurm's
  job_state_string: ``"PENDING"``, ``"REQUEUE_HOLD"``), ``state_reason``,
  ``allocated_nodes`` (a hostlist), ``num_nodes, gres_per_node`` (to_gres_dict of
  tres_per_node: ``{"gpu:h100": 2}``), array/het ids, times (epoch seconds or
  None), ``time_limit`` (minutes, or "UNLIMITED"), ``priority`` (0 = held) and
  ``get_resource_layout_per_node()``: ``{node: {"gres": {"gpu:h100":
  {"count": "2", "indexes": "0-1"}}}}`` (the count is a string there).
* ``Node``: ``state`` (``"IDLE+DRAIN"``), ``reason, reason_user, reason_time,
  total_cpus, allocated_cpus, real_memory, allocated_memory, partitions,
  configured_gres, allocated_gres, address, active_features, boot_time``.
* ``Partition``: ``name, nodes, state, is_default, max_time, total_cpus``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cockpit.backends.slurm_json import job_state
from cockpit.backends.slurm_json_common import Unknowns
from cockpit.backends.slurm_json_gres import SHARING, parse_index_list
from cockpit.backends.slurm_json_nodes import GpuUse, node_state
from cockpit.errors import ParseError
from cockpit.hostlist import expand
from cockpit.models import GpuGroup, Job, JobGpus, Node, Partition, SharedGres
from cockpit.models.cluster import mig_profile

SOURCE = "pyslurm"
# job_state_string() words that are neither a base state nor a flag cockpit knows.
_JOB_STATE_WORDS = {
    "REQUEUE_HOLD": ["PENDING", "REQUEUED"],
    "REQUEUE_FED": ["PENDING", "REQUEUED"],
    "RESV_DEL_HOLD": ["PENDING"],
    "LAUNCH_FAILED": ["FAILED"],
}
_HELD_STATES = frozenset({"REQUEUE_HOLD", "RESV_DEL_HOLD"})
_HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})


def major_minor(version: str) -> str:
    """``"25.11.2"`` -> ``"25.11"``, ``"22.5.3"`` -> ``"22.05"``; "" without a major.minor."""
    parts = str(version).strip().split(".")
    if len(parts) < 2 or not parts[0].isdecimal() or not parts[1][:2].isdecimal():
        return ""
    return f"{int(parts[0])}.{int(parts[1][:2]):02d}"


def _int(value: Any) -> int | None:
    """pyslurm gives ints, None, or the string "UNLIMITED" (u32_parse's on_inf)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _gpu_key(key: str) -> tuple[bool, str | None]:
    """``"gpu:h100"`` / ``"gres/gpu:h100"`` / ``"gpu"`` -> (is a GPU, type)."""
    for prefix in ("gres/", "gres:"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    name, _, gtype = key.partition(":")
    # Untyped GPUs come as "gpu:(null)" from Slurm's gres_used strings.
    return name == "gpu", (gtype if gtype and gtype != "(null)" else None)


def _gres_count(value: Any) -> int:
    """A GRES count from to_gres_dict: an int, or digits as text next to IDX. Anything
    else raises ParseError, so the field is shown unknown, never as 0 GPUs."""
    if isinstance(value, dict):
        value = value.get("count")
    if isinstance(value, str) and value.isdecimal():  # to_gres_dict keeps "2" as text next to IDX
        return int(value)
    if value is None:
        return 0  # no count given (an IDX list alone): the caller counts the indexes
    count = _int(value)
    if count is None:
        raise ParseError(SOURCE, f"GRES count {str(value)[:40]!r} is not a number")
    return count


def gpus_requested(gres_per_node: dict | None) -> tuple[int, str | None]:
    """GPUs per node asked for, from ``Job.gres_per_node``."""
    total, types = 0, set()
    for key, value in (gres_per_node or {}).items():
        is_gpu, gtype = _gpu_key(str(key))
        if is_gpu:
            total += _gres_count(value)
            types.add(gtype)
    return total, (types.pop() if len(types) == 1 else None)


def _gpu_items(gres: dict | None) -> Iterable[tuple[str | None, int, tuple[int, ...]]]:
    """(type, count, indexes) of each GPU entry of a to_gres_dict result.
    Raises ParseError for a malformed index list."""
    for key, value in (gres or {}).items():
        is_gpu, gtype = _gpu_key(str(key))
        if not is_gpu:
            continue
        idx: tuple[int, ...] = ()
        if isinstance(value, dict) and value.get("indexes") is not None:
            idx = parse_index_list(str(value["indexes"]), SOURCE)
        yield gtype, _gres_count(value) or len(idx), idx


def gpus_from_layout(layout: dict | None) -> tuple[JobGpus, ...]:
    """Per-node GPUs with indexes from ``Job.get_resource_layout_per_node()``.
    Raises ParseError for a malformed index list."""
    out: list[JobGpus] = []
    for node, res in (layout or {}).items():
        gres = res.get("gres") if isinstance(res, dict) else None
        for gtype, count, idx in _gpu_items(gres):
            if count:
                out.append(JobGpus(node=node, type=gtype, count=count, indexes=idx))
    return tuple(out)


def job_from_pyslurm(j: Any, layout: dict | None = None, warnings: list[str] | None = None) -> Job:
    """A pyslurm ``Job`` -> Job. ``layout`` is its ``get_resource_layout_per_node()``.
    Raises ParseError for data that cannot be understood."""
    # A state or GPUs that cannot be read is named in Job.unknown (as the JSON readers
    # do) and the job stays; without a warnings list it raises as before.
    unknown = Unknowns(SOURCE, "job", str(j.id), warnings)
    raw_state = str(j.state or "").upper()
    state, flags = unknown.read("state", lambda: job_state(_JOB_STATE_WORDS.get(raw_state, [raw_state]), SOURCE,
                                                           warnings), ("UNKNOWN", frozenset()))
    reason = j.state_reason or ""
    nodes = expand(j.allocated_nodes) if j.allocated_nodes else ()
    per_node, gtype = unknown.read("gpus", lambda: gpus_requested(j.gres_per_node), (0, None))
    alloc = unknown.read("gpus", lambda: gpus_from_layout(layout), ())
    if gtype is None and alloc:
        types = {g.type for g in alloc}
        gtype = types.pop() if len(types) == 1 else None
    array_id = _int(j.array_id)
    waiting = j.array_tasks_waiting if array_id else None
    if waiting and _int(j.array_tasks_parallel):
        waiting = f"{waiting}%{j.array_tasks_parallel}"  # pyslurm strips Slurm's "%N"
    het_id = _int(j.heterogeneous_id)
    return Job(
        job_id=int(j.id),
        name=j.name or "",
        user=j.user_name or "",
        account=j.account or "",
        partition=j.partition or "",
        state=state,
        state_flags=flags,
        reason="" if reason == "None" else reason,
        nodes=nodes,
        node_count=_int(j.num_nodes) or len(nodes),
        gpus=alloc,
        gpus_per_node=per_node,
        gpu_type=gtype,
        array_job_id=array_id,
        # u32_parse turns task 0 into None; a task of an array always has an id.
        array_task_id=(_int(j.array_task_id) or 0) if array_id and not waiting else None,
        array_task_string=waiting or None,
        het_job_id=het_id,
        # u32_parse turns offset 0 into None; a het leader's offset is 0.
        het_job_offset=(_int(j.heterogeneous_offset) or 0) if het_id else None,
        submit_time=_int(j.submit_time),
        start_time=_int(j.start_time),
        end_time=_int(j.end_time),
        time_limit=_int(j.time_limit),
        command=j.command or "",
        work_dir=j.working_directory or "",
        stdout=j.standard_output or "",
        stderr=j.standard_error or "",
        exit_code=_int(_exit(j, "exit_code")),
        exit_signal=_int(_exit(j, "exit_code_signal")) or None,
        cpus=_int(j.cpus) or 0,
        held=is_held(raw_state, state, reason, _int(j.priority)),
        unknown=unknown.frozen(),
    )


def _exit(j: Any, attr: str) -> Any:
    """``Job.exit_code`` / ``exit_code_signal``; None where pyslurm cannot decode the
    status: its _get_exit_code passes the uint32 to WIFSIGNALED(int), which raises
    OverflowError above INT_MAX (seen on 22.5 for a job that never ran)."""
    try:
        return getattr(j, attr)
    except OverflowError:
        return None


def is_held(raw_state: str, state: str, reason: str, priority: int | None) -> bool:
    """Held: a pending job with a hold state or reason, or with priority 0 (pyslurm keeps 0)."""
    if state != "PENDING":
        return False  # a cancelled job keeps its old JobHeld* reason
    if raw_state in _HELD_STATES or reason in _HELD_REASONS:
        return True
    return state == "PENDING" and priority == 0


def node_from_pyslurm(n: Any, gpu_use: GpuUse | None = None, warnings: list[str] | None = None,
                      state: str | None = None, allocated_gres: dict | None = None) -> Node:
    """A pyslurm ``Node`` -> Node; ``gpu_use`` gives the GPU indexes in use there,
    ``state`` replaces ``n.state`` (the adapter's reading of it), ``allocated_gres``
    the node's GRES in use as the adapter reads them (None or a name missing there:
    its shards/MPS in use are not known, unless the node holds no CPUs at all).
    Raises ParseError for data that cannot be understood."""
    words = [w for w in str(n.state if state is None else state).split("+") if w]
    unknown = Unknowns(SOURCE, "node", str(n.name), warnings)  # as the JSON readers: named, kept
    base, flags = unknown.read("state", lambda: node_state(words, None, SOURCE, warnings), ("unknown", frozenset()))
    # GPUs, slices and shards are one field: what cannot be read of one leaves all unknown
    groups, sharing = unknown.read("gpus", lambda: (_gpu_groups(n, gpu_use or {}),
                                                    _sharing(n, sharing_in_use(allocated_gres))), ((), ()))
    return Node(
        name=n.name,
        state=base,
        flags=flags,
        reason=n.reason or None,
        reason_user=n.reason_user or None,
        reason_time=_int(n.reason_time),
        cpus=_int(n.total_cpus) or 0,
        alloc_cpus=_int(n.allocated_cpus) or 0,
        memory_mb=_int(n.real_memory) or 0,
        alloc_memory_mb=_int(n.allocated_memory) or 0,
        partitions=tuple(n.partitions or ()),
        gpus=tuple(g for g in groups if not mig_profile(g.type)),
        mig=tuple(g for g in groups if mig_profile(g.type)),
        sharing=sharing,
        address=n.address or None,
        features=tuple(n.active_features or n.available_features or ()),
        boot_time=_int(n.boot_time),
        unknown=unknown.frozen(),
    )


def _gpu_groups(n: Any, use: GpuUse) -> tuple[GpuGroup, ...]:
    """A node's configured GPU groups with the indexes running jobs hold there."""
    groups = []
    configured = [(t, _gres_count(v)) for k, v in (n.configured_gres or {}).items()
                  for is_gpu, t in [_gpu_key(str(k))] if is_gpu]
    for gtype, count in configured:
        idx = use.get(gtype)
        if idx is None and len(configured) == 1 and use:
            idx = set().union(*use.values())  # typed config, untyped job request
        groups.append(GpuGroup(type=gtype, count=count, alloc_indexes=tuple(sorted(idx or ()))))
    return tuple(groups)


def _sharing(n: Any, used: dict[str, int]) -> tuple[SharedGres, ...]:
    """The node's configured shard/mps (``{"shard:h100": 16}``) with their use. Only jobs
    hold shards and every job holds CPUs, so a node without allocated CPUs uses none;
    else the use is what ``used`` names (for a name of one type), or not known."""
    conf = n.configured_gres or {}
    names = [str(k).partition(":") for k in conf]
    out = []
    for (name, _, gtype), value in zip(names, conf.values()):
        if name not in SHARING:
            continue
        alone = sum(1 for other, _, _ in names if other == name) == 1
        in_use = 0 if not _int(n.allocated_cpus) else used.get(name) if alone else None
        out.append(SharedGres(name, gtype if gtype and gtype != "(null)" else None, _gres_count(value), in_use))
    return tuple(out)


def sharing_in_use(allocated_gres: dict | None) -> dict[str, int]:
    """Shards/MPS in use by name from ``Node.allocated_gres`` as 24.11 and 25.11 derive it
    from the node's allocated TRES (``gres/shard=4`` -> ``{"shard": 4}``, beside the typed
    ``shard:h100`` that repeats it). A name it does not list is not known to be unused:
    the TRES name only what AccountingStorageTRES tracks.
    Raises ParseError for a count that is not a number."""
    untyped: dict[str, int] = {}
    typed: dict[str, int] = {}
    for key, value in (allocated_gres or {}).items():
        name, _, gtype = str(key).partition(":")
        if name in SHARING:
            into = typed if gtype else untyped
            into[name] = into.get(name, 0) + _gres_count(value)
    return {**typed, **untyped}


def partition_from_pyslurm(p: Any) -> Partition:
    """A pyslurm ``Partition`` -> Partition (``max_time`` "UNLIMITED" -> None)."""
    return Partition(
        name=p.name,
        nodes=expand(p.nodes) if p.nodes else (),
        state=str(p.state or "UNKNOWN"),
        is_default=bool(p.is_default),
        max_time=_int(p.max_time),
        total_cpus=_int(p.total_cpus) or 0,
    )
