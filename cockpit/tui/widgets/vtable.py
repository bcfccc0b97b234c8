"""A virtual table: draws only the visible lines, whatever the number of rows.

Textual's DataTable builds every row up front and re-lays out on updates
(seconds at 100k rows). This widget holds an immutable :class:`TableData`
prepared off the UI thread; swapping it in keeps the cursor on the same row
key and costs O(visible lines). Line 0 is a fixed header (click to sort).

Columns take the width they need (cockpit/tui/columns.py); where they do not
fit, the key columns stay and ``Left``/``Right`` scroll the others a column at
a time. Every line starts with a one-cell gutter that shows ``*`` on a marked
row. The cursor row's colours are worked out here, not taken from the row's
style: the background is the theme's cursor colour and the text black or white,
whichever reads on it, so a pending (orange) row under an orange cursor stays
readable in every theme.

Seams for actions: :meth:`selected_keys` (marked rows, else the cursor row),
:meth:`marked_keys`, ``target_kind`` ("job"/"node": what a key names) and the
``RowActivated`` and ``MarksChanged`` messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cockpit.tui.columns import ColumnLayout, layout
from cockpit.tui.rows import Column, Row, TableData
from cockpit.tui.widgets.vtable_draw import MARK, VTableDrawing, contrast

__all__ = ["LIVE_REPAINT", "MARK", "ROW_STYLES", "VTable", "contrast"]

# Seconds between looks at the cells that show the clock (a job's elapsed time) when
# nothing else repaints them: the lines on screen whose text changed are repainted.
LIVE_REPAINT = 5.0
ROW_STYLES = ("running", "pending", "bad", "idle", "mixed", "alloc", "drain", "down", "idlegpu")


class VTable(VTableDrawing, ScrollView, can_focus=True):
    """Rows keyed by id; cursor, marks, sort column; renders with render_line."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="table.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="table.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="table.page-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="table.page-down"),
        Binding("home,g", "jump(0)", "Top", show=False, id="table.top"),
        Binding("end,G", "jump(-1)", "Bottom", show=False, id="table.bottom"),
        Binding("left", "columns(-1)", "Columns left", show=False, id="table.left"),
        Binding("right", "columns(1)", "Columns right", show=False, id="table.right"),
        Binding("space", "mark", "Mark", id="table.mark"),
        Binding("u", "unmark_all", "Unmark all", show=False, id="table.unmark"),
        Binding("enter", "activate", "Open", id="table.open"),
        Binding("s", "cycle_sort", "Sort", show=False, id="table.sort"),
        Binding("S", "reverse_sort", "Reverse", show=False, id="table.sort-reverse"),
    ]
    COMPONENT_CLASSES = {"vtable--header", "vtable--cursor", "vtable--marked"} | {f"vtable--{s}" for s in ROW_STYLES}
    DEFAULT_CSS = """
    VTable { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; }
    VTable > .vtable--header { text-style: bold reverse; }
    VTable > .vtable--cursor { background: $block-cursor-background; text-style: bold; }
    VTable:blur > .vtable--cursor { background: $block-cursor-background 45%; text-style: none; }
    VTable > .vtable--marked { text-style: bold; }
    VTable > .vtable--running { color: $success; }
    VTable > .vtable--pending { color: $warning; }
    VTable > .vtable--bad { color: $error; }
    VTable > .vtable--idle { color: $text-muted; }
    VTable > .vtable--mixed { color: $secondary; }
    VTable > .vtable--alloc { color: $success; }
    VTable > .vtable--drain { color: $warning; text-style: bold; }
    VTable > .vtable--down { color: $error; text-style: bold; }
    VTable > .vtable--idlegpu { color: $warning; }
    """

    # No automatic repaint: a cursor move repaints the two lines it touches (a whole
    # table repaint is ~10 ms, and keys arrive faster than that when held down).
    cursor = reactive(0, always_update=True, repaint=False)

    class RowActivated(Message):
        """Enter or double click on a row."""

        def __init__(self, table: VTable, key: Any) -> None:
            super().__init__()
            self.table, self.key = table, key

    class SortRequested(Message):
        """The user asked for another sort column/direction; the owner re-sorts off-thread.
        ``reverse`` is the order of the values (see Column.inverse), not of the arrow."""

        def __init__(self, table: VTable, field: int | None, reverse: bool) -> None:
            super().__init__()
            self.table, self.field, self.reverse = table, field, reverse

    class Edge(Message):
        """Up past the first row (direction -1) or down past the last (+1)."""

        def __init__(self, table: VTable, direction: int) -> None:
            super().__init__()
            self.table, self.direction = table, direction

    class CursorMoved(Message):
        """The cursor is on another row (posted only where ``notify_cursor`` is set)."""

        def __init__(self, table: VTable, key: Any) -> None:
            super().__init__()
            self.table, self.key = table, key

    class LayoutChanged(Message):
        """The columns were placed again (a resize, a column scroll): the owner's
        "more columns" hint may have changed."""

        def __init__(self, table: VTable) -> None:
            super().__init__()
            self.table = table

    class MarksChanged(Message):
        """Rows were marked or unmarked (the owner shows the count)."""

        def __init__(self, table: VTable, count: int) -> None:
            super().__init__()
            self.table, self.count = table, count

    def __init__(self, columns: Sequence[Column], *, clock: Callable[[], float] = time.time, cap: int = 40,
                 target_kind: str = "", scroll_room: int = 20, **kw: Any) -> None:
        """``cap``: the width a column is cut to when the others need room;
        ``target_kind``: "job" or "node" when a row key names one (actions, copy);
        ``scroll_room``: cells the key columns leave to the others on a narrow terminal."""
        super().__init__(**kw)
        self.columns = tuple(columns)
        self.clock = clock
        self.cap = cap
        self.scroll_room = scroll_room
        self.target_kind = target_kind
        self.notify_cursor = False  # post CursorMoved (a screen that shows the cursor row's details)
        self.data = TableData.empty()
        self.sort_column: int | None = None  # index into columns
        self.sort_reverse = False  # as the arrow shows it: False is ▲, the smallest value on top
        self._marked: set[Any] = set()
        self._cursor_key: Any = None
        self.first_column = 0  # scrolling columns scrolled off to the left
        self.hidden_columns: frozenset[int] = frozenset()  # chosen off (the column chooser, [tui] hidden_columns_*)
        self._layout: ColumnLayout = layout(self.columns, (), 80, cap)
        self._layout_key: tuple = ()
        self.virtual_size = Size(0, 1)
        # row key -> (row, texts, style, strip, layout): a repaint rebuilds only the lines
        # whose row, live cells (elapsed time), style or column layout changed since drawn
        self._drawn: dict[Any, tuple[Row, list[str], Style, Strip, ColumnLayout]] = {}
        self._has_live = any(c.live for c in self.columns)
        self._base_style: Style | None = None  # self.rich_style during one render_lines call
        self._cursor_cache: tuple[tuple, Style] = ((), Style())
        self._row_styles: dict[tuple[str, str], Style] = {}  # (theme, row style) -> its readable colours
        self._painted = 0.0  # monotonic time of the last whole repaint

    # -- data -----------------------------------------------------------
    def visible_keys(self) -> tuple[Any, ...]:
        """Keys of the rows on screen now (what GPU telemetry polls)."""
        start = max(0, int(self.scroll_y))
        return tuple(self.data.order[start:start + max(1, self.size.height - 1)])

    def set_data(self, data: TableData) -> None:
        """Show ``data``; the cursor stays on its row key (or its position if the row left)."""
        old_key, old_pos = self._cursor_key, self.cursor
        old, top = self.data, int(self.scroll_y)
        self.data = data
        if self._marked:  # an intersection with 100k keys costs ~10 ms: skip it when nothing is marked
            before = len(self._marked)
            self._marked &= data.rows.keys()
            if len(self._marked) != before:
                self.post_message(self.MarksChanged(self, len(self._marked)))
        self.virtual_size = Size(0, len(data.order) + 1)
        relaid = self._relayout()
        pos = data.index.get(old_key, min(old_pos, max(0, len(data.order) - 1)))
        self._move_to(pos, follow=old_key in data.index and pos != old_pos)
        if int(self.scroll_y) != top:
            return  # scrolled: _move_to repainted everything
        body = max(1, self.size.height - 1)
        shown = data.order[top:top + body]
        if relaid or old.order[top:top + body] != shown:
            self.refresh()
            return
        # the same rows on screen: repaint the lines whose row changed (1% of rows
        # change per refresh: most refreshes repaint one line or none)
        old_rows, rows = old.rows, data.rows
        for i, key in enumerate(shown):
            if old_rows.get(key) is not rows[key]:
                self._refresh_row(top + i)
        if self._live_due():
            self._refresh_live()

    def _relayout(self) -> bool:
        """Place the columns for the current width and data; True when the placing changed."""
        key = (self.size.width, self.data.widths, self.first_column, self.cap, self.hidden_columns)
        if key == self._layout_key:
            return False
        self._layout_key = key
        new = layout(self.columns, self.data.widths, self.size.width or 80, self.cap, self.first_column,
                     self.scroll_room, self.hidden_columns)
        changed = new != self._layout
        self._layout = new
        return changed

    def hide_columns(self, hidden: frozenset[int]) -> None:
        """Show every column but ``hidden`` (indexes), in the schema's order."""
        self.hidden_columns = frozenset(hidden)
        if self._relayout():
            self.refresh()
            self.post_message(self.LayoutChanged(self))

    def shown_columns(self) -> list[int]:
        """Indexes of the columns not hidden, in order (what an export writes)."""
        return [i for i in range(len(self.columns)) if i not in self.hidden_columns]

    @property
    def column_layout(self) -> ColumnLayout:
        return self._layout

    def on_resize(self, _event: events.Resize) -> None:
        if self._relayout():
            self.refresh()
            self.post_message(self.LayoutChanged(self))

    def refresh_live(self) -> None:
        """Called once a second: repaint the visible lines if a column shows the
        clock (elapsed time) and they were last repainted LIVE_REPAINT ago, so
        those cells move on while the data stays the same."""
        if self.data.order and self._live_due():
            self._refresh_live()

    def _live_due(self) -> bool:
        return self._has_live and time.monotonic() - self._painted >= LIVE_REPAINT

    def _refresh_live(self) -> None:
        """Repaint the lines on screen whose clock cells read otherwise now than when
        drawn. An elapsed time over an hour shows minutes: most lines read the same 5 s
        later, and a whole-table repaint was ~5 ms of the UI thread at 500k jobs while
        the worker threads ran (bench/bench_tui.py, BENCH_PROFILE)."""
        self._painted = time.monotonic()
        top, now = int(self.scroll_y), self.clock()
        drawn, rows = self._drawn, self.data.rows
        for i, key in enumerate(self.data.order[top:top + max(1, self.size.height - 1)]):
            was = drawn.get(key)
            if was is None or was[1] != self._row_texts(rows[key], now):
                self._refresh_row(top + i)

    def refresh(self, *regions: Region, **kw: Any) -> VTable:
        if not regions:
            self._painted = time.monotonic()
        return super().refresh(*regions, **kw)

    @property
    def row_count(self) -> int:
        return len(self.data.order)

    def cursor_key(self) -> Any:
        return self.data.order[self.cursor] if self.data.order else None

    def cursor_row(self) -> Row | None:
        key = self.cursor_key()
        return None if key is None else self.data.rows.get(key)

    def marked_keys(self) -> tuple[Any, ...]:
        """Marked row keys, in display order."""
        idx = self.data.index
        return tuple(sorted((k for k in self._marked if k in idx), key=idx.__getitem__))

    def selected_keys(self) -> tuple[Any, ...]:
        """What an action applies to: the marked rows, else the cursor row."""
        marked = self.marked_keys()
        if marked:
            return marked
        key = self.cursor_key()
        return () if key is None else (key,)

    def select_key(self, key: Any) -> bool:
        """Move the cursor to ``key``; False when it is not shown."""
        pos = self.data.index.get(key)
        if pos is None:
            return False
        self._move_to(pos)
        return True

    # -- cursor ---------------------------------------------------------
    def _move_to(self, pos: int, follow: bool = True) -> None:
        n = len(self.data.order)
        pos = max(0, min(pos, n - 1)) if n else 0
        old, old_key = self.cursor, self._cursor_key
        self.cursor = pos
        self._cursor_key = self.data.order[pos] if n else None
        if self.notify_cursor and self._cursor_key != old_key:
            self.post_message(self.CursorMoved(self, self._cursor_key))
        body = max(1, self.size.height - 1)
        top = int(self.scroll_y)
        if pos < top:
            self.scroll_to(y=pos, animate=False, immediate=True)
        elif pos >= top + body:
            self.scroll_to(y=pos - body + 1, animate=False, immediate=True)
        if int(self.scroll_y) != top:
            self.refresh()  # scrolled: every line changes
        elif pos != old or self._cursor_key != old_key:  # not moved: no screen update (each refresh's set_data)
            self._refresh_row(old)
            self._refresh_row(pos)

    def _refresh_row(self, pos: int) -> None:
        """Repaint the line showing row ``pos`` (if it is on screen)."""
        y = pos - int(self.scroll_y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def action_cursor(self, delta: int) -> None:
        target = self.cursor + delta
        if target < 0 or target >= self.row_count:
            self.post_message(self.Edge(self, 1 if delta > 0 else -1))
        self._move_to(target)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor + direction * max(1, self.size.height - 2))

    def action_jump(self, where: int) -> None:
        self._move_to(self.row_count - 1 if where < 0 else 0)

    def action_columns(self, delta: int) -> None:
        """Scroll the non-key columns by one column (when they do not all fit)."""
        lay = self._layout
        if (delta > 0 and not lay.hidden_right) or (delta < 0 and not lay.hidden_left):
            return
        self.first_column = max(0, self.first_column + delta)
        if self._relayout():
            self.refresh()
            self.post_message(self.LayoutChanged(self))

    # -- marks ----------------------------------------------------------
    def action_mark(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self._marked.symmetric_difference_update({key})
            self._refresh_row(self.cursor)
            self._move_to(self.cursor + 1)
            self.post_message(self.MarksChanged(self, len(self._marked)))

    def unmark(self, keys: Iterable[Any] | None = None) -> None:
        """Unmark ``keys`` (every row when None)."""
        before = len(self._marked)
        if keys is None:
            self._marked.clear()
        else:
            self._marked.difference_update(keys)
        if len(self._marked) != before:
            self.refresh()
            self.post_message(self.MarksChanged(self, len(self._marked)))

    def clear_marks(self) -> None:
        self.unmark(None)

    def action_unmark_all(self) -> None:
        self.unmark(None)

    def action_activate(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self.post_message(self.RowActivated(self, key))

    # -- sorting --------------------------------------------------------
    def sort_by(self, column: int | None, reverse: bool = False) -> None:
        """Sort by ``column``; ``reverse`` as the arrow shows it (False: ▲, smallest on top)."""
        self.sort_column, self.sort_reverse = column, reverse
        self.post_message(self.SortRequested(self, self.sort_field, self.value_reverse))
        self._drawn.clear()
        self.refresh()

    @property
    def sort_field(self) -> int | None:
        return None if self.sort_column is None else self.columns[self.sort_column].field

    @property
    def value_reverse(self) -> bool:
        """The order of the sort column's values (its cells may run the other way)."""
        if self.sort_column is None:
            return self.sort_reverse
        return self.sort_reverse != self.columns[self.sort_column].inverse

    def action_cycle_sort(self) -> None:
        nxt = 0 if self.sort_column is None else self.sort_column + 1
        self.sort_by(None if nxt >= len(self.columns) else nxt, False)

    def action_reverse_sort(self) -> None:
        self.sort_by(self.sort_column if self.sort_column is not None else 0, not self.sort_reverse)

    def on_click(self, event: events.Click) -> None:
        self.focus()
        if event.y == 0:
            col = self._layout.column_at(event.x)
            if col is not None:
                self.sort_by(col, not self.sort_reverse if col == self.sort_column else False)
            return
        pos = int(self.scroll_y) + event.y - 1
        if 0 <= pos < self.row_count:
            self._move_to(pos)
            if event.chain >= 2:
                self.action_activate()
