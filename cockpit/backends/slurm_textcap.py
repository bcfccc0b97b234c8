"""Saved Slurm text tables an operator pastes into a ticket -> rows. Pure, no I/O.

Read here: ``sinfo`` (default, ``-l``, ``-N -l``, ``-lNe``, ``-R`` /
``--list-reasons``, custom ``-o`` with a header), ``squeue``'s default table and
``sprio`` (``-w``, ``-l``); ``scontrol show node|job|partition|reservation``
text goes through :func:`cockpit.backends.slurm_text.scontrol_records`.
Recorded forms: tests/data/slurm-text/SOURCES.md.

``read_capture(text) -> Capture`` recognises the kind from the header, raising
:class:`ParseError` with a line saying what the text looked like when it is none
of them. A row that does not fit its header costs that row: it is named in
``Capture.skipped``; an ``scontrol show`` record that cannot be read costs that
record, named in ``Capture.unread``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cockpit.backends.slurm_text import first_values, scontrol_records
from cockpit.errors import ParseError

# sinfo -l / -N -l start with the time they ran: "Thu Jun  9 22:22:36 2016"
_DATE_LINE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")
_SCONTROL_FIRST = {"NodeName": "scontrol show node", "JobId": "scontrol show job",
                   "PartitionName": "scontrol show partition", "ReservationName": "scontrol show reservation"}
# A sinfo header is sinfo's own titles: upper case, with the few signs its titles use
# ("S:C:T", "CPUS(A/I/O/T)", "NODES(A/I)"). sinfo has some 45 -o/-O fields (a site's header
# with all of them: tests/data/slurm-text/sinfo-o-gcm-*), so a table is taken for sinfo by
# its shape and a column that names nodes, not by a closed list of the titles seen so far.
_TITLE = re.compile(r"^[A-Z][A-Z0-9_:()/]*$")
_SINFO_NODE_COLS = {"NODELIST", "HOSTNAMES", "NODES", "NODE_ADDR", "NODEHOST", "NODEADDR", "PARTITION"}
# squeue's titles that sinfo never prints: an squeue -o without JOBID is still not sinfo
_SQUEUE_ONLY = {"JOBID", "ST", "NAME", "NODELIST(REASON)", "TIME_LIMIT", "TIME_LEFT", "START_TIME", "SUBMIT_TIME",
                "ARRAY_JOB_ID", "ARRAY_TASK_ID", "MIN_MEMORY", "DEPENDENCY"}
_SPRIO_COLS = {"JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE",
               "PARTITION", "QOS", "NICE", "TRES", "QOSNAME"}


@dataclass
class Capture:
    kind: str  # "sinfo", "sinfo -N", "sinfo -R", "squeue", "sprio", "scontrol show node", ...
    rows: list[dict[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # rows that did not fit the header, verbatim (cut)
    weights: dict[str, str] = field(default_factory=dict)  # sprio -w's "Weights" row
    # scontrol show records left out, each (its name, "7" of "JobId=7", why): the others are read
    unread: list[tuple[str, str]] = field(default_factory=list)


def _lines(text: str) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines() if ln.strip() and not _DATE_LINE.match(ln.strip())]


def _split_row(line: str, head: list[str], last_at: int, sep: str | None) -> list[str] | None:
    """Whitespace (or ``sep``) columns; the one column that may hold spaces (REASON,
    NODELIST(REASON)) is taken whole, where it stands (first or last). A row that
    ends before the last column's header starts has that column empty (sprio -l's
    TRES, sinfo's REASON of a node without one)."""
    n = len(head)
    if sep:
        parts = [p.strip() for p in line.split(sep)]
        if len(parts) == n + 1 and not parts[-1]:
            parts.pop()  # a row that ends with the separator (`-p` style, or a format ending in "|")
    elif head[0] == "REASON":
        parts = line.strip().rsplit(None, n - 1)
    else:
        parts = line.split(None, n - 1)
    if len(parts) == n - 1 and not sep and len(line.rstrip()) <= last_at:
        parts.append("")
    return parts if len(parts) == n else None


def _unique(head: list[str]) -> list[str]:
    """sprio's titles with a repeat kept apart: the first column under its name, the later ones
    as ``TITLE_2``...; sprio -l prints PARTITION for the job's partition, then for the partition
    factor (tests/data/slurm-text/sprio-l-*), and the name must not be lost to the number.
    (sinfo's repeated STATE, %t then %T, is one fact twice: there the later column stands.)"""
    seen: dict[str, int] = {}
    out = []
    for t in head:
        seen[t] = seen.get(t, 0) + 1
        out.append(t if seen[t] == 1 else f"{t}_{seen[t]}")
    return out


def _table(kind: str, head: list[str], body: list[str], head_line: str = "", sep: str | None = None,
           names: list[str] | None = None) -> Capture:
    cap = Capture(kind)
    last_at = head_line.rstrip().rfind(" ") + 1 if head_line else 1 << 30
    names = names or head
    for line in body:
        parts = _split_row(line, head, last_at, sep)
        if parts is None:
            cap.skipped.append(line.strip())
            continue
        cap.rows.append(dict(zip(names, parts)))
    return cap


def _sinfo_kind(head: list[str]) -> str:
    if head[0] == "REASON":
        return "sinfo -R"
    if head[0] in ("NODELIST", "HOSTNAMES"):
        return "sinfo -N"
    return "sinfo"


def _sprio(head: list[str], body: list[str], head_line: str) -> Capture:
    cap = _table("sprio", head, [ln for ln in body if not ln.split()[0] == "Weights"], head_line, names=_unique(head))
    for line in body:
        words = line.split()
        if words[0] == "Weights":
            # no JOBID/PARTITION/PRIORITY values: the weights sit under the factor columns (sprio -w has
            # two PARTITION columns, the job's and the partition factor)
            factors = head[head.index("PRIORITY") + 1:]
            cap.weights = dict(zip(factors[-(len(words) - 1):], words[1:]))
    return cap


def _is_sinfo_header(first: list[str]) -> bool:
    """sinfo's titles, one of them naming nodes; a title only squeue prints (JOBID, ST, NAME,
    ...) makes it squeue -o, whose %T is also titled STATE."""
    return (all(_TITLE.match(w) for w in first) and not _SQUEUE_ONLY & set(first)
            and (first[0] == "REASON" or bool(_SINFO_NODE_COLS & set(first))))


def read_capture(text: str) -> Capture:
    """Recognise and read one saved table. Raises ParseError saying what the text looked like."""
    lines = _lines(text)
    if not lines:
        raise ParseError("Slurm text", "the file is empty")
    sep = "|" if "|" in lines[0] else None  # sinfo/squeue -o with | between the fields
    first = [w.strip() for w in lines[0].split(sep)] if sep else lines[0].split()
    key = lines[0].strip().split("=", 1)[0]
    if key in _SCONTROL_FIRST:
        kind = _SCONTROL_FIRST[key]
        good, bad = scontrol_records(text, kind)
        if bad and not good:
            raise ParseError(kind, bad[0][1])
        return Capture(kind, rows=[first_values(r) for r in good], unread=bad)
    if first[:2] == ["JOBID", "PARTITION"] and "ST" in first and first[-1].startswith("NODELIST"):
        return _table("squeue", first, lines[1:], lines[0], sep)
    if first[0] == "JOBID" and "PRIORITY" in first and set(first) <= _SPRIO_COLS:
        return _sprio(first, lines[1:], lines[0])
    if _is_sinfo_header(first):
        return _table(_sinfo_kind(first), first, lines[1:], lines[0], sep)
    raise ParseError("Slurm text", f"not a sinfo, squeue, sprio or scontrol show table; it starts {lines[0].strip()[:60]!r}")

