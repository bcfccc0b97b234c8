"""Text outputs of Slurm's accounting commands -> cockpit.models.accounting.
Pure functions, no I/O; each raises only :class:`cockpit.errors.ParseError`.

Times: the queries run with ``SLURM_TIME_FORMAT=%s``, so every time is epoch
seconds; ``Unknown``/``None``/``N/A`` (never set) become None.

- ``parse_sacct_parsable(text, source) -> tuple[JobRecord, ...]`` from
  ``sacct --parsable2 --noheader -o`` :data:`SACCT_FIELDS` (allocations; step
  lines, ``123.batch``, become the job's steps).
- ``parse_events(text, source) -> tuple[NodeEvent, ...]`` from
  ``sacctmgr -n -P show event format=`` :data:`EVENT_FIELDS`.
- ``parse_sprio(text, source) -> tuple[PriorityFactors, ...]`` from
  ``sprio -h -o`` :data:`SPRIO_FORMAT`.
- ``parse_sshare(text, source) -> tuple[Share, ...]`` from ``sshare -n -P -o`` :data:`SSHARE_FIELDS`.
- ``parse_reservations(text, source) -> tuple[Reservation, ...]`` from ``scontrol show reservation``.
- ``parse_assoc_mgr(text, source) -> LimitsState`` from ``scontrol show assoc_mgr``.
- ``parse_tres(text) -> dict``, ``parse_exit(text) -> (code, signal)``,
  ``duration_seconds(text) -> float | None`` (``1-02:03:04``, ``MM:SS.mmm``).
"""

from __future__ import annotations

import re

from cockpit.backends.slurm_json_common import RECORD_ERRORS, expand_nodes, read_each, warn, why_unread
from cockpit.backends.slurm_text import read_scontrol
from cockpit.errors import ParseError
from cockpit.models.unread import unread
from cockpit.models.accounting import (
    AssocLimits, JobRecord, Limit, LimitsState, NodeEvent, PriorityFactors, QosLimits,
    Reservation, Share, StepRecord,
)

# sacct fields, in this order. JobName is last: it is the user's text and may hold the
# separator, so a line is split into len-1 fields and the rest is the name.
SACCT_FIELDS = (
    "JobID", "JobIDRaw", "User", "Account", "Partition", "QOS", "State", "ExitCode",
    "DerivedExitCode", "Submit", "Start", "End", "ElapsedRaw", "TimelimitRaw", "NNodes",
    "NodeList", "AllocTRES", "ReqTRES", "TotalCPU", "TRESUsageInMax", "TRESUsageInAve",
    "Reason", "JobName",
)
EVENT_FIELDS = ("NodeName", "TimeStart", "TimeEnd", "State", "User", "Reason")
# sprio -o: job, user, partition, priority, then the weighted factors.
SPRIO_FORMAT = "%i|%u|%r|%Y|%a|%b|%F|%J|%P|%Q|%S|%T|%N"
_SPRIO_FACTORS = ("age", "assoc", "fairshare", "jobsize", "partition", "qos", "site", "tres", "nice")
SSHARE_FIELDS = ("Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage", "FairShare")

_UNSET = frozenset({"", "Unknown", "None", "N/A", "(null)", "INVALID"})
# Slurm's TRES names carry a unit suffix in sacct: mem=2000M, gres/gpumem=80G.
_UNITS = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 ** 2, "P": 1024.0 ** 3}


def epoch(value: str, field: str, source: str) -> int | None:
    v = value.strip()
    if v in _UNSET or v == "0":
        return None
    if v.isdecimal():
        return int(v)
    raise ParseError(source, f"field {field!r} is not epoch seconds: {v[:40]!r} (SLURM_TIME_FORMAT=%s not honoured?)")


def _int(value: str, field: str, source: str) -> int | None:
    v = value.strip()
    if v in _UNSET or v.upper() in ("UNLIMITED", "INFINITE", "PARTITION_LIMIT"):
        return None
    if v.isdecimal():
        return int(v)
    raise ParseError(source, f"field {field!r} is not a number: {v[:40]!r}")


def _float(value: str, field: str, source: str) -> float | None:
    v = value.strip()
    if v in _UNSET:
        return None
    try:
        return float(v)
    except ValueError:
        raise ParseError(source, f"field {field!r} is not a number: {v[:40]!r}") from None


def parse_tres(text: str, source: str = "sacct") -> dict[str, float]:
    """A TRES string as sacct prints it -> {name: value}. Raises ParseError for an
    item that is not NAME=VALUE or a value of none of these shapes:

    - counts: ``cpu=2``, ``node=1``, ``billing=4``, ``gres/gpu=8``, ``gres/gpu:h100=8``;
    - sizes with a unit, in MB: ``mem=2000M``, ``mem=1.27G``, ``fs/disk=15.5K``
      (a bare number in step usage is what sacct printed: kept as is);
    - durations, in seconds: step usage prints CPU time, ``cpu=00:00:00``,
      ``cpu=1-02:03:04``, ``cpu=00:01.234``;
    - unset: ``energy=N/A``, ``gres/gpuutil=`` (left out, never 0).
    """
    out: dict[str, float] = {}
    for item in text.split(","):
        item = item.strip()
        if not item or item in _UNSET:
            continue
        name, eq, val = item.partition("=")
        if not eq or not name:
            raise ParseError(source, f"TRES item is not NAME=VALUE: {item[:40]!r}")
        value = _tres_value(name, val.strip(), source)
        if value is not None:
            out[name] = value
    return out


def _tres_value(name: str, val: str, source: str) -> float | None:
    if val in _UNSET:
        return None
    if ":" in val:
        try:
            return duration_seconds(val, source)
        except ParseError:
            raise ParseError(source, f"TRES {name!r} is neither a number nor a duration: {val[:40]!r}") from None
    scale = 1.0
    if val[-1:].upper() in _UNITS:
        scale, val = _UNITS[val[-1:].upper()], val[:-1]
    try:
        number = float(val) * scale
    except ValueError:
        raise ParseError(source, f"TRES {name!r} is not a number: {val[:40]!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ParseError(source, f"TRES {name!r} is not a number: {val[:40]!r}")
    return number


def parse_exit(text: str, source: str = "sacct") -> tuple[int | None, int | None]:
    """``3:0`` -> (3, None), ``0:15`` -> (0, 15); empty -> (None, None)."""
    v = text.strip()
    if v in _UNSET:
        return None, None
    code, colon, sig = v.partition(":")
    if not code.isdecimal() or (colon and not sig.isdecimal()):
        raise ParseError(source, f"bad exit code {v[:20]!r}")
    return int(code), (int(sig) or None) if colon else None  # signal 0: none


def duration_seconds(text: str, source: str = "sacct") -> float | None:
    """``[D-]HH:MM:SS[.mmm]`` or ``MM:SS.mmm`` (sacct's TotalCPU) -> seconds."""
    v = text.strip()
    if v in _UNSET or v.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days, dash, rest = v.partition("-")
    if not dash:
        days, rest = "0", v
    parts = rest.split(":")
    try:
        nums = [float(p) for p in parts]
        d = int(days)
    except ValueError:
        raise ParseError(source, f"bad duration {v[:30]!r}") from None
    if len(nums) > 3 or any(n < 0 for n in nums):
        raise ParseError(source, f"bad duration {v[:30]!r}")
    while len(nums) < 3:
        nums.insert(0, 0.0)
    return d * 86400 + nums[0] * 3600 + nums[1] * 60 + nums[2]


def _state(value: str) -> str:
    # "CANCELLED by 0" -> CANCELLED; a state with a "+" flag keeps its first word.
    return value.strip().split(" ", 1)[0].split("+", 1)[0].upper() or "UNKNOWN"


_ARRAY_ID = re.compile(r"^(\d+)_(\d+)$")


def _split(line: str, n: int, source: str) -> list[str]:
    parts = line.split("|", n - 1)
    if len(parts) != n:
        raise ParseError(source, f"expected {n} fields, got {len(parts)}: {line[:80]!r}")
    return parts


_JOB_ID_START = re.compile(r"^\d+(?:[_+.]|\||$)")


def _records(text: str, n: int, starts) -> list[str]:
    """Logical lines: the last field (a job name, a reason) is free text and may hold a
    newline, which sacct/sacctmgr print as is; a physical line that does not start a
    record (n fields, ``starts`` its first one) continues the previous record's last field."""
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip() and not out:
            continue
        if out and (line.count("|") < n - 1 or not starts(line)):
            out[-1] += "\n" + line
        elif line.strip():
            out.append(line)
    return out


def parse_sacct_parsable(text: str, source: str = "sacct --parsable2",
                         warnings: list[str] | None = None) -> tuple[JobRecord, ...]:
    """Jobs (with their steps) from ``sacct -P -n -o`` :data:`SACCT_FIELDS`. Raises
    ParseError; with a ``warnings`` list, a line that cannot be read is one warning
    naming its JobID and every other line stays. A JobID printed again (``-D``: each run
    of a requeued job) is one more record; steps belong to the run printed before them."""
    jobs: dict[str, dict] = {}  # JobID -> its latest run, where its steps go
    order: list[dict] = []
    for i, line in enumerate(_records(text, len(SACCT_FIELDS), _JOB_ID_START.match)):
        try:
            _sacct_line(line, jobs, order, source)
        except RECORD_ERRORS as exc:
            if warnings is None:
                raise
            name = line.split("|", 1)[0].strip()[:40] or f"#{i + 1}"
            warn(warnings, unread(source, "sacct record", name, why_unread(exc, "sacct record", name)))
    return tuple(JobRecord(**{**rec, "steps": tuple(rec["steps"])}) for rec in order)


def _sacct_line(line: str, jobs: dict[str, dict], order: list[dict], source: str) -> None:
    f = dict(zip(SACCT_FIELDS, _split(line, len(SACCT_FIELDS), source)))
    job_id = f["JobID"].strip()
    base, dot, step = job_id.partition(".")
    if dot:
        owner = jobs.get(base)
        if owner is not None:
            owner["steps"].append(_step(step, f, source))
        return
    code, sig = parse_exit(f["ExitCode"], source)
    derived, _ = parse_exit(f["DerivedExitCode"], source)
    m = _ARRAY_ID.match(job_id)
    rec = dict(
        job_id=job_id, job_id_raw=_int(f["JobIDRaw"].split(".")[0], "JobIDRaw", source) or 0,
        name=f["JobName"], user=f["User"], account=f["Account"], partition=f["Partition"],
        qos=f["QOS"], state=_state(f["State"]), reason="" if f["Reason"] in _UNSET else f["Reason"],
        exit_code=code, exit_signal=sig, derived_exit_code=derived,
        submit_time=epoch(f["Submit"], "Submit", source), start_time=epoch(f["Start"], "Start", source),
        end_time=epoch(f["End"], "End", source), elapsed_s=_int(f["ElapsedRaw"], "ElapsedRaw", source) or 0,
        time_limit=_int(f["TimelimitRaw"], "TimelimitRaw", source),
        nodes=() if f["NodeList"] in _UNSET or f["NodeList"] == "None assigned"
        else expand_nodes(f["NodeList"], "NodeList", source),
        node_count=_int(f["NNodes"], "NNodes", source) or 0,
        alloc_tres=parse_tres(f["AllocTRES"], source), req_tres=parse_tres(f["ReqTRES"], source),
        array_job_id=int(m.group(1)) if m else None, array_task_id=int(m.group(2)) if m else None,
        steps=[],
    )
    order.append(rec)
    jobs[job_id] = rec


def _step(step_id: str, f: dict[str, str], source: str) -> StepRecord:
    code, sig = parse_exit(f["ExitCode"], source)
    return StepRecord(
        step_id=step_id, name=f["JobName"], state=_state(f["State"]), exit_code=code, exit_signal=sig,
        elapsed_s=_int(f["ElapsedRaw"], "ElapsedRaw", source) or 0,
        total_cpu_s=duration_seconds(f["TotalCPU"], source),
        tres_in_max=parse_tres(f["TRESUsageInMax"], source), tres_in_ave=parse_tres(f["TRESUsageInAve"], source),
    )


def parse_events(text: str, source: str = "sacctmgr show event",
                 warnings: list[str] | None = None) -> tuple[NodeEvent, ...]:
    """Node events from ``sacctmgr -n -P show event format=`` :data:`EVENT_FIELDS`; cluster
    events (no node name) are left out. Raises ParseError; with a ``warnings`` list an
    event that cannot be read is one warning naming its node."""
    n = len(EVENT_FIELDS)
    # A record's second field is its start time (epoch seconds); a reason's next line is not.
    starts = lambda line: (line.split("|") + ["", ""])[1].strip().isdecimal()  # noqa: E731
    lines = [{"line": line, "name": line.split("|", 1)[0].strip()} for line in _records(text, n, starts)]
    found = read_each(lines, "node event", source, lambda r: _event(r["line"], n, source), warnings)
    return tuple(e for e in found if e is not None)


def _event(line: str, n: int, source: str) -> NodeEvent | None:
    f = dict(zip(EVENT_FIELDS, _split(line, n, source)))
    node = f["NodeName"].strip()
    if not node:
        return None
    start = epoch(f["TimeStart"], "TimeStart", source)
    if start is None:
        raise ParseError(source, f"event of {node} has no start: {line[:80]!r}")
    user = f["User"].strip()
    return NodeEvent(node=node, start=start, end=epoch(f["TimeEnd"], "TimeEnd", source),
                     state=f["State"].strip().upper(), reason=f["Reason"],
                     user=user.split("(", 1)[0] if user not in _UNSET else "")


def parse_sprio(text: str, source: str = "sprio") -> tuple[PriorityFactors, ...]:
    """Priority factors from ``sprio -h -o`` :data:`SPRIO_FORMAT`. Raises ParseError."""
    out = []
    n = SPRIO_FORMAT.count("|") + 1
    for line in text.splitlines():
        if not line.strip() or line.startswith("Unable to find jobs"):
            continue  # sprio says so (exit 0) for a job that is not eligible yet
        f = [p.strip() for p in _split(line, n, source)]
        job = _int(f[0], "JOBID", source)
        if job is None:
            raise ParseError(source, f"no job id: {line[:80]!r}")
        factors = {k: v for k, raw in zip(_SPRIO_FACTORS, f[4:])
                   if (v := _float(raw, k, source)) is not None}
        out.append(PriorityFactors(job_id=job, user=f[1], partition=f[2],
                                   priority=_float(f[3], "PRIORITY", source) or 0.0, factors=factors))
    return tuple(out)


def parse_sshare(text: str, source: str = "sshare") -> tuple[Share, ...]:
    """Fair share from ``sshare -n -P -o`` :data:`SSHARE_FIELDS`. Raises ParseError."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        f = dict(zip(SSHARE_FIELDS, _split(line, len(SSHARE_FIELDS), source)))
        raw_shares = f["RawShares"].strip()
        out.append(Share(
            account=f["Account"].strip(), user=f["User"].strip(),
            raw_shares=None if raw_shares == "parent" else _float(raw_shares, "RawShares", source),
            norm_shares=_float(f["NormShares"], "NormShares", source),
            raw_usage=_float(f["RawUsage"], "RawUsage", source),
            effective_usage=_float(f["EffectvUsage"], "EffectvUsage", source),
            fairshare=_float(f["FairShare"], "FairShare", source),
        ))
    return tuple(out)


def _names(value: str) -> tuple[str, ...]:
    v = value.strip()
    return () if v in _UNSET else tuple(p for p in v.split(",") if p)


def parse_reservations(text: str, source: str = "scontrol show reservation",
                       warnings: list[str] | None = None) -> tuple[Reservation, ...]:
    """Reservations from ``scontrol show reservation`` (run with SLURM_TIME_FORMAT=%s).
    "No reservations in the system" gives (). Raises ParseError; with a ``warnings``
    list a reservation that cannot be read is one warning naming it."""
    return read_scontrol(text, "reservation", "ReservationName", source, _reservation, warnings)


def _reservation(name: str, rec: dict[str, str], source: str) -> Reservation:
    nodes = rec.get("Nodes", "")
    return Reservation(
        name=name, start=epoch(rec.get("StartTime", ""), "StartTime", source),
        end=epoch(rec.get("EndTime", ""), "EndTime", source),
        nodes=() if nodes in _UNSET else expand_nodes(nodes, "Nodes", source),
        flags=frozenset(f.upper() for f in _names(rec.get("Flags", ""))),
        users=_names(rec.get("Users", "")), accounts=_names(rec.get("Accounts", "")),
        partition="" if rec.get("PartitionName", "") in _UNSET else rec.get("PartitionName", ""),
        state=rec.get("State", "").upper(), tres=rec.get("TRES", ""),
    )
