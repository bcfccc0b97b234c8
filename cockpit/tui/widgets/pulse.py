"""Pulse: the first screen. What needs a person first, then the one-glance counts.

Top: the suspect jobs (cockpit/tui/suspects.py: output silent, GPUs idle, past
their usual time) and the drained/down nodes, each a table whose rows are
selected like any other (``w`` why stuck?, ``a`` act, ``Enter`` open; up/down
past a table's edge moves to the other one). Below: nodes by state, GPUs per
partition, jobs and pending reasons, recent changes.

Everything is computed in a worker thread from the latest snapshot, the GPU
telemetry and the output watch's mtimes. Recent changes compare each snapshot
with the previous one; they are tracked even while the view is hidden.
"""

from __future__ import annotations

import threading
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from cockpit.models import ClusterSnapshot
from cockpit.text import clean
from cockpit.tui.outputwatch import MAX_WATCHED
from cockpit.tui.pulsedata import ChangeTracker, PulseData, compute
from cockpit.tui.rows import NODE_SYMBOL, TableData, duration
from cockpit.tui.suspects import BAD_NODE_SCHEMA, SUSPECT_SCHEMA
from cockpit.tui.widgets.vtable import VTable

MAX_ROWS = 8  # rows each table shows before it scrolls


class PulseView(Vertical):
    DEFAULT_CSS = """
    PulseView { height: 1fr; }
    PulseView > .pulse-title { height: 1; text-style: bold; color: $text; background: $boost; }
    PulseView > VTable { height: 2; }
    PulseView > #pulse-scroll { height: 1fr; }
    PulseView > #pulse-controller { height: 1; color: $error; text-style: bold; display: none; }
    """
    kind, title = "pulse", "Pulse"

    class Updated(Message):
        """New suspects: the jobs view's GPU%/LAST OUT figures and the jobs to watch changed."""

    def __init__(self, clock, width: int = 40, *, silent_after: float = 600.0, watching: str = "", **kw: Any) -> None:
        """``watching``: why the output watch is off ('' when it is on)."""
        super().__init__(id="view-pulse", **kw)
        self.clock = clock
        self.silent_after = silent_after
        self.watching = watching
        # the evidence and the reason are what these tables are for: they keep the width, the rest scrolls
        self.suspects = VTable(SUSPECT_SCHEMA.columns, clock=clock, cap=width, target_kind="job", scroll_room=0,
                               id="pulse-suspects")
        self.bad = VTable(BAD_NODE_SCHEMA.columns, clock=clock, cap=width, target_kind="node", scroll_room=0,
                          id="pulse-nodes")
        self.suspects_title = Static("SUSPECT JOBS", classes="pulse-title", id="pulse-suspects-title")
        self.bad_title = Static("DRAINED / DOWN NODES", classes="pulse-title", id="pulse-nodes-title")
        self.body = Static("waiting for the first data…", id="pulse-body")
        self.controller = Static("", id="pulse-controller")  # one line while slurmctld is unhealthy
        self.tracker = ChangeTracker()
        self._lock = threading.Lock()
        self._data: PulseData | None = None
        self._pending: ClusterSnapshot | None = None
        self._last: ClusterSnapshot | None = None
        self.telemetry: dict = {}
        self.outputs: dict[int, float] = {}
        # what the rest of the app reads after an Updated message
        self.extras: dict[int, tuple[float | None, float | None]] = {}
        self.candidates: tuple[tuple[int, str, str], ...] | None = None
        self.watch_nodes: tuple[str, ...] = ()
        self._auto_focus = True

    def compose(self):
        yield self.controller
        yield self.suspects_title
        yield self.suspects
        yield self.bad_title
        yield self.bad
        with VerticalScroll(id="pulse-scroll"):
            yield self.body

    @property
    def table(self) -> VTable | None:
        """The table actions apply to: the focused one, else the first with rows."""
        for t in (self.suspects, self.bad):
            if t.has_focus:
                return t
        return next((t for t in (self.suspects, self.bad) if t.row_count), None)

    # -- inputs ---------------------------------------------------------
    def set_snapshot(self, snap: ClusterSnapshot, visible: bool) -> None:
        self._pending = snap  # read by the worker, not passed to it: see TableView._build
        if snap.loading and not visible:
            # A part of a big first load, with the Pulse not on screen: it is computed from
            # the whole load (or when shown). Each part cost a pass over every job so far, and
            # its extras a rebuild of the jobs table, in threads that the keys wait behind.
            return
        self._compute(visible)

    def set_inputs(self, *, telemetry: dict | None = None, outputs: dict | None = None, visible: bool = False) -> None:
        """New GPU telemetry or output mtimes (whole dicts, replaced, never changed in place)."""
        if telemetry is not None:
            self.telemetry = telemetry
        if outputs is not None:
            self.outputs = outputs
        self._compute(visible)

    def switch_cluster(self, tracker: ChangeTracker, *, telemetry: dict, outputs: dict[int, float],
                       watching: str) -> None:
        """Another cluster in front: its tracker, readings and output watch's state; nothing
        of the cluster left is kept (its next snapshot, set next, is computed with these)."""
        with self._lock:  # not while a compute reads them; one computed before is dropped (_apply)
            self.tracker, self.telemetry, self.outputs, self.watching = tracker, telemetry, outputs, watching
            self._pending = self._last = self._data = None
            self.candidates, self.watch_nodes, self.extras = None, (), {}
        if self.is_mounted:  # no row of the cluster left to act on through this one's gate
            for table in (self.suspects, self.bad):
                table.set_data(TableData.empty())
            self.body.update("waiting for the first data…")

    def set_controller(self, line: str | None) -> None:
        """The controller's health line (cockpit/tui/controllerwatch.py); None hides it."""
        if line:
            self.controller.update(Text(" " + clean(line, 200), no_wrap=True, overflow="ellipsis"))
        self.controller.display = bool(line)

    def show_if_dirty(self) -> None:
        if self._pending is not None:  # a part of a first load, left while hidden
            self._compute(True)
        elif self._data is not None:
            self._show(self._data)

    def set_filter(self, text: str) -> str:
        return "the pulse view has no filter; switch to a table view (1-5)"

    @work(thread=True, exclusive=True, group="pulse", description="pulse summary")
    def _compute(self, visible: bool) -> None:
        with self._lock:
            snap, self._pending = self._pending, None
            fresh = snap is not None
            snap = snap or self._last
            if snap is None:
                return
            self._last = snap
            tracker = self.tracker  # the cluster's this is computed for
            data = compute(snap, tracker, fresh, self.clock(), telemetry=self.telemetry, outputs=self.outputs,
                           silent_after=self.silent_after, watch=MAX_WATCHED)
        try:
            self.app.call_from_thread(self._apply, data, visible, tracker)
        except RuntimeError:  # NoActiveAppError / "App is not running": quit while computing
            pass

    def _apply(self, data: PulseData, visible: bool, tracker: ChangeTracker | None = None) -> None:
        if tracker is not None and tracker is not self.tracker:
            return  # computed for the cluster shown before a switch: its jobs are not this one's
        self._data = data
        if data.candidates is not None:
            self.candidates = data.candidates
        self.extras, self.watch_nodes = data.extras, data.watch_nodes
        if visible or self.display:
            self._show(data)  # hidden: shown when the view comes back (show_if_dirty)
        self.post_message(self.Updated())

    @property
    def latest(self) -> PulseData | None:
        """The last computed data, shown or not (what the detail screens read)."""
        return self._data

    def _show(self, data: PulseData) -> None:
        self._fill(self.suspects, data.suspects)
        self._fill(self.bad, data.bad_nodes)
        n = len(data.suspects.order)
        if n:
            title = f" SUSPECT JOBS ({n})   w why stuck?  enter open  a act"
        else:
            title = f" SUSPECT JOBS: none ({self.watching or f'the output of {len(self.candidates or ())} running job(s) is watched'})"
        bad = len(data.bad_nodes.order)
        # height 1 by CSS: no re-layout of the screen
        self.suspects_title.update(Text(title, no_wrap=True, overflow="ellipsis"), layout=False)
        self.bad_title.update(Text(f" DRAINED / DOWN NODES ({bad})" + ("   w gpu-xid runbook  a act" if bad else ""),
                                   no_wrap=True, overflow="ellipsis"), layout=False)
        self.body.update(self.render_data(data))
        self._first_focus()

    def _first_focus(self) -> None:
        """Until a key is pressed here, the cursor goes to the first suspect (the output
        watch finds them a moment after the first data), else to the drained nodes."""
        if not self._auto_focus or self.screen.focused not in (None, self.suspects, self.bad):
            return
        if self.suspects.row_count:
            self.suspects.focus()
            self._auto_focus = False
        elif self.screen.focused is None and self.bad.row_count:
            self.bad.focus()

    def on_key(self, _event: Any) -> None:
        self._auto_focus = False  # the operator is moving around: leave the focus where it is

    def _fill(self, table: VTable, data: TableData) -> None:
        rows = len(data.order)
        if table.display != bool(rows):
            table.display = bool(rows)
        height = min(rows, MAX_ROWS) + 1
        if table.styles.height is None or table.styles.height.value != height:
            table.styles.height = height
        table.set_data(data)

    def on_vtable_edge(self, event: VTable.Edge) -> None:
        """Up/down past a table's last (first) row moves to the other table."""
        event.stop()
        other = self.bad if event.table is self.suspects and event.direction > 0 else \
            self.suspects if event.table is self.bad and event.direction < 0 else None
        if other is not None and other.row_count:
            other.focus()
            other.action_jump(0 if event.direction > 0 else -1)

    def render_data(self, d: PulseData) -> Table:
        now = self.clock()
        grid = Table.grid(padding=(0, 2), expand=True)
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        left, right = Text(), Text()
        left.append("NODES BY STATE\n", style="bold underline")
        for st, n in d.node_states:
            left.append(f" {NODE_SYMBOL.get(st, '?')} {st:<10}{n:>6}\n", style=_style(node_style_word(st)))
        left.append("\nGPUS PER PARTITION  alloc/total idle\n", style="bold underline")
        for name, alloc, total, idle in d.gpus:
            left.append(f" {clean(name, 14):<14} {alloc:>6}/{total:<6} {idle:>5}\n")
        right.append(f"JOBS  ▶ {d.running} running  … {d.pending_total} pending\n", style="bold underline")
        reasons = [(clean(reason, max(12, self.size.width // 2 - 12)), n) for reason, n in d.pending]
        width = max((len(r) for r, _n in reasons), default=0)
        for reason, n in reasons:
            right.append(f" {reason:<{width}} {n:>6}\n")
        right.append("\nRECENT CHANGES\n", style="bold underline")
        if not d.changes:
            right.append(" none since start\n")
        for when, what, st in d.changes[:10]:
            right.append(f" {duration(now - when) or '0s':>6} ago  ", style="dim")
            right.append(clean(what, 100) + "\n", style=_style(node_style_word(st)))
        grid.add_row(left, right)
        return grid


def node_style_word(state: str) -> str:
    return {"down": "down", "error": "down", "drained": "drain", "draining": "drain"}.get(state, "")


def _style(word: str) -> str:
    return {"down": "bold red", "drain": "bold yellow"}.get(word, "")
