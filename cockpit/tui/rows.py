"""Table rows for every view, built from the models without Textual.

A :class:`Row` holds display cells (already sanitized and truncated), typed
values for filtering/sorting, and a style word that the table maps to a colour
(the cell text itself always carries a symbol and a word, so it reads in
monochrome too). Builders keep a cache keyed by row key: an unchanged model
object reuses its Row, so a refresh with 1% changes rebuilds 1% of the rows.
This module runs in a worker thread, never on the UI thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import msgspec
from typing import Any

from cockpit.text import clean
from cockpit.hostlist import collapse
from cockpit.models import ClusterSnapshot, Job, Node
from cockpit.models.cluster import or_unknown

NODE_SYMBOL = {
    "idle": "○", "allocated": "●", "mixed": "◐", "drained": "✖", "draining": "◌",
    "down": "▼", "error": "!", "future": "…", "unknown": "?", "completing": "◑",
}
JOB_SYMBOL = {"RUNNING": "▶", "PENDING": "…", "COMPLETING": "◑", "SUSPENDED": "‖", "FAILED": "✖",
              "CANCELLED": "✖", "TIMEOUT": "⌛", "NODE_FAIL": "▼", "COMPLETED": "✓", "PREEMPTED": "↺"}
TELEMETRY_FIELDS = ("util", "mem", "temp", "power", "ecc", "throttle")


@dataclass(frozen=True, slots=True)
class Column:
    """One table column: ``field`` indexes Row.values; ``live`` formats a value at draw time
    (for cells that change with the clock, such as elapsed time). How wide it is
    drawn is decided by cockpit.tui.columns from the widths of its cells."""

    label: str
    width: int  # the width of a live column; else the least it shows before data arrives
    field: int
    align: str = "left"
    live: Callable[[Any, float], str] | None = None
    pin: bool = False  # a key column: stays at the left while the others scroll (narrow terminals)
    cap: int | None = None  # cut to no less than this where others need room (None: the table's cap)
    inverse: bool = False  # the cells run opposite to the values (elapsed time from a start epoch)
    when_data: bool = False  # drawn only while some cell has text (a cluster without shards or MIG)


class Row(msgspec.Struct, frozen=True, gc=False):
    """One row; a msgspec Struct untracked by the cyclic GC, as Job is (cockpit/models/cluster.py):
    a row holds strings, numbers and tuples of them, never itself."""

    key: Any
    cells: tuple[str, ...]
    values: tuple[Any, ...]
    style: str = ""
    extra: str = ""  # text a plain-word filter also matches (a job's account)

    def value(self, i: int) -> Any:
        """``values[i]`` (a lazy row makes just that one)."""
        return self.values[i]

    @property
    def haystack(self) -> str:
        """What plain filter words match: the cells (and ``extra``), lower-cased.
        Made when a filter asks (off the UI thread), not kept: at 100k rows the
        kept strings were ~14 MB."""
        return row_haystack(self.cells, self.extra)


def row_haystack(cells: Sequence[str], extra: str) -> str:
    """A row's cells and its extra words, joined and lower-cased (what plain filter words match)."""
    text = " ".join(cells)
    return (text + " " + extra if extra else text).lower()


@dataclass(frozen=True, slots=True)
class Schema:
    """The fields (filter names) and columns of one view."""

    fields: tuple[str, ...]
    columns: tuple[Column, ...]
    aliases: Mapping[str, str]


def duration(seconds: float | None) -> str:
    """``3d04h``, ``5h07m``, ``12m05s``, ``9s``; empty for None."""
    if seconds is None or seconds < 0:
        return ""
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h:02d}h"
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


def _since(epoch: Any, now: float) -> str:
    return duration(now - epoch) if isinstance(epoch, (int, float)) and epoch else ""


def limit_text(minutes: int | None) -> str:
    return "∞" if minutes is None else duration(minutes * 60)


def node_state_text(node: Node) -> str:
    st = node.display_state
    extra = "*" if "not_responding" in node.flags else ""
    if "flapping" in node.flags:  # set by the Nodes view from accounting (cockpit/tui/accounting.py)
        extra += " ⚑flapping"
    return f"{NODE_SYMBOL.get(st, '?')} {st}{extra}"


def job_state_text(job: Job) -> str:
    text = _STATE_TEXT.get(job.state)
    if text is None:
        text = f"{JOB_SYMBOL.get(job.state, '·')} {job.state.lower()}"
        if len(_STATE_TEXT) < 64:
            _STATE_TEXT[job.state] = text  # one string shared by 100k rows
    return text


_STATE_TEXT: dict[str, str] = {}


# ---------------------------------------------------------------- jobs
KEEP = 200  # cells keep this many characters of a cluster string; the layout cuts them to fit


JOB_SCHEMA = Schema(
    fields=("id", "user", "account", "partition", "name", "state", "start", "gpus", "nodes", "reason", "limit",
            "submit", "util", "output"),
    columns=(
        Column("JOBID", 8, 0, pin=True), Column("USER", 6, 1, pin=True), Column("PARTITION", 9, 3),
        Column("NAME", 8, 4), Column("STATE", 9, 5, pin=True), Column("TIME", 7, 6, "right", _since, inverse=True),
        Column("GPUS", 4, 7, "right", pin=True), Column("GPU%", 4, 12, "right"),
        Column("LAST OUT", 8, 13, "right", _since, inverse=True), Column("NODES", 6, 8),
        Column("REASON", 6, 9, pin=True),
    ),
    aliases={"u": "user", "p": "partition", "part": "partition", "s": "state", "node": "nodes", "gpu": "gpus",
             "job": "id", "jobid": "id", "acct": "account"},
)


class JobExtras(msgspec.Struct, frozen=True, gc=False):
    """A job with what cockpit measured about it besides Slurm (the jobs view's GPU% and LAST OUT);
    untracked by the cyclic GC as Job and Row are."""

    job: Job
    gpu_util: float | None = None  # mean utilisation of its GPUs in percent (live telemetry)
    last_output: float | None = None  # epoch when its stdout last changed

    @property
    def job_id(self) -> int:
        return self.job.job_id


def _job_nodes(job: Job) -> str:
    return job.nodes[0] if len(job.nodes) == 1 else collapse(job.nodes) if job.nodes else ""


def _job_reason(job: Job) -> str:
    return "" if job.reason in ("None", "") else job.reason


# Row.values of a job, one field at a time (what a sort or an insertion asks of a row):
# (job, extras or None) -> the value. JobRow.values is all of them.
_JOB_VALUE: tuple[Callable[[Job, "JobExtras | None"], Any], ...] = (
    lambda j, x: j.display_id,
    lambda j, x: j.user,
    lambda j, x: j.account,
    lambda j, x: j.partition,
    lambda j, x: j.name,
    lambda j, x: j.state + ("+HELD" if j.held else ""),
    lambda j, x: j.start_time if j.state == "RUNNING" else None,
    lambda j, x: j.gpu_count,
    lambda j, x: _job_nodes(j),
    lambda j, x: _job_reason(j),
    lambda j, x: j.time_limit,
    lambda j, x: j.submit_time,
    lambda j, x: x.gpu_util if x is not None else None,
    lambda j, x: x.last_output if x is not None else None,
)


class JobRow(msgspec.Struct, frozen=True, gc=False):
    """A job's row; reads like a :class:`Row` (key, cells, values, style, extra,
    haystack) but keeps only the job: ``cells`` and ``values`` are made when asked
    (a drawn line, a filter, the widths of new rows) and ``value(i)`` makes one
    value (a sort). As a Row, the two tuples and their strings were ~330 B a job
    and 1M tuples at 500k jobs that a full collection walked (13M references:
    ~0.4 s of the first thaw after a load, bench/bench_tui.py BENCH_BREAKDOWN=1).
    Untracked by the cyclic GC, as Job is."""

    key: int
    obj: Any  # Job | JobExtras (the GPU% and LAST OUT of the jobs view)
    style: str
    extra: str  # the account: a plain filter word matches it

    @property
    def _parts(self) -> tuple[Job, JobExtras | None]:
        obj = self.obj
        return (obj.job, obj) if isinstance(obj, JobExtras) else (obj, None)

    @property
    def cells(self) -> tuple[str, ...]:
        job, extras = self._parts
        util = extras.gpu_util if extras is not None else None
        return (job.display_id, clean(job.user, KEEP), clean(job.partition, KEEP), clean(job.name, KEEP),
                job_state_text(job), "", job.gpu_cell, "" if util is None else f"{util:.0f}", "",
                clean(_job_nodes(job), KEEP), or_unknown(job, "reason", clean(_job_reason(job), KEEP)))

    @property
    def values(self) -> tuple[Any, ...]:
        job, extras = self._parts
        return tuple(f(job, extras) for f in _JOB_VALUE)

    def value(self, i: int) -> Any:
        """``values[i]``, made alone."""
        job, extras = self._parts
        return _JOB_VALUE[i](job, extras)

    @property
    def haystack(self) -> str:
        return row_haystack(self.cells, self.extra)

    def __repr__(self) -> str:
        return f"JobRow({self.key!r}, {self.cells!r}, {self.style!r})"


_JOB_STYLE = {"RUNNING": "running", "PENDING": "pending", "FAILED": "bad", "NODE_FAIL": "bad", "TIMEOUT": "bad"}


def job_style(job: Job) -> str:
    return _JOB_STYLE.get(job.state, "")


def job_row(obj: Job | JobExtras) -> JobRow:
    job = obj.job if isinstance(obj, JobExtras) else obj
    return JobRow(job.job_id, obj, job_style(job), job.account)


# ---------------------------------------------------------------- nodes
NODE_SCHEMA = Schema(
    fields=("name", "state", "cpus", "alloc_cpus", "mem", "gpus", "gpus_alloc", "gpus_idle", "partition", "reason", "user", "reason_time", "flags",
            "shared"),
    columns=(
        Column("NODE", 6, 0, pin=True), Column("STATE", 8, 1, pin=True), Column("CPU", 5, 3, "right"),
        Column("MEM GiB", 7, 4, "right"), Column("GPU", 3, 6, "right", pin=True),
        # shards, MPS and MIG slices beside the GPUs, in use/total: "+4/16 shard +0/7 1g.10gb"
        Column("SHARED/MIG", 4, 13, cap=24, when_data=True), Column("PARTITIONS", 6, 8),
        Column("REASON", 6, 9, pin=True), Column("BY", 4, 10), Column("AGE", 7, 11, "right", _since, inverse=True),
    ),
    aliases={"n": "name", "node": "name", "s": "state", "p": "partition", "part": "partition", "gpu": "gpus",
             "idle": "gpus_idle", "alloc": "gpus_alloc", "mig": "shared", "shard": "shared", "gres": "shared"},
)


def mem_gib(alloc_mb: int, total_mb: int) -> str:
    """``1562/2015``: allocated and total memory in GiB (Slurm counts MiB), as the nodes view and
    the node detail both show it."""
    return f"{alloc_mb // 1024}/{total_mb // 1024}"


def node_row(node: Node, width: int = KEEP) -> Row:
    parts = ",".join(node.partitions)
    cells = (clean(node.name, width), node_state_text(node), f"{node.alloc_cpus}/{node.cpus}",
             mem_gib(node.alloc_memory_mb, node.memory_mb), node.gpu_cell, node.gres_extra,
             clean(parts, width), or_unknown(node, "reason", clean(node.reason or "", width)),
             clean(node.reason_user or "", width), "")
    state_words = " ".join([node.display_state, node.state, *sorted(node.flags)])
    values = (node.name, state_words, node.cpus, node.alloc_cpus, node.memory_mb // 1024, node.gpu_total,
              node.gpu_alloc, node.gpu_total - node.gpu_alloc, parts, node.reason or "", node.reason_user or "",
              node.reason_time, " ".join(sorted(node.flags)), node.gres_extra)
    style = node_style(node)
    return Row(node.name, cells, values, style)


def node_style(node: Node) -> str:
    st = node.display_state
    if st in ("down", "error") or "not_responding" in node.flags:
        return "down"
    if st in ("drained", "draining"):
        return "drain"
    return {"idle": "idle", "mixed": "mixed", "allocated": "alloc"}.get(st, "")


# ---------------------------------------------------------------- GPUs
GPU_SCHEMA = Schema(
    fields=("node", "index", "type", "state", "job", "user", "note", *TELEMETRY_FIELDS),
    columns=(
        Column("NODE", 6, 0, pin=True), Column("GPU", 3, 1, "right", pin=True), Column("TYPE", 4, 2),
        Column("NODE STATE", 8, 3), Column("JOB", 5, 4, pin=True), Column("USER", 4, 5, pin=True),
        Column("NOTE", 4, 6), Column("UTIL%", 5, 7, "right", pin=True), Column("MEM%", 4, 8, "right"),
        Column("TEMP", 4, 9, "right"), Column("POWER", 5, 10, "right"), Column("ECC", 3, 11, "right"),
        Column("THROTTLE", 8, 12),
    ),
    aliases={"n": "node", "idx": "index", "s": "state", "u": "user", "jobid": "id"},
)


def gpu_holders(jobs: Sequence[Job]) -> dict[tuple[str, int], Job]:
    """(node, GPU index) -> the job holding it."""
    out: dict[tuple[str, int], Job] = {}
    for job in jobs:
        for g in job.gpus:
            for i in g.indexes:
                out[(g.node, i)] = job
    return out


# the rows themselves: cockpit/tui/gpurows.py (one per GPU, kept small)


# ---------------------------------------------------------------- partitions
PART_SCHEMA = Schema(
    fields=("name", "state", "nodes", "gpus", "gpus_alloc", "gpus_idle", "unavailable", "running", "pending", "max_time", "default"),
    columns=(
        Column("PARTITION", 9, 0, pin=True), Column("STATE", 5, 1, pin=True), Column("NODES", 5, 2, "right"),
        Column("GPU ALLOC", 9, 4, "right", pin=True), Column("IDLE", 4, 5, "right", pin=True),
        Column("DOWN/DRN", 8, 6, "right"), Column("RUN", 3, 7, "right"), Column("PEND", 4, 8, "right", pin=True),
        Column("MAXTIME", 7, 9, "right"),
    ),
    aliases={"p": "name", "partition": "name", "s": "state"},
)


def partition_rows(snap: ClusterSnapshot, width: int = KEEP) -> list[Row]:
    nodes = {n.name: n for n in snap.nodes}
    running: dict[str, int] = {}
    pending: dict[str, int] = {}
    for j in snap.jobs:
        for p in j.partition.split(","):
            if j.state == "RUNNING":
                running[p] = running.get(p, 0) + 1
            elif j.state == "PENDING":
                pending[p] = pending.get(p, 0) + 1
    rows = []
    for part in snap.partitions:
        members = [nodes[n] for n in part.nodes if n in nodes]
        total = sum(n.gpu_total for n in members)
        alloc = sum(n.gpu_alloc for n in members)
        idle = sum(n.gpu_total - n.gpu_alloc for n in members if not n.is_unavailable)
        bad = sum(1 for n in members if n.is_unavailable)
        name = clean(part.name, width) + ("*" if part.is_default else "")
        values = (part.name, part.state, len(part.nodes), total, alloc, idle, bad, running.get(part.name, 0),
                  pending.get(part.name, 0), part.max_time, part.is_default)
        cells = (name, clean(part.state, 6), str(len(part.nodes)), f"{alloc}/{total}", str(idle), str(bad),
                 str(values[7]), str(values[8]), limit_text(part.max_time))
        style = "down" if part.state.upper() != "UP" else ("drain" if bad else "")
        rows.append(Row(part.name, cells, values, style))
    return rows


class RowCache:
    """Reuses the Row of an unchanged model object (compared by equality)."""

    def __init__(self, build: Callable[[Any], Row]) -> None:
        self.build = build
        self._cache: dict[Any, tuple[Any, Row]] = {}

    def rows(self, objects: Sequence[Any], key: Callable[[Any], Any]) -> list[Row]:
        new: dict[Any, tuple[Any, Row]] = {}
        out = []
        for obj in objects:
            k = key(obj)
            hit = self._cache.get(k)
            row = hit[1] if hit is not None and (hit[0] is obj or hit[0] == obj) else self.build(obj)
            new[k] = (obj, row)
            out.append(row)
        self._cache = new
        return out


class Positions(Mapping):
    """Each key's position in ``order``, found when asked: a dict of every key cost
    39 ms and ~40 MB at 500k rows each refresh, for the one or two keys the table
    looks up (the cursor's row). Many lookups (marked rows) build the dict once."""

    __slots__ = ("order", "_map", "_last", "_scans")

    def __init__(self, order: Sequence[Any]) -> None:
        self.order, self._map, self._last, self._scans = order, None, (None, -1), 0

    def _mapping(self) -> dict[Any, int] | None:
        if self._map is None and self._scans >= 4:
            self._map = dict(zip(self.order, range(len(self.order))))
        return self._map

    def get(self, key: Any, default: Any = None) -> Any:
        if self._last[0] == key and self._last[1] >= 0:
            return self._last[1]
        mapping = self._mapping()
        if mapping is not None:
            return mapping.get(key, default)
        self._scans += 1
        try:
            pos = self.order.index(key)  # a C-level scan: ~2 ms at 500k rows
        except ValueError:
            return default
        self._last = (key, pos)
        return pos

    def __getitem__(self, key: Any) -> int:
        pos = self.get(key)
        if pos is None:
            raise KeyError(key)
        return pos

    def __contains__(self, key: Any) -> bool:
        return self.get(key) is not None

    def __iter__(self):
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)


GONE = object()  # in a Layered's changes: the row left after the base was made
_ABSENT = object()


class Layered(Mapping):
    """Rows as a base dict that several tables share, under the changes made since
    (key -> Row, or GONE): handing out a table copies its changes, not every row. At
    500k jobs the rows dict copied for each refresh's table was ~6-15 ms of a worker
    thread, one C call holding the GIL. Neither dict changes once handed out
    (cockpit.tui.livetable.LiveTable.data)."""

    __slots__ = ("base", "top", "_len")

    def __init__(self, base: dict[Any, Row], top: dict[Any, Any], length: int) -> None:
        self.base, self.top, self._len = base, top, length

    def __getitem__(self, key: Any) -> Row:
        got = self.top.get(key, _ABSENT)
        if got is _ABSENT:
            return self.base[key]
        if got is GONE:
            raise KeyError(key)
        return got

    def get(self, key: Any, default: Any = None) -> Any:
        got = self.top.get(key, _ABSENT)
        if got is _ABSENT:
            return self.base.get(key, default)
        return default if got is GONE else got

    def __contains__(self, key: Any) -> bool:
        got = self.top.get(key, _ABSENT)
        return key in self.base if got is _ABSENT else got is not GONE

    def __iter__(self):
        top = self.top
        yield from (k for k in self.base if k not in top)
        yield from (k for k, row in top.items() if row is not GONE)

    def __len__(self) -> int:
        return self._len


@dataclass(frozen=True, slots=True)
class TableData:
    """What a table shows: rows by key, the filtered+sorted order, and each key's position."""

    rows: Mapping[Any, Row]  # a dict, or a Layered one (livetable)
    order: Sequence[Any]  # a tuple, or an array("q") of int keys (livetable._packed)
    index: Mapping[Any, int]
    total: int = 0  # rows before filtering
    widths: tuple[int, ...] = ()  # per column, the widest cell (terminal cells) of every row

    @classmethod
    def empty(cls) -> TableData:
        return cls({}, (), {}, 0)


def build_table(rows: Sequence[Row], predicate: Any, sort_field: int | None, reverse: bool) -> TableData:
    """Filter and sort ``rows`` (off the UI thread); ``predicate`` from ``compile_query``."""
    from cockpit.core.filtering import sort_order

    from cockpit.tui.columns import data_widths

    by_key = {r.key: r for r in rows}
    kept = [r for r in rows if predicate(r.values, r.haystack)] if predicate else list(rows)
    order = tuple(sort_order([r.key for r in kept], [r.values for r in kept], sort_field, reverse))
    ncols = len(rows[0].cells) if rows else 0
    widths = tuple(data_widths([r.cells for r in rows], ncols))
    return TableData(by_key, order, {k: i for i, k in enumerate(order)}, len(rows), widths)
