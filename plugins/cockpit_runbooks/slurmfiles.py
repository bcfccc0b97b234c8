"""Saved Slurm outputs for post-mortems: ``seff``, ``sacct`` (default table,
``--parsable2`` with a header, ``--json``), ``sshare``, ``sdiag`` (text, ``--json``,
25.11+ ``/metrics/scheduler``), ``scontrol show reservation`` (text or ``--json``),
and through cockpit's text readers ``sinfo`` (default, ``-N -l``, ``-R``, ``-o``),
``squeue``, ``sprio``, ``scontrol show node|job|partition`` and slurmctld/slurmd
log excerpts. Recorded forms: tests/data/slurm-postmortem/SOURCES.md and
tests/data/slurm-text/SOURCES.md. Pure parsing; every parser raises ParseError
naming the format it took the text for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from cockpit.plugins.api import METRICS_INDEX, ParseError, read_capture, read_sched_stats, scan_log

_SEFF_KEY = re.compile(r"^[#\s]*([A-Za-z][A-Za-z /-]*?):\s+(.*?)\s*$")
_RES_START = re.compile(r"^ReservationName=")
_KV = re.compile(r"(\w+)=(\S*)")


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job or step: from seff, sacct or sacct --json."""

    job_id: str
    state: str  # COMPLETED, FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, CANCELLED ...
    exit_code: str | None = None  # "1" (seff), "1:0" (sacct), "ERROR 1" (json)
    nodes: str | None = None
    name: str | None = None
    extra: tuple[tuple[str, str], ...] = ()  # efficiency lines and other fields, verbatim


@dataclass(frozen=True, slots=True)
class Reservation:
    name: str
    nodes: str
    flags: tuple[str, ...]
    start: str
    end: str
    state: str | None = None


@dataclass
class SlurmFile:
    kind: str  # seff, sacct, sacct --json, sshare, sdiag --json, reservations
    jobs: list[JobRecord] = field(default_factory=list)
    reservations: list[Reservation] = field(default_factory=list)
    shares: list[dict[str, str]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    cut: int = 0  # table rows that end before their last column (a cut copy)
    sched: Any = None  # SchedStats of an sdiag (text, --json or /metrics)
    capture: Any = None  # Capture of a sinfo/squeue/sprio/scontrol show table
    log: Any = None  # LogScan of a slurmctld/slurmd excerpt


def _number(v: Any) -> Any:
    """data_parser {set, infinite, number} -> number (None when not set)."""
    if isinstance(v, dict) and "number" in v:
        return v["number"] if v.get("set", True) else None
    return v


def parse_seff(text: str) -> SlurmFile:
    got: dict[str, str] = {}
    for line in text.splitlines():
        m = _SEFF_KEY.match(line)
        if m:
            got.setdefault(m.group(1).strip(), m.group(2))
    if "Job ID" not in got or "State" not in got:
        raise ParseError("seff", "no 'Job ID:' and 'State:' lines")
    st = re.match(r"(\S+)(?: \(exit code (-?\d+)\))?", got["State"])
    extra = tuple((k, v) for k, v in got.items() if k not in ("Job ID", "State"))
    return SlurmFile("seff", [JobRecord(got["Job ID"], st.group(1) if st else got["State"], st.group(2) if st else None,
                                        extra=extra)])


def _table(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """A header + dashes table (sacct, sshare): columns cut at the dash runs' positions."""
    for i in range(1, len(lines)):
        if re.fullmatch(r"[- ]+", lines[i].rstrip()) and "-" in lines[i]:
            spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[i])]
            head = [lines[i - 1][a:b].strip() for a, b in spans]
            rows = [[ln[a:b].strip() for a, b in spans] for ln in lines[i + 1:] if ln.strip()]
            return head, rows
    raise ValueError("no header/dashes line")


# a command line pasted above -P -n output: "$ sacct ... --format=JobID,State" / "--format JobID,..." / "-o ..."
_SACCT_CMD = re.compile(r"^\s*(?:\S*[$#]\s*)?sacct\b.*?(?:--format[= ]|-o\s*)['\"]?([\w%.,]+)", re.M)


def _format_above(lines: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """The --format list of a command line, then the |-rows below it (``-P -n``, no header)."""
    for i, line in enumerate(lines):
        m = _SACCT_CMD.match(line)
        if m:
            head = [re.sub(r"%\d+$", "", f) for f in m.group(1).split(",") if f]
            rows = [ln.split("|") for ln in lines[i + 1:] if "|" in ln]
            if rows and all(len(r) == len(head) for r in rows):
                return head, rows
    return None


def _no_job_id(head: list[str], rows: list[list[str]]) -> SlurmFile:
    """A table without a JobID column: one record per row, named by its row (and JobName)."""
    out = []
    for i, r in enumerate(rows, 1):
        rec = dict(zip(head, r))
        if not rec.get("State"):
            continue
        name = rec.get("JobName") or None
        out.append(JobRecord(f"row {i}" + (f" ({name})" if name else ""), rec["State"].split()[0], rec.get("ExitCode"),
                             rec.get("NodeList"), name))
    return SlurmFile("sacct (no JobID)", out)


def parse_sacct(text: str) -> SlurmFile:
    lines = text.splitlines()
    pipes = [ln for ln in lines if "|" in ln]
    above = None if pipes and "JobID" in pipes[0].split("|") else _format_above(lines)
    if above is not None:
        head, rows = above
        head = ["JobID" if h == "JobIDRaw" else h for h in head]
        if "State" not in head:
            raise ParseError("sacct", f"the --format list above the rows has no State: {','.join(head)[:80]!r}")
        if "JobID" not in head:
            return _no_job_id(head, rows)
    elif pipes and "JobID" in pipes[0].split("|"):
        head = pipes[0].split("|")
        rows = [ln.split("|") for ln in pipes[1:]]
    else:
        try:
            head, rows = _table(lines)
        except ValueError:
            raise ParseError("sacct", "no header line with JobID (a table, or --parsable2 without --noheader), "
                             "and no sacct --format line above the rows") from None
    if "JobID" not in head and "State" in head:
        return _no_job_id(head, rows)
    if "JobID" not in head or "State" not in head:
        raise ParseError("sacct", f"the header has no JobID/State column: {' '.join(head)[:80]!r}")
    out = []
    for r in rows:
        rec = dict(zip(head, r))
        out.append(JobRecord(rec["JobID"], rec["State"].split()[0] if rec.get("State") else "?", rec.get("ExitCode"),
                             rec.get("NodeList"), rec.get("JobName"),
                             tuple((k, v) for k, v in rec.items() if k not in ("JobID", "State", "ExitCode", "NodeList", "JobName") and v)))
    return SlurmFile("sacct", out)


def _json_jobs(doc: dict) -> SlurmFile:
    out = []
    for j in doc.get("jobs") or []:
        if not isinstance(j, dict):
            continue
        st = j.get("state")
        state = (st.get("current") if isinstance(st, dict) else st) or ["?"]
        state = state[0] if isinstance(state, list) and state else str(state)
        ec = j.get("exit_code")
        code = None
        if isinstance(ec, dict):
            status = ec.get("status") or []
            # 23.02's data_parser v0.0.39 has one word here ("SUCCESS"), later ones a list of them
            words = [status] if isinstance(status, str) else [str(w) for w in status if isinstance(w, str)]
            code = f"{' '.join(words)} {_number(ec.get('return_code'))}".strip()
        out.append(JobRecord(str(j.get("job_id", "?")), str(state), code, j.get("nodes"), j.get("name")))
    return SlurmFile("sacct --json", out)


def _json_reservations(doc: dict) -> SlurmFile:
    out = []
    for r in doc.get("reservations") or []:
        out.append(Reservation(str(r.get("name")), str(r.get("node_list") or ""), tuple(r.get("flags") or ()),
                               str(_number(r.get("start_time"))), str(_number(r.get("end_time")))))
    return SlurmFile("reservations", reservations=out)


def parse_reservations(text: str) -> SlurmFile:
    """``scontrol show reservation`` text: one record per ``ReservationName=`` line."""
    recs: list[dict[str, str]] = []
    for line in text.splitlines():
        if _RES_START.match(line.strip()):
            recs.append({})
        if recs:
            recs[-1].update(_KV.findall(line))
    if not recs:
        raise ParseError("scontrol show reservation", "no 'ReservationName=' record")
    return SlurmFile("reservations", reservations=[
        Reservation(r.get("ReservationName", "?"), r.get("Nodes", ""), tuple(f for f in r.get("Flags", "").split(",") if f),
                    r.get("StartTime", "?"), r.get("EndTime", "?"), r.get("State")) for r in recs])


def parse_sshare(text: str) -> SlurmFile:
    try:
        head, rows = _table(text.splitlines())
    except ValueError:
        raise ParseError("sshare", "no header/dashes line") from None
    if "Account" not in head or "FairShare" not in head:
        raise ParseError("sshare", f"the header has no Account/FairShare column: {' '.join(head)[:80]!r}")
    recs = [dict(zip(head, r)) for r in rows]
    # a row that stops before the column ahead of FairShare was cut there; an account row of the
    # fair-tree algorithm (22.05+) has its usage but no FairShare of its own, and is whole
    before = head[head.index("FairShare") - 1]
    whole = [r for r in recs if r.get("FairShare") or r.get(before)]
    return SlurmFile("sshare", shares=whole, cut=len(recs) - len(whole))


def parse_json(text: str) -> SlurmFile:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError("Slurm JSON", str(exc)) from None
    if not isinstance(doc, dict):
        raise ParseError("Slurm JSON", "the top level is not an object")
    if isinstance(doc.get("statistics"), dict):
        stats = {k: _number(v) for k, v in doc["statistics"].items() if not isinstance(v, list)}
        return SlurmFile("sdiag --json", stats=stats, sched=read_sched_stats(text))
    if "reservations" in doc:
        return _json_reservations(doc)
    if "jobs" in doc:
        return _json_jobs(doc)
    raise ParseError("Slurm JSON", "neither statistics (sdiag), reservations nor jobs (sacct)")


def read(text: str) -> SlurmFile:
    """Recognise and parse a saved Slurm output. Raises ParseError naming what it took it for."""
    s = text.lstrip()
    if s.startswith("{"):
        return parse_json(text)
    if re.search(r"^\s*ReservationName=", text, re.M):
        return parse_reservations(text)
    if re.search(r"^[#\s]*Job ID:", text, re.M):
        return parse_seff(text)
    if re.search(r"\bFairShare\b", text) and re.search(r"\bAccount\b", text):
        return parse_sshare(text)
    if re.search(r"\bJobID\b", text) or _SACCT_CMD.search(text) or (
            re.search(r"^[\s\w%]*\bState\b", text, re.M) and re.search(r"\b(ExitCode|Elapsed|JobName)\b", text)
            and re.search(r"^[- ]*-{4,}[- ]*$", text, re.M)):
        return parse_sacct(text)
    return _read_text(text)


def _read_text(text: str) -> SlurmFile:
    """sdiag, /metrics, the tables cockpit's text readers know, then log excerpts."""
    s = text.lstrip()
    if re.search(r"^Server thread count:", text, re.M) or \
            s.startswith(("# HELP slurm_", "# TYPE slurm_", METRICS_INDEX)):
        sched = read_sched_stats(text)
        return SlurmFile(sched.source, sched=sched)
    try:
        cap = read_capture(text)
    except ParseError as table_err:
        scan = scan_log(text)
        if scan.events or scan.daemon_lines:
            return SlurmFile("Slurm log", log=scan)
        raise ParseError("Slurm output", "not seff, sacct, sshare, sdiag, sinfo, squeue, sprio, scontrol show, "
                         f"nor a slurmctld/slurmd log ({table_err.detail})") from None
    return SlurmFile(cap.kind, capture=cap, cut=len(cap.skipped))
