"""The pyslurm backend: Slurm's C API through pyslurm, mapped into cockpit.models.

pyslurm's major.minor must equal the cluster's Slurm (pyslurm 25.11.x needs
Slurm 25.11 exactly), so :func:`probe` decides whether it may be used at all.
pyslurm is imported lazily: this module imports fine without it.

Written against pyslurm 25.11.2's real API (pyslurm/core/node.pyx,
core/job/job.pyx, core/partition.pyx, core/slurmctld/config.pyx):

* ``pyslurm.Nodes.load()`` -> Node: ``name, state`` (``"IDLE+DRAIN"``), ``reason,
  reason_user, reason_time, total_cpus, allocated_cpus, real_memory,
  allocated_memory, partitions, configured_gres`` (``{"gpu:h100": 8}``),
  ``allocated_gres`` (counts only, from TRES), ``address, active_features,
  boot_time``. pyslurm exposes no per-index GPU use for a node (``gres_used``
  is not wrapped), so node GPU indexes come from the jobs' layouts.
* ``pyslurm.Jobs.load()`` -> Job: ``id, name, user_name, account, partition,
  state, state_reason, allocated_nodes, num_nodes, gres_per_node, array_id,
  array_task_id, array_tasks_waiting, array_tasks_parallel, heterogeneous_id,
  heterogeneous_offset, submit_time, start_time, end_time, time_limit, command,
  working_directory, standard_output, standard_error, exit_code,
  exit_code_signal, cpus, priority`` and ``get_resource_layout_per_node()``
  (``{node: {"gres": {"gpu:h100": {"count": 2, "indexes": "0-1"}}}}``).
* ``pyslurm.Partitions.load()`` -> ``name, nodes, state, is_default, max_time,
  total_cpus``; ``pyslurm.slurmctld.Config.load().version``.
* pyslurm has no topology API: the topology comes from ``scontrol show
  topology`` through the CLI backend.

The mapping lives in pure functions over plain attribute objects, so it is
tested without Slurm 25.11 (tests/backends/test_pyslurm.py).
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Iterable
from typing import Any

from cockpit.backends.slurm_json import job_state
from cockpit.backends.slurm_json_gres import parse_index_list
from cockpit.backends.slurm_json_nodes import node_state
from cockpit.errors import BackendError, CockpitError
from cockpit.hostlist import expand
from cockpit.models import ClusterSnapshot, GpuGroup, Job, JobGpus, Node, Partition, Topology

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
    """``"25.11.2"`` -> ``"25.11"``; "" when the string has no major.minor."""
    parts = str(version).strip().split(".")
    if len(parts) < 2 or not parts[0].isdecimal() or not parts[1][:2].isdecimal():
        return ""
    return f"{int(parts[0])}.{int(parts[1][:2]):02d}"


async def probe(cli_backend: Any, remote: bool) -> tuple[bool, str]:
    """May pyslurm be used here? Returns (usable, one sentence saying why).

    Never raises: every failure becomes the reason."""
    if remote:
        return False, "pyslurm only works on a host of the cluster, and cockpit reaches this one over SSH"
    try:
        mod = importlib.import_module("pyslurm")
    except ImportError:
        return False, "pyslurm is not installed"
    except Exception as exc:  # libslurm missing, slurm_init() failing ...: it is unusable
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return False, f"pyslurm does not load: {first}"
    have = str(getattr(mod, "__version__", "")) or "(unknown version)"
    try:
        slurm = await cli_backend.version()
    except CockpitError as exc:
        return False, f"the cluster's Slurm version is unknown ({exc}), so pyslurm {have} cannot be matched"
    if not major_minor(have) or major_minor(have) != major_minor(slurm):
        return False, f"pyslurm {have} does not match Slurm {slurm}"
    return True, f"pyslurm {have} matches Slurm {slurm}"


# -- pure mapping: pyslurm objects (or stand-ins with the same attributes) -> models


def _int(value: Any) -> int | None:
    """pyslurm gives ints, None, or the string "UNLIMITED" (u32_parse's on_inf)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _gpu_key(key: str) -> tuple[bool, str | None]:
    """``"gpu:h100"`` / ``"gres/gpu:h100"`` / ``"gpu"`` -> (is a GPU, type)."""
    for prefix in ("gres/", "gres:"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    name, _, gtype = key.partition(":")
    return name == "gpu", (gtype or None)


def _gres_count(value: Any) -> int:
    if isinstance(value, dict):
        return _int(value.get("count")) or 0
    return _int(value) or 0


def gpus_requested(gres_per_node: dict | None) -> tuple[int, str | None]:
    """GPUs per node asked for, from ``Job.gres_per_node`` (to_gres_dict of tres_per_node)."""
    total, types = 0, set()
    for key, value in (gres_per_node or {}).items():
        is_gpu, gtype = _gpu_key(str(key))
        if is_gpu:
            total += _gres_count(value)
            types.add(gtype)
    return total, (types.pop() if len(types) == 1 else None)


def gpus_from_layout(layout: dict | None, source: str = SOURCE) -> tuple[JobGpus, ...]:
    """Per-node GPUs with indexes from ``Job.get_resource_layout_per_node()``.
    Raises ParseError for a malformed index list."""
    out: list[JobGpus] = []
    for node, res in (layout or {}).items():
        gres = res.get("gres") if isinstance(res, dict) else None
        for key, value in (gres or {}).items():
            is_gpu, gtype = _gpu_key(str(key))
            if not is_gpu:
                continue
            idx: tuple[int, ...] = ()
            if isinstance(value, dict) and value.get("indexes") is not None:
                idx = parse_index_list(str(value["indexes"]), source)
            count = _gres_count(value) or len(idx)
            if count:
                out.append(JobGpus(node=node, type=gtype, count=count, indexes=idx))
    return tuple(out)


def job_from_pyslurm(j: Any, layout: dict | None = None, warnings: list[str] | None = None) -> Job:
    """A pyslurm ``Job`` -> Job. ``layout`` is its ``get_resource_layout_per_node()``.
    Raises ParseError for data that cannot be understood."""
    raw_state = str(j.state or "").upper()
    state, flags = job_state(_JOB_STATE_WORDS.get(raw_state, [raw_state]), SOURCE, warnings)
    reason = j.state_reason or ""
    nodes = expand(j.allocated_nodes) if j.allocated_nodes else ()
    per_node, gtype = gpus_requested(j.gres_per_node)
    alloc = gpus_from_layout(layout)
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
        array_task_id=_int(j.array_task_id) if array_id else None,
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
        exit_code=_int(j.exit_code),
        exit_signal=_int(j.exit_code_signal) or None,
        cpus=_int(j.cpus) or 0,
        held=_is_held(raw_state, state, reason, _int(j.priority)),
    )


def _is_held(raw_state: str, state: str, reason: str, priority: int | None) -> bool:
    if raw_state in _HELD_STATES or reason in _HELD_REASONS:
        return True
    # A pending job with priority 0 is held; pyslurm keeps 0 (zero_is_noval=False).
    return state == "PENDING" and priority == 0


def gpu_use_by_node(jobs: Iterable[Job]) -> dict[str, dict[str | None, set[int]]]:
    """node -> GPU type -> indexes held by running jobs."""
    use: dict[str, dict[str | None, set[int]]] = {}
    for job in jobs:
        if job.state not in ("RUNNING", "SUSPENDED", "COMPLETING"):
            continue
        for g in job.gpus:
            use.setdefault(g.node, {}).setdefault(g.type, set()).update(g.indexes)
    return use


def node_from_pyslurm(n: Any, gpu_use: dict[str | None, set[int]] | None = None,
                      warnings: list[str] | None = None) -> Node:
    """A pyslurm ``Node`` -> Node; ``gpu_use`` gives the GPU indexes jobs hold there.
    Raises ParseError for data that cannot be understood."""
    words = [w for w in str(n.state or "").split("+") if w]
    base, flags = node_state(words, None, SOURCE, warnings)
    groups = []
    use = gpu_use or {}
    configured = [(t, _gres_count(v)) for k, v in (n.configured_gres or {}).items()
                  for is_gpu, t in [_gpu_key(str(k))] if is_gpu]
    for gtype, count in configured:
        idx = use.get(gtype)
        if idx is None and len(configured) == 1 and use:
            idx = set().union(*use.values())  # typed config, untyped job request
        groups.append(GpuGroup(type=gtype, count=count, alloc_indexes=tuple(sorted(idx or ()))))
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
        gpus=tuple(groups),
        address=n.address or None,
        features=tuple(n.active_features or n.available_features or ()),
        boot_time=_int(n.boot_time),
    )


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


# -- the backend ------------------------------------------------------------------


class PyslurmBackend:
    """Backend protocol through pyslurm (local only; see :func:`probe`)."""

    name = "pyslurm"

    def __init__(self, cli: Any = None) -> None:
        """``cli``: a SlurmCliBackend for what pyslurm cannot give (the topology);
        a local one is made when needed."""
        self._cli = cli
        self._pyslurm: Any = None
        self.description = "pyslurm on localhost"
        self.warnings: list[str] = []

    def _mod(self) -> Any:
        if self._pyslurm is None:
            try:
                self._pyslurm = importlib.import_module("pyslurm")
            except ImportError:
                raise BackendError("pyslurm is not installed (pip install 'cockpit[pyslurm]')") from None
        return self._pyslurm

    async def _call(self, fn, what: str):
        """Run a blocking pyslurm call in a thread; its errors become BackendError."""
        mod = self._mod()
        errors = tuple(e for e in (getattr(mod, "PyslurmError", None), getattr(mod, "RPCError", None)) if e)
        try:
            return await asyncio.to_thread(fn, mod)
        except (errors or (RuntimeError,)) as exc:
            raise BackendError(f"pyslurm could not load {what}: {exc}") from None

    async def version(self) -> str:
        return await self._call(lambda m: str(m.slurmctld.Config.load().version or ""), "the config")

    def _jobs_sync(self, mod: Any) -> tuple[Job, ...]:
        out = []
        for j in mod.Jobs.load().values():
            layout = j.get_resource_layout_per_node() if j.allocated_nodes else None
            out.append(job_from_pyslurm(j, layout, self.warnings))
        return tuple(sorted(out, key=lambda job: job.job_id))

    async def fetch_jobs(self) -> tuple[Job, ...]:
        return await self._call(self._jobs_sync, "jobs")

    async def fetch_nodes(self) -> tuple[Node, ...]:
        # Node GPU indexes exist only in the jobs' layouts, so nodes need jobs too.
        jobs = await self.fetch_jobs()
        return await self._call(lambda m: self._nodes_sync(m, jobs), "nodes")

    def _nodes_sync(self, mod: Any, jobs: tuple[Job, ...]) -> tuple[Node, ...]:
        use = gpu_use_by_node(jobs)
        return tuple(node_from_pyslurm(n, use.get(n.name), self.warnings) for n in mod.Nodes.load().values())

    async def fetch_partitions(self) -> tuple[Partition, ...]:
        return await self._call(
            lambda m: tuple(partition_from_pyslurm(p) for p in m.Partitions.load().values()), "partitions"
        )

    def _cli_backend(self) -> Any:
        # pyslurm talks to the Slurm of this machine, so its Slurm commands are local too.
        if self._cli is None:
            from cockpit.backends.slurm_cli import SlurmCliBackend
            from cockpit.runner import LocalRunner

            self._cli = SlurmCliBackend(LocalRunner())
        return self._cli

    async def fetch_topology(self) -> Topology:
        return await self._cli_backend().fetch_topology()

    cannot_act = ""

    def action_executor(self, config: Any) -> Any:
        """Actions run as Slurm commands on this machine (the cluster pyslurm reads)."""
        return self._cli_backend().action_executor(config)

    def probe_runner(self, config: Any) -> Any:
        return self._cli_backend().probe_runner(config)

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        return await self._cli_backend().job_state(job_id)

    async def job_excluded_nodes(self, job_id: int | str) -> str:
        return await self._cli_backend().job_excluded_nodes(job_id)

    async def snapshot(self) -> ClusterSnapshot:
        """Everything at once; a failing part goes into ``errors``. Raises
        BackendError when neither nodes nor jobs could be read."""
        started = time.time()
        self.warnings.clear()
        errors: list[str] = []

        async def part(label: str, coro, empty):
            try:
                return await coro
            except CockpitError as exc:
                errors.append(f"{label}: {exc}")
                return empty

        version = await part("version", self.version(), "")
        jobs = await part("jobs", self.fetch_jobs(), None)
        nodes = await part("nodes", self._call(lambda m: self._nodes_sync(m, jobs or ()), "nodes"), None)
        if jobs is None and nodes is None:
            raise BackendError(f"cannot read the cluster: {errors[0]}")
        partitions = await part("partitions", self.fetch_partitions(), ())
        topology = await part("topology", self.fetch_topology(), Topology())
        return ClusterSnapshot(
            nodes=nodes or (),
            partitions=partitions,
            jobs=jobs or (),
            topology=topology,
            fetched_at=started,
            source=f"pyslurm {getattr(self._pyslurm, '__version__', '')} on localhost".replace("  ", " "),
            slurm_version=version,
            errors=tuple(errors) + tuple(dict.fromkeys(self.warnings)),
        )

    async def close(self) -> None:
        if self._cli is not None:
            await self._cli.close()
