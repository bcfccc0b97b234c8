"""A folder of saved Slurm text as a recording: ``scontrol show node`` (``-d`` too),
``scontrol show job``, ``squeue``'s default table and ``scontrol show partition``
text, as operators save them, replayed as a snapshot.

Each record is turned into the 22.05 JSON record of the same command (plain
strings, the values as Slurm printed them) and read by the JSON readers, so a
text record has the same per-record fault isolation as a JSON one: a node whose
``Gres=`` cannot be read stays with its GPUs unknown, a record that cannot be
read at all is left out and named. Nothing is filled in that the text does not
say: a squeue row gives no CPU count, and an array task's own job id is not in
squeue's table, so such a row is left out and named (save ``scontrol show job``).
Pure: takes the files' text, returns bytes; the replay backend does the I/O.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from cockpit.backends.slurm_text import duration_minutes, first_values, scontrol_records
from cockpit.backends.slurm_textcap import read_capture
from cockpit.errors import ParseError
from cockpit.models.unread import unread

# What each kind of capture stands in for, among the recorded outputs (slurm_cli.COMMANDS).
KEY_OF = {"scontrol show node": "scontrol-nodes.json", "scontrol show job": "squeue.json",
          "squeue": "squeue.json", "scontrol show partition": "scontrol-partitions.txt",
          "sinfo": "scontrol-nodes.json", "sinfo -N": "scontrol-nodes.json", "sinfo -R": "scontrol-nodes.json"}
# sinfo's short words for DRAIN + a base state (sinfo(1), NODE STATE CODES)
_SINFO_STATE = {"drain": "drained", "drain*": "drained*", "drng": "draining", "drng*": "draining*"}
# A table without a GRES column does not say what GPUs its nodes have: never 0 GPUs, but unknown
# (the JSON reader names the field it cannot read as text; see cockpit.models.unread).
_NO_GRES = {"not saved": "this sinfo table has no GRES column"}
_NO_GRES_USED = {"not saved": "this sinfo table has no GRES_USED column: the GPUs in use are not known"}
# squeue's compact state codes (squeue(1), JOB STATE CODES)
_ST = {"PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "CD": "COMPLETED", "CA": "CANCELLED", "F": "FAILED",
       "TO": "TIMEOUT", "NF": "NODE_FAIL", "PR": "PREEMPTED", "BF": "BOOT_FAIL", "DL": "DEADLINE",
       "OOM": "OUT_OF_MEMORY", "S": "SUSPENDED", "CF": "CONFIGURING", "RQ": "REQUEUED", "RS": "RESIZING",
       "RV": "REVOKED", "SI": "SIGNALING", "SE": "SPECIAL_EXIT", "SO": "STAGE_OUT", "ST": "STOPPED", "RD": "RESV_DEL_HOLD",
       "RF": "REQUEUE_FED", "RH": "REQUEUE_HOLD"}
_REASON_TAIL = re.compile(r"^(.*?)\s*\[([^@\]]+)@([0-9T:-]+)\]\s*$")  # "Kill task failed [root@2024-01-25T15:12:23]"
_NULL = ("(null)", "N/A", "None", "Unknown")


def _plain(value: str | None) -> str:
    return "" if value is None or value in _NULL else value


def _epoch(value: str | None) -> Any:
    # scontrol prints local time; the replaying machine's zone is the best reading of it
    v = _plain(value)
    if not v:
        return None
    try:
        return int(time.mktime(time.strptime(v, "%Y-%m-%dT%H:%M:%S")))
    except (ValueError, OverflowError):
        return v  # left as text: the JSON reader names it as not a number


def node_record(d: dict[str, str]) -> dict[str, Any]:
    """``scontrol show node`` key/values -> a 22.05 ``scontrol show node --json`` node."""
    reason, user, when = _plain(d.get("Reason")), "", None
    m = _REASON_TAIL.match(reason)
    if m:
        reason, user, when = m.group(1), m.group(2), _epoch(m.group(3))
    feats = _plain(d.get("ActiveFeatures") or d.get("AvailableFeatures"))
    return {"name": d.get("NodeName", ""), "state": [w for w in d.get("State", "").split("+") if w],
            "reason": reason, "reason_set_by_user": user, "reason_changed_at": when,
            "cpus": d.get("CPUTot"), "alloc_cpus": d.get("CPUAlloc"), "real_memory": d.get("RealMemory"),
            "alloc_memory": d.get("AllocMem"), "partitions": _plain(d.get("Partitions")),
            "gres": _plain(d.get("Gres")), "gres_used": _plain(d.get("GresUsed")), "tres": _plain(d.get("CfgTRES")),
            "address": _plain(d.get("NodeAddr")), "features": feats, "boot_time": _epoch(d.get("BootTime"))}


def _job_gres(rec: list[list[tuple[str, str]]]) -> list[str]:
    # ``scontrol -d``: one "Nodes=node[01-02] CPU_IDs=.. GRES=gpu:h100:2(IDX:0-1)" line per node set
    from cockpit import hostlist

    from cockpit.errors import CockpitError

    out: list[Any] = []
    for line in rec:
        d = dict(line)
        if "Nodes" in d and "GRES" in d:
            try:
                out += [d["GRES"]] * len(hostlist.expand(d["Nodes"]))
            except CockpitError:
                return [{"Nodes": d["Nodes"]}]  # the JSON reader names it: the job's GPUs are unknown
    return out


def job_record(rec: list[list[tuple[str, str]]]) -> dict[str, Any]:
    """``scontrol [-d] show job`` lines -> a 22.05 ``squeue --json`` job."""
    d = first_values(rec)
    code, _, sig = d.get("ExitCode", "").partition(":")
    limit = d.get("TimeLimit", "")
    return {"job_id": d.get("JobId"), "name": d.get("JobName", ""), "user_name": d.get("UserId", "").split("(")[0],
            "account": _plain(d.get("Account")), "partition": d.get("Partition", ""),
            "job_state": d.get("JobState"), "state_reason": d.get("Reason", ""),
            "nodes": _plain(d.get("NodeList")), "node_count": d.get("NumNodes", "").split("-")[0],
            "cpus": d.get("NumCPUs"), "tres_per_node": _plain(d.get("TresPerNode")).replace("gres:", "gres/"),
            "gres_detail": _job_gres(rec) or None,
            **_array(d),
            "het_job_id": d.get("HetJobId"), "het_job_offset": d.get("HetJobOffset"),
            "submit_time": _epoch(d.get("SubmitTime")), "start_time": _epoch(d.get("StartTime")),
            "end_time": _epoch(d.get("EndTime")), "time_limit": _minutes(limit),
            "command": _plain(d.get("Command")), "current_working_directory": _plain(d.get("WorkDir")),
            "standard_output": _plain(d.get("StdOut")), "standard_error": _plain(d.get("StdErr")),
            "exit_code": (int(code) << 8 | int(sig)) if code.isdecimal() and sig.isdecimal() else d.get("ExitCode"),
            "priority": d.get("Priority")}


def _array(d: dict[str, str]) -> dict[str, Any]:
    # ArrayTaskId=5-9%2 is a pending remainder; a number is one task (also a last pending
    # one: 22.05's and 24.11's JSON say task 4 there, 26.05's remainder "4", for the same text)
    task = d.get("ArrayTaskId")
    remainder = task is not None and not task.isdecimal()
    return {"array_job_id": d.get("ArrayJobId"), "array_task_id": None if remainder else task,
            "array_task_string": task if remainder else None}


def _minutes(value: str) -> Any:
    try:
        return duration_minutes(value)
    except ParseError:
        return value  # named by the JSON reader


def squeue_job(row: dict[str, str], warnings: list[str], source: str) -> dict[str, Any] | None:
    """One row of squeue's default table -> a 22.05 job; None (named) for an array task,
    whose own job id the table does not show."""
    jid = row.get("JOBID", "")
    head, us, tail = jid.partition("_")
    if us and not tail.startswith("["):
        warnings.append(unread(source, "job", jid, "squeue's table does not show an array task's own job id "
                                                   "(save scontrol show job)"))
        return None
    where = row.get(next((k for k in row if k.startswith("NODELIST")), ""), "")
    pending = where.startswith("(") and where.endswith(")")
    return {"job_id": head if us else jid, "partition": row.get("PARTITION", ""), "name": row.get("NAME", ""),
            "user_name": row.get("USER", ""), "job_state": _ST.get(row.get("ST", ""), row.get("ST")),
            "state_reason": where[1:-1] if pending else "", "nodes": "" if pending else where,
            "node_count": row.get("NODES"), "array_job_id": head if us else None,
            "array_task_string": tail[1:-1] if us else None}


def _sinfo_rows(cap: Any, nodes: dict[str, dict[str, Any]], warnings: list[str], source: str) -> None:
    """sinfo rows (one per partition and node set) merged into one record per node."""
    from cockpit import hostlist
    from cockpit.errors import CockpitError

    for row in cap.rows:
        where = row.get("NODELIST") or row.get("HOSTNAMES") or ""
        try:
            names = hostlist.expand(where)
        except CockpitError as exc:
            warnings.append(unread(source, "node", where[:80] or "#?", f"bad node list ({exc})"))
            continue
        for n in names:
            rec = nodes.setdefault(n, {"name": n, "partitions": [], "gres": _NO_GRES})
            _sinfo_fields(cap.kind, row, rec)


def _sinfo_fields(kind: str, row: dict[str, str], rec: dict[str, Any]) -> None:
    if kind == "sinfo -R":  # REASON USER TIMESTAMP NODELIST: the reason of a node listed elsewhere
        rec.update(reason=row.get("REASON", ""), reason_set_by_user=row.get("USER", ""),
                   reason_changed_at=_epoch(row.get("TIMESTAMP")))
        return
    state = row.get("STATE") or row.get("STATELONG") or row.get("STATECOMPACT")
    if state:
        rec["state"] = [_SINFO_STATE.get(state.lower(), state)]
    part = (row.get("PARTITION") or "").rstrip("*")
    if part and part not in rec["partitions"]:
        rec["partitions"].append(part)
    for col, key in (("CPUS", "cpus"), ("MEMORY", "real_memory"), ("GRES", "gres"), ("GRES_USED", "gres_used")):
        if row.get(col) is not None:
            rec[key] = _plain(row[col])
    if "GRES_USED" not in row and rec.get("gres") not in (_NO_GRES, ""):
        rec["gres_used"] = _NO_GRES_USED  # GPUs but not their use: never "0 in use"
    if row.get("REASON") not in (None, "none") and not rec.get("reason"):
        rec["reason"] = row["REASON"]


def records_of(name: str, text: str, out: dict[str, list[Any]], warnings: list[str]) -> None:
    """Add the records of one saved file (``name``) to ``out`` (by recorded key).
    Raises ParseError for a text that is none of the kinds read here."""
    cap = read_capture(text)
    key = KEY_OF.get(cap.kind)
    if key is None:
        raise ParseError(name, f"{cap.kind} text is not part of a snapshot (read: {', '.join(KEY_OF)})")
    # an scontrol record that cannot be read is left out, named; the others are read
    warnings.extend(unread(name, cap.kind.removeprefix("scontrol show "), rec, why) for rec, why in cap.unread)
    if cap.kind == "scontrol show node":
        out.setdefault(key, []).extend(node_record(r) for r in cap.rows)
    elif cap.kind == "scontrol show job":
        out.setdefault("scontrol jobs", []).extend(job_record(r) for r in scontrol_records(text, name)[0])
    elif cap.kind.startswith("sinfo"):
        _sinfo_rows(cap, out.setdefault("sinfo nodes", [{}])[0], warnings, name)
    elif cap.kind == "squeue":
        jobs = [squeue_job(r, warnings, name) for r in cap.rows]
        out.setdefault("squeue jobs", []).extend(j for j in jobs if j is not None)
        warnings.extend(unread(name, "job", "#?", f"row {line[:60]!r} does not fit the header") for line in cap.skipped)
    else:
        out.setdefault(key, []).append(text)


def recording(files: dict[str, str]) -> tuple[dict[str, bytes], list[str]]:
    """{recorded key: bytes} from {file name: text}, and the warnings: files that are
    not Slurm text of a snapshot (named, with how they start), rows left out."""
    found: dict[str, list[Any]] = {}
    warnings: list[str] = []
    for name, text in sorted(files.items()):
        try:
            records_of(name, text, found, warnings)
        except ParseError as exc:
            warnings.append(f"--replay: {name} not read: {exc.detail}")
    out: dict[str, bytes] = {}
    # scontrol show node says more than sinfo (GPUs in use, reasons whole): it wins where both were saved
    nodes = found.get("scontrol-nodes.json") or [r for r in found.get("sinfo nodes", [{}])[0].values() if "state" in r]
    if nodes:
        out["scontrol-nodes.json"] = json.dumps({"nodes": _once(nodes, "name")}).encode()
    # scontrol show job says more than squeue's table (CPUs, GPUs, times): it wins where both were saved
    jobs = found.get("scontrol jobs") or found.get("squeue jobs")
    if jobs:
        out["squeue.json"] = json.dumps({"jobs": _once(jobs, "job_id")}).encode()
    if "scontrol-partitions.txt" in found:
        out["scontrol-partitions.txt"] = "\n".join(found["scontrol-partitions.txt"]).encode()
    return out, warnings


def _once(recs: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    # the same node or job saved in two files is one record (the first), never "the same id twice"
    seen: dict[Any, dict[str, Any]] = {}
    for r in recs:
        seen.setdefault(r.get(key), r)
    return list(seen.values())


def version_of(files: dict[str, str]) -> str:
    """The Slurm version a saved ``scontrol show node`` prints (``Version=24.11.5``); "" if none."""
    for text in files.values():
        m = re.search(r"\bVersion=(\d+\.\d+\.\d+)", text)
        if m:
            return m.group(1)
    return ""
