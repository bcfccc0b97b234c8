"""Slurm JSON -> cockpit.models, for every dialect from openapi v0.0.37 (21.08)
to data_parser v0.0.44 (25.11). Pure functions: no I/O, no subprocess.

Public API (all raise only :class:`cockpit.errors.ParseError`):

- ``parse_squeue(data, source="squeue --json", warnings=None) -> tuple[Job, ...]``
  also reads ``scontrol show job --json`` and slurmrestd ``/jobs`` bodies.
- ``parse_sinfo(data, ...) -> (tuple[Node, ...], tuple[Partition, ...])``
- ``parse_scontrol_nodes(data, ...) -> tuple[Node, ...]``
- ``parse_partitions(data, ...) -> tuple[Partition, ...]`` (slurmrestd ``/partitions``)
- ``parse_version(meta_or_text) -> str`` ("24.11.5"; "" when unknown)

``warnings``: pass a list to collect non-fatal findings (an unknown job or node
state kept as UNKNOWN, gres_detail not matching the node list ...); each message
is added once. Without a list they are dropped.
"""

from __future__ import annotations

from typing import Any

from cockpit.backends.slurm_json_common import (
    Unknowns,
    expand_nodes,
    load_json,
    num,
    num0,
    read_each,
    records,
    text,
    time_or_none,
    warn,
)
from cockpit.backends.slurm_json_fast import decode_jobs
from cockpit.backends.slurm_json_gres import gpu_items, tres_gpus
from cockpit.backends.slurm_json_nodes import (
    parse_partitions,
    parse_scontrol_nodes,
    parse_sinfo,
    parse_version,
)
from cockpit.errors import ParseError
from cockpit.models.cluster import Job, JobGpus

__all__ = [
    "parse_squeue",
    "parse_sinfo",
    "parse_scontrol_nodes",
    "parse_partitions",
    "parse_version",
    "job_from_record",
]

# Base job states (Slurm's JOB_STATE_BASE); the rest of JOB_STATES are flags
# that 23.02+ list next to the base state (["PENDING", "REQUEUED"]).
BASE_JOB_STATES = frozenset(
    {
        "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
        "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
    }
)
# Flags Slurm may print alone as the state string in old dialects.
_FLAG_AS_STATE = frozenset(
    {"COMPLETING", "CONFIGURING", "REQUEUED", "RESIZING", "REVOKED", "SIGNALING",
     "SPECIAL_EXIT", "STAGE_OUT", "STOPPED"}
)
_HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})


def parse_squeue(
    data: bytes | str, source: str = "squeue --json", warnings: list[str] | None = None
) -> tuple[Job, ...]:
    """Jobs from ``squeue --json``, ``scontrol show job --json`` or slurmrestd.

    Raises ParseError (naming ``source``) for malformed JSON or a malformed job.
    """
    fast = decode_jobs(data)
    if fast is not None:
        return read_each(fast, "job", source, lambda r: job_from_record(r, source, warnings),
                         warnings, "job_id")
    doc = load_json(data, source)
    recs = records(doc, "jobs", source)
    return read_each(recs, "job", source, lambda r: job_from_record(r, source, warnings),
                     warnings, "job_id")


def job_from_record(rec: Any, source: str, warnings: list[str] | None = None) -> Job:
    """Map one job object of any dialect to a :class:`Job`. Raises ParseError."""
    g = rec.get
    job_id = num(g("job_id"), "job_id", source)
    if job_id is None:
        raise ParseError(source, "a job has no job_id")
    try:
        return _build_job(rec, job_id, source, warnings)
    except ParseError as exc:
        raise ParseError(source, f"job {job_id}: {exc.detail}") from None


def _build_job(rec: Any, job_id: int, source: str, warnings: list[str] | None) -> Job:
    g = rec.get
    # state, GPUs, reason that cannot be read are shown unknown; the job stays
    unknown = Unknowns(source, "job", str(job_id), warnings)
    state, flags = unknown.read("state", lambda: job_state(g("job_state"), source, warnings), ("UNKNOWN", frozenset()))
    nodes = expand_nodes(g("nodes"), "nodes", source)
    node_count = num0(g("node_count"), "node_count", source) or len(nodes)
    reason = unknown.read("reason", lambda: _reason(rec, source), "")
    array_job_id, array_task_id, array_str = _array(rec, job_id, source)
    het_id = num(g("het_job_id"), "het_job_id", source) or None
    het_off = num(g("het_job_offset"), "het_job_offset", source) if het_id else None
    per_node, gtype, alloc = unknown.read("gpus", lambda: _job_gpus(rec, nodes, node_count, job_id, source, warnings),
                                          (0, None, ()))
    exit_code, exit_signal = exit_status(g("exit_code"), source)
    return Job(
        job_id=job_id,
        name=text(g("name"), "name", source),
        user=text(g("user_name"), "user_name", source),
        account=text(g("account"), "account", source),
        partition=text(g("partition"), "partition", source),
        state=state,
        state_flags=flags,
        reason="" if reason == "None" else reason,
        nodes=nodes,
        node_count=node_count,
        gpus=alloc,
        gpus_per_node=per_node,
        gpu_type=gtype,
        array_job_id=array_job_id,
        array_task_id=array_task_id,
        array_task_string=array_str,
        het_job_id=het_id,
        het_job_offset=het_off,
        submit_time=time_or_none(g("submit_time"), "submit_time", source),
        start_time=time_or_none(g("start_time"), "start_time", source),
        end_time=time_or_none(g("end_time"), "end_time", source),
        time_limit=num(g("time_limit"), "time_limit", source),
        command=text(g("command"), "command", source),
        work_dir=text(g("current_working_directory"), "current_working_directory", source),
        stdout=text(g("standard_output"), "standard_output", source),
        stderr=text(g("standard_error"), "standard_error", source),
        exit_code=exit_code,
        exit_signal=exit_signal,
        cpus=num0(g("cpus"), "cpus", source),
        held=_held(rec, state, reason, source),
        unknown=unknown.frozen(),
    )


def _reason(rec: Any, source: str) -> str:
    reason = text(rec.get("state_reason"), "state_reason", source)
    # squeue's %r shows the description when Slurm gives one (e.g. "Nodes required
    # for job are DOWN, DRAINED ..." behind reason "Resources"); do the same.
    return text(rec.get("state_description"), "state_description", source) or reason


def _job_gpus(rec: Any, nodes: tuple[str, ...], node_count: int, job_id: int, source: str,
              warnings: list[str] | None) -> tuple[int, str | None, tuple[JobGpus, ...]]:
    """(requested per node, type, allocated per node)."""
    per_node, gtype = _requested_gpus(rec, node_count, source)
    alloc = _alloc_gpus(rec.get("gres_detail"), nodes, job_id, source, warnings)
    if gtype is None and alloc:
        types = {a.type for a in alloc}
        gtype = types.pop() if len(types) == 1 else None
    return per_node, gtype, alloc


def job_state(value: Any, source: str, warnings: list[str] | None = None) -> tuple[str, frozenset[str]]:
    """(primary state, flags) from ``"RUNNING"`` or ``["PENDING", "REQUEUED"]``.

    An unknown state is kept as ``UNKNOWN`` with a warning; a non-string raises.
    """
    key: object = None
    if type(value) is str:
        key = value
    elif type(value) is list and all(type(v) is str for v in value):
        key = tuple(value)
    hit = _STATE_CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit
    if type(value) is str:
        names = [value]
    elif type(value) is list and all(type(v) is str for v in value):
        names = value
    elif value is None:
        names = []
    else:
        raise ParseError(source, f"job_state is neither a string nor a list of strings: {value!r:.80}")
    names = [n.strip().upper() for n in names if n.strip()]
    primary = next((n for n in names if n in BASE_JOB_STATES), None)
    if primary is None:
        primary = next((n for n in names if n in _FLAG_AS_STATE), None)
    if primary is None:
        if names:
            warn(warnings, f"{source}: unknown job state {'+'.join(names)!r} shown as UNKNOWN")
        return "UNKNOWN", frozenset(names)
    out = primary, frozenset(n for n in names if n != primary)
    if key is not None and len(_STATE_CACHE) < 4096:
        _STATE_CACHE[key] = out  # only known states: unknown ones must warn each time
    return out


_STATE_CACHE: dict[object, tuple[str, frozenset[str]]] = {}


def exit_status(value: Any, source: str) -> tuple[int | None, int | None]:
    """(exit code, signal) from an int wait status (<= 22.05) or the
    ``{status, return_code, signal}`` object (>= 23.02). Raises ParseError."""
    if value is None:
        return None, None
    if type(value) is dict:
        code = num(value.get("return_code"), "exit_code.return_code", source)
        sig = value.get("signal")
        signal = None
        if type(sig) is dict:
            signal = num(sig.get("id", sig.get("signal_id")), "exit_code.signal", source)
        elif sig is not None:
            signal = num(sig, "exit_code.signal", source)
        status = value.get("status")
        if status == ["PENDING"] or status == "PENDING":
            return None, None
        return code, signal or None
    raw = num(value, "exit_code", source)
    if raw is None:
        return None, None
    # Old dialects print the raw wait(2) status: code in bits 8-15, signal in 0-6.
    return (raw >> 8) & 0xFF, (raw & 0x7F) or None


def _array(rec: Any, job_id: int, source: str) -> tuple[int | None, int | None, str | None]:
    g = rec.get
    array_job_id = num(g("array_job_id"), "array_job_id", source) or None
    if array_job_id is None:
        return None, None, None
    task = num(g("array_task_id"), "array_task_id", source)
    task_str = text(g("array_task_string"), "array_task_string", source) or None
    return array_job_id, task, task_str


def _requested_gpus(rec: Any, node_count: int, source: str) -> tuple[int, str | None]:
    per_node, gtype = tres_gpus(text(rec.get("tres_per_node"), "tres_per_node", source), source)
    if per_node:
        return per_node, gtype
    per_job, gtype = tres_gpus(text(rec.get("tres_per_job"), "tres_per_job", source), source)
    if per_job:
        # --gpus=N spreads over the nodes; an even split is what the model can hold.
        return max(per_job // max(node_count, 1), 1), gtype
    return 0, None


def _alloc_gpus(
    detail: Any, nodes: tuple[str, ...], job_id: int, source: str, warnings: list[str] | None
) -> tuple[JobGpus, ...]:
    if not detail:
        return ()
    if type(detail) is str:
        detail = [detail]
    if type(detail) is not list:
        raise ParseError(source, f"gres_detail is not a list: {detail!r:.80}")
    if len(detail) != len(nodes):
        warn(warnings, f"{source}: job {job_id} lists GPUs for {len(detail)} nodes "
                       f"but runs on {len(nodes)}; GPU placement may be incomplete")
    out: list[JobGpus] = []
    for node, entry in zip(nodes, detail):
        if type(entry) is not str:
            raise ParseError(source, f"gres_detail entry is not a string: {entry!r:.80}")
        for item in gpu_items(entry, source):
            idx = item.indexes or ()
            count = item.count if item.count is not None else len(idx)
            if count or idx:  # "gpu:1g.10gb:0(IDX:)": a type of the node the job holds none of
                out.append(JobGpus(node=node, type=item.type, count=count, indexes=idx))
    return tuple(out)


def _held(rec: Any, state: str, reason: str, source: str) -> bool:
    if state != "PENDING":
        return False  # a cancelled job keeps its old JobHeld* reason
    if reason in _HELD_REASONS:
        return True
    hold = rec.get("hold")
    if hold is True:
        return True
    # A pending job with priority 0 is held (that is how Slurm stores a hold).
    return num(rec.get("priority"), "priority", source) == 0
