"""``sacct --json`` -> JobRecord, for every dialect from openapi dbv0.0.37
(21.08) to data_parser v0.0.42+ (24.11). Pure, no I/O; raises only ParseError.

Dialect differences read here: numbers plain (<= 22.05) or
``{"set", "infinite", "number"}``; ``state.current`` a string or a list;
``exit_code.return_code`` a number or such an object; steps' ids
``"123.batch"`` or ``{"job_id", "step_id"}``. A TRES list is
``[{"type": "gres", "name": "gpu", "count": 8}, ...]``.

Slurm 22.05's JSON gives a failed batch job (script ``exit 3``) exit code
0/SUCCESS (see ../shared/TESTCLUSTER.md): :func:`exit_codes_trusted` says
when to take exit codes from ``sacct --parsable2`` instead.
"""

from __future__ import annotations

from typing import Any

from cockpit.backends.slurm_json_common import (
    expand_nodes, get_record, load_json, num, read_each, records, text, time_or_none,
)
from cockpit.errors import ParseError
from cockpit.models.accounting import JobRecord, StepRecord

SOURCE = "sacct --json"
# Memory-like TRES: a job's allocation counts MB, a step's usage counts bytes; the models hold MB.
_MEM_TYPES = frozenset({"mem", "vmem", "gres/gpumem"})


def exit_codes_trusted(doc: dict[str, Any]) -> bool:
    """False for Slurm <= 22.05 (openapi dbv0.0.3x), whose job exit codes are wrong."""
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    plugin = meta.get("plugin") if isinstance(meta.get("plugin"), dict) else {}
    if str(plugin.get("type", "")).startswith("openapi/dbv0.0.3"):
        return False
    slurm = meta.get("Slurm") or meta.get("slurm") or {}
    version = slurm.get("version") if isinstance(slurm, dict) else None
    if isinstance(version, dict):
        try:
            return int(version.get("major", 99)) > 22
        except (TypeError, ValueError):
            return True
    return True


def load(raw: bytes | str) -> dict[str, Any]:
    """Decode sacct's JSON (msgspec where installed: about twice json's speed on the
    70 MB of 28k jobs). Raises ParseError; on any msgspec error the stdlib decoder
    runs again so the message is the same either way."""
    try:
        import msgspec

        doc = msgspec.json.decode(raw)
        if isinstance(doc, dict):
            return doc
    except Exception:  # noqa: BLE001 - ImportError or a decode error: the slow path says which
        pass
    return load_json(raw, SOURCE)


def parse_sacct_json(doc: dict[str, Any], *, steps: bool = True,
                     warnings: list[str] | None = None) -> tuple[JobRecord, ...]:
    """Every job in an already decoded ``sacct --json`` document. Raises ParseError;
    with a ``warnings`` list a job that cannot be read is one warning naming it."""
    return read_each(records(doc, "jobs", SOURCE), "sacct record", SOURCE,
                     lambda rec: _job(rec, steps), warnings, "job_id")


def _obj(rec: dict[str, Any], key: str) -> dict[str, Any]:
    v = rec.get(key)
    if v is None:
        return {}
    if type(v) is not dict:
        raise ParseError(SOURCE, f"field {key!r} is a {type(v).__name__}, expected an object")
    return v


# 23.02+ lists a job's state as [base, flags...]; sacct's text names the first of these
# flags it holds instead of the base (Slurm's job_state_string), e.g. ["PENDING",
# "REQUEUED"] -> REQUEUED, a requeued run in 24.11 (tests/data/slurm-24.11/site-history).
_FLAG_STATES = ("COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED",
                "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING")


def _state(value: Any) -> str:
    if isinstance(value, list):
        flags = [f for f in _FLAG_STATES if f in value[1:]]
        value = flags[0] if flags else (value[0] if value else "")
    return (text(value, "state.current", SOURCE).split(" ", 1)[0] or "UNKNOWN").upper()


def _exit(value: Any, field: str) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    if type(value) is not dict:
        return num(value, field, SOURCE), None
    code = num(value.get("return_code"), f"{field}.return_code", SOURCE)
    sig = value.get("signal")
    signal = None
    if isinstance(sig, dict):
        signal = num(sig.get("id", sig.get("signal_id")), f"{field}.signal", SOURCE)
    return code, signal or None  # signal 0: none


def tres_list(value: Any, field: str, mem_bytes: bool = False) -> dict[str, float]:
    """``[{"type": "gres", "name": "gpu", "count": 8}]`` -> {"gres/gpu": 8}; memory in MB
    (``mem_bytes``: the counts are bytes, as in a step's usage)."""
    if not value:
        return {}
    if type(value) is not list:
        raise ParseError(SOURCE, f"field {field!r} is not a list")
    out: dict[str, float] = {}
    for item in value:
        if type(item) is not dict:
            raise ParseError(SOURCE, f"field {field!r} holds a {type(item).__name__}")
        kind = text(item.get("type"), f"{field}.type", SOURCE)
        name = text(item.get("name"), f"{field}.name", SOURCE)
        key = f"{kind}/{name}" if name else kind
        count = num(item.get("count"), f"{field}.count", SOURCE)
        if count is None or count < 0:  # -2: NO_VAL64 for energy that was never measured
            continue
        out[key] = count / (1024 * 1024) if mem_bytes and key in _MEM_TYPES else float(count)
    return out


def _times(rec: dict[str, Any]) -> dict[str, Any]:
    t = _obj(rec, "time")
    start = time_or_none(t.get("start"), "time.start", SOURCE)
    if rec.get("nodes") == "None assigned" and not num(t.get("elapsed"), "time.elapsed", SOURCE):
        # Never ran: slurmrestd 24.11's /slurmdb jobs gives a job cancelled while pending
        # its end as its start, where sacct --json of the same job says NO_VAL (no start).
        start = None
    return dict(
        submit_time=time_or_none(t.get("submission"), "time.submission", SOURCE),
        start_time=start,
        end_time=time_or_none(t.get("end"), "time.end", SOURCE),
        elapsed_s=num(t.get("elapsed"), "time.elapsed", SOURCE) or 0,
        time_limit=num(t.get("limit"), "time.limit", SOURCE),
    )


def _job(rec: dict[str, Any], with_steps: bool) -> JobRecord:
    job_id = num(rec.get("job_id"), "job_id", SOURCE)
    if job_id is None:
        raise ParseError(SOURCE, "a job has no job_id")
    array = _obj(rec, "array")
    array_job = num(array.get("job_id"), "array.job_id", SOURCE) or None
    task = num(array.get("task_id"), "array.task_id", SOURCE) if array_job else None
    het = _obj(rec, "het")
    het_job = num(het.get("job_id"), "het.job_id", SOURCE) or None
    het_off = num(het.get("job_offset"), "het.job_offset", SOURCE) if het_job else None
    if array_job and task is not None:
        display = f"{array_job}_{task}"
    elif het_job and het_off is not None:
        display = f"{het_job}+{het_off}"
    else:
        display = str(job_id)
    state = _obj(rec, "state")
    code, sig = _exit(rec.get("exit_code"), "exit_code")
    derived, _ = _exit(rec.get("derived_exit_code"), "derived_exit_code")
    tres = _obj(rec, "tres")
    nodes = text(rec.get("nodes"), "nodes", SOURCE)
    steps = tuple(_step(s, i) for i, s in enumerate(rec.get("steps") or ())) if with_steps else ()
    return JobRecord(
        job_id=display, job_id_raw=job_id, name=text(rec.get("name"), "name", SOURCE),
        user=text(rec.get("user"), "user", SOURCE), account=text(rec.get("account"), "account", SOURCE),
        partition=text(rec.get("partition"), "partition", SOURCE), qos=text(rec.get("qos"), "qos", SOURCE),
        state=_state(state.get("current")),
        reason=_reason(state.get("reason")),
        exit_code=code, exit_signal=sig, derived_exit_code=derived, **_times(rec),
        nodes=() if nodes in ("", "None assigned") else expand_nodes(nodes, "nodes", SOURCE),
        node_count=num(rec.get("allocation_nodes"), "allocation_nodes", SOURCE) or 0,
        alloc_tres=tres_list(tres.get("allocated"), "tres.allocated"),
        req_tres=tres_list(tres.get("requested"), "tres.requested"),
        array_job_id=array_job, array_task_id=task, steps=steps,
    )


def _reason(value: Any) -> str:
    r = text(value, "state.reason", SOURCE)
    return "" if r in ("None", "(null)") else r


def _step_id(step: dict[str, Any]) -> tuple[str, str]:
    ident = step.get("id")
    name = text(step.get("name"), "step.name", SOURCE)
    if isinstance(ident, str):
        return ident.partition(".")[2] or ident, name
    if isinstance(ident, dict):  # 23.02+: {"job_id": N, "step_id": "batch"|{"number": 0}}
        sid = ident.get("step_id")
        if isinstance(sid, dict):
            sid = num(sid, "step.id.step_id", SOURCE)
        return text(sid, "step.id.step_id", SOURCE), name
    return text(ident, "step.id", SOURCE), name


def _step(rec: Any, i: int) -> StepRecord:
    rec = get_record(rec, "step", i, SOURCE)
    step_id, name = _step_id(_obj(rec, "step"))
    t = _obj(rec, "time")
    total = _obj(t, "total")
    cpu = None
    if total:
        secs = num(total.get("seconds"), "time.total.seconds", SOURCE) or 0
        usec = num(total.get("microseconds"), "time.total.microseconds", SOURCE) or 0
        cpu = secs + usec / 1e6
    req = _obj(_obj(rec, "tres"), "requested")
    code, sig = _exit(rec.get("exit_code"), "step.exit_code")
    return StepRecord(
        step_id=step_id, name=name, state=_state(rec.get("state")), exit_code=code, exit_signal=sig,
        elapsed_s=num(t.get("elapsed"), "step.time.elapsed", SOURCE) or 0, total_cpu_s=cpu,
        tres_in_max=tres_list(req.get("max"), "step.tres.requested.max", mem_bytes=True),
        tres_in_ave=tres_list(req.get("average"), "step.tres.requested.average", mem_bytes=True),
    )
