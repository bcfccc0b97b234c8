"""The resource views: one VTable each, rows built and filtered in a worker thread.

A view keeps the latest snapshot; when it is shown (or its filter/sort changes,
or a snapshot arrives while shown) it updates its :class:`LiveTable` in a thread
(only changed rows are rebuilt, re-filtered and re-placed in the sort order) and
swaps the result in. Hidden views only remember that they are out of date.
"""

from __future__ import annotations

import threading
from operator import attrgetter
from typing import Any

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from cockpit.core.filtering import compile_query
from cockpit.errors import UsageError
from cockpit.models import ClusterSnapshot
from cockpit.tui import rows as R
from cockpit.tui.gpurows import gpu_rows
from cockpit.tui.livetable import LiveTable
from cockpit.tui.services import host_of
from cockpit.tui.widgets.vtable import VTable


class TableView(Vertical):
    """Base of Jobs/Nodes/GPUs/Partitions: a status line and a VTable; ``C`` chooses its
    columns, ``E`` exports its rows as shown (cockpit/tui/screens/tablecmds.py)."""

    BINDINGS = [Binding("C", "choose_columns", "Columns", show=False, id="view.columns"),
                Binding("E", "export", "Export", show=False, id="view.export")]
    DEFAULT_CSS = """
    TableView { height: 1fr; }
    TableView > .view-status { height: 1; color: $text-muted; }
    """
    kind = ""
    title = ""
    target_kind = ""  # what a row key names for actions: "job", "node" or nothing
    schema: R.Schema

    def __init__(self, clock, width: int = 40, **kw: Any) -> None:
        super().__init__(id=f"view-{self.kind}", **kw)
        self.clock = clock
        self.cell_width = width
        self.table = VTable(self.schema.columns, clock=clock, cap=width, target_kind=self.target_kind, id=f"table-{self.kind}")
        self.status_line = Static("", classes="view-status")
        self._status_shown: Text | None = None  # what status_line shows
        self.snapshot: ClusterSnapshot | None = None
        self.telemetry: R.Mapping = {}
        self.query_text = ""
        self.query_error = ""
        self.telemetry_off = ""  # why GPU telemetry is off ('' when on): said where its columns are blank
        self._dirty = False
        self._gen = 0
        self._lock = threading.Lock()  # one build at a time: the LiveTable is not thread-safe
        self.builds = 0
        self._retired: list[R.TableData] = []  # shown before: freed by the build thread
        self.live = self.make_live()

    def compose(self):
        yield self.status_line
        yield self.table

    def on_mount(self) -> None:
        from cockpit.tui.screens.tablecmds import hidden_from_config

        hidden, unknown = hidden_from_config(self, host_of(self).config)  # another App's (a test's): every column
        self.table.hide_columns(hidden)
        for label in unknown:
            self.app.notify(f"[tui] hidden_columns_{self.kind}: {self.title} has no column {label!r}",
                            severity="warning", markup=False)

    def action_choose_columns(self) -> None:
        from cockpit.tui.screens.tablecmds import choose_columns

        choose_columns(self.app, self)

    def action_export(self) -> None:
        from cockpit.tui.screens.tablecmds import export_view

        export_view(self.app, self)

    # -- inputs ---------------------------------------------------------
    def set_snapshot(self, snap: ClusterSnapshot, visible: bool) -> None:
        self.snapshot = snap
        self._dirty = True
        if visible:
            self.rebuild()

    def set_filter(self, text: str) -> str:
        """Apply a filter; returns an error message ('' when fine)."""
        try:
            compile_query(text, self.schema.fields, self.schema.aliases)
        except UsageError as exc:
            return str(exc)
        self.query_text = text
        self.rebuild()
        return ""

    def on_vtable_sort_requested(self, event: VTable.SortRequested) -> None:
        event.stop()
        self.rebuild()

    def show_if_dirty(self) -> None:
        if self._dirty:
            self.rebuild()

    # -- building (thread) ----------------------------------------------
    def rebuild(self) -> None:
        if self.snapshot is None:
            return
        self._dirty = False
        self._gen += 1
        self._build(self.query_text, self.table.sort_field, self.table.value_reverse, self._gen)

    # The snapshot is read from self.snapshot, never passed: a finished Textual worker
    # sits in a reference cycle with its arguments until the cyclic GC runs, and the
    # poller freezes the heap (see settle_heap), which would keep each refresh's
    # snapshot (and the job versions only it still holds) alive for an hour.
    @work(thread=True, exclusive=True, group="build", description="build table rows")
    def _build(self, query: str, field: int | None, reverse: bool, gen: int) -> None:
        with self._lock:
            self._retired.clear()
            snap = self.snapshot
            if gen != self._gen or snap is None:
                return
            pred = compile_query(query, self.schema.fields, self.schema.aliases)
            self.live.configure(query, pred, field, reverse)
            data = self.live.update(self.objects(snap))
        try:
            self.app.call_from_thread(self._apply, data, gen)
        except RuntimeError:  # NoActiveAppError / "App is not running": quit while building
            pass

    def _apply(self, data: R.TableData, gen: int) -> None:
        if gen != self._gen:
            return
        self.builds += 1
        # The old data (two 100k-entry dicts and a tuple at 100k jobs) is released by
        # the next build, in its thread: freeing it here cost the UI thread ~4 ms.
        self._retired.append(self.table.data)
        self.table.set_data(data)
        self.show_status()

    def status_text(self) -> Text:
        data = self.table.data
        shown, total = len(data.order), data.total
        t = Text(f" {self.title}: {shown}" + (f" of {total}" if shown != total else ""), no_wrap=True,
                 overflow="ellipsis")
        if self.query_text:
            t.append("  filter: ")
            t.append(self.query_text, style="bold")
        marked = len(self.table.marked_keys())
        if marked:
            t.append(f"  marked: {marked}", style="bold")
            t.append(" (u unmarks all)")
        lay = self.table.column_layout
        if lay.scrolls:
            t.append(f"  ←→ {lay.hidden_left + lay.hidden_right} more column(s)")
        if self.telemetry_off and self.kind in ("gpus", "jobs"):
            t.append(f"  GPU telemetry {self.telemetry_off}", style="italic")
        return t

    def show_status(self) -> None:
        text = self.status_text()
        if text == self._status_shown:  # most refreshes: the same count; a repaint was ~2 ms of the UI thread at 500k
            return
        self._status_shown = text
        self.status_line.update(text, layout=False)  # height 1 by CSS: a re-layout is ~15 ms

    def on_vtable_marks_changed(self, event: VTable.MarksChanged) -> None:
        event.stop()
        self.show_status()

    def on_vtable_layout_changed(self, event: VTable.LayoutChanged) -> None:
        event.stop()
        self.show_status()  # the "more columns" hint follows the table's width

    def make_live(self) -> LiveTable:
        """By default the objects are the rows themselves (see :meth:`objects`)."""
        return LiveTable(lambda row: row, _ROW_KEY)

    def objects(self, snap: ClusterSnapshot) -> Any:
        """What the LiveTable diffs: model objects (jobs, nodes) or prebuilt rows."""
        return self.build_rows(snap)

    def build_rows(self, snap: ClusterSnapshot) -> list[R.Row]:
        raise NotImplementedError


_ROW_KEY = attrgetter("key")


class JobsView(TableView):
    kind, title, schema, target_kind = "jobs", "Jobs", R.JOB_SCHEMA, "job"

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.extras: dict[int, tuple[float | None, float | None]] = {}

    def make_live(self) -> LiveTable:
        return LiveTable(R.job_row, attrgetter("job_id"))

    def set_extras(self, extras: dict[int, tuple[float | None, float | None]], visible: bool) -> None:
        """job id -> (mean GPU utilisation %, epoch of its output's last change): the
        GPU% and LAST OUT cells (only the jobs whose figures changed get a new row)."""
        if extras == self.extras:
            return
        self.extras = extras
        self._dirty = True
        if visible:
            self.rebuild()

    def objects(self, snap):
        extras = self.extras
        if not extras:
            return snap.jobs
        get, wrap = extras.get, R.JobExtras
        return [j if (e := get(j.job_id)) is None else wrap(j, *e) for j in snap.jobs]


class NodesView(TableView):
    kind, title, schema, target_kind = "nodes", "Nodes", R.NODE_SCHEMA, "node"

    def make_live(self) -> LiveTable:
        return LiveTable(R.node_row, attrgetter("name"))

    # Nodes drained or down 3x or more in 14 days, from accounting (cockpit/tui/accounting.py):
    # a "flapping" flag, shown in the state cell; the filter state:flapping finds them.
    flapping: frozenset = frozenset()

    def set_flapping(self, names: frozenset, visible: bool) -> None:
        if names == self.flapping:
            return
        self.flapping = frozenset(names)
        self._flagged_cache: dict[str, tuple[Any, Any]] = {}
        self._dirty = True
        if visible:
            self.rebuild()

    def objects(self, snap):
        if not self.flapping:
            return snap.nodes
        return [self._flagged(n) if n.name in self.flapping else n for n in snap.nodes]

    def _flagged(self, node):
        # The same object while the node is unchanged, so its row is not rebuilt each refresh.
        from cockpit.models.cluster import record_replace

        seen = self._flagged_cache.get(node.name)
        if seen is None or seen[0] is not node:
            seen = self._flagged_cache[node.name] = (node, record_replace(node, flags=node.flags | {"flapping"}))
        return seen[1]


class GpusView(TableView):
    # GPU rows depend on nodes, jobs and telemetry together. A node's rows are built
    # again only when the node, the jobs holding its GPUs or its telemetry changed
    # (10k nodes are 80k rows: rebuilding all of them held the GIL ~0.4 s a refresh).
    kind, title, schema, target_kind = "gpus", "GPUs", R.GPU_SCHEMA, "node"

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        # node name -> (node, its GPUs' holders, their readings, its rows): tuples of untracked
        # records, which a collection untracks (a list per node kept 20k lists, with 166k
        # references, in every thaw's walk at 20k nodes)
        self._node_rows: dict[str, tuple[Any, tuple, tuple, tuple[Any, ...]]] = {}

    def mount_panel(self, panel: Any) -> None:
        """Show ``panel`` (live telemetry's status) above the table."""
        self.mount(panel, before=self.table)

    def set_telemetry(self, telemetry: R.Mapping, visible: bool) -> None:
        self.telemetry = telemetry
        self._dirty = True
        if visible:
            self.rebuild()

    def build_rows(self, snap):
        holders, tel = R.gpu_holders(snap.jobs), self.telemetry
        old, new = self._node_rows, {}
        out: list[R.Row] = []
        for node in snap.nodes:
            n = sum(g.count for g in node.gpus)
            held = tuple(holders.get((node.name, i)) for i in range(n))
            seen = tuple(tel.get((node.name, i)) for i in range(n)) if tel else ()
            hit = old.get(node.name)
            if hit is not None and (hit[0] is node or hit[0] == node) and hit[1] == held and hit[2] == seen:
                rows = hit[3]
            else:
                rows = tuple(gpu_rows(node, holders, tel))
            new[node.name] = (node, held, seen, rows)
            out.extend(rows)
        self._node_rows = new
        return out


class PartitionsView(TableView):
    kind, title, schema = "partitions", "Partitions", R.PART_SCHEMA

    def build_rows(self, snap):
        return R.partition_rows(snap)


TABLE_VIEWS = (NodesView, GpusView, PartitionsView, JobsView)
