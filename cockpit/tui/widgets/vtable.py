"""A virtual table: draws only the visible lines, whatever the number of rows.

Textual's DataTable builds every row up front and re-lays out on updates
(seconds at 100k rows). This widget holds an immutable :class:`TableData`
prepared off the UI thread; swapping it in keeps the cursor on the same row
key and costs O(visible lines). Line 0 is a fixed header (click to sort).

Seams for actions: :meth:`selected_keys` (marked rows, else the cursor row),
:meth:`marked_keys`, and the ``RowActivated`` message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cockpit.text import truncate
from cockpit.tui.rows import Column, Row, TableData

# Seconds between repaints of cells that show the clock (a job's elapsed time) when
# nothing else repaints them: a whole-table repaint is ~10 ms of the UI thread.
LIVE_REPAINT = 5.0
ROW_STYLES = ("running", "pending", "bad", "idle", "mixed", "alloc", "drain", "down", "idlegpu")


class VTable(ScrollView, can_focus=True):
    """Rows keyed by id; cursor, marks, sort column; renders with render_line."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="table.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="table.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="table.page-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="table.page-down"),
        Binding("home,g", "jump(0)", "Top", show=False, id="table.top"),
        Binding("end,G", "jump(-1)", "Bottom", show=False, id="table.bottom"),
        Binding("space", "mark", "Mark", id="table.mark"),
        Binding("enter", "activate", "Open", id="table.open"),
        Binding("s", "cycle_sort", "Sort", id="table.sort"),
        Binding("S", "reverse_sort", "Reverse", show=False, id="table.sort-reverse"),
    ]
    COMPONENT_CLASSES = {"vtable--header", "vtable--cursor", "vtable--marked"} | {f"vtable--{s}" for s in ROW_STYLES}
    DEFAULT_CSS = """
    VTable { height: 1fr; scrollbar-size: 1 1; }
    VTable > .vtable--header { text-style: bold reverse; }
    VTable > .vtable--cursor { background: $accent 60%; text-style: bold; }
    VTable:blur > .vtable--cursor { background: $accent 30%; }
    VTable > .vtable--marked { text-style: underline; color: $warning; }
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
        """The user asked for another sort column/direction; the owner re-sorts off-thread."""

        def __init__(self, table: VTable, field: int | None, reverse: bool) -> None:
            super().__init__()
            self.table, self.field, self.reverse = table, field, reverse

    def __init__(self, columns: Sequence[Column], *, clock: Callable[[], float] = time.time, **kw: Any) -> None:
        super().__init__(**kw)
        self.columns = tuple(columns)
        self.clock = clock
        self.data = TableData.empty()
        self.sort_column: int | None = None  # index into columns
        self.sort_reverse = False
        self._marked: set[Any] = set()
        self._cursor_key: Any = None
        self._line_width = sum(c.width + 1 for c in self.columns)
        self.virtual_size = Size(self._line_width, 1)
        # row key -> (row, texts, style, segments): a repaint rebuilds only the lines
        # whose row, live cells (elapsed time) or style changed since they were drawn
        self._drawn: dict[Any, tuple[Row, list[str], Style, Strip]] = {}
        self._has_live = any(c.live for c in self.columns)
        self._base_style: Style | None = None  # self.rich_style during one render_lines call
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
            self._marked &= data.rows.keys()
        self.virtual_size = Size(self._line_width, len(data.order) + 1)
        pos = data.index.get(old_key, min(old_pos, max(0, len(data.order) - 1)))
        self._move_to(pos, follow=old_key in data.index and pos != old_pos)
        if int(self.scroll_y) != top:
            return  # scrolled: _move_to repainted everything
        body = max(1, self.size.height - 1)
        shown = data.order[top:top + body]
        if old.order[top:top + body] != shown or self._live_due():
            self.refresh()
            return
        # the same rows on screen: repaint the lines whose row changed (1% of rows
        # change per refresh: most refreshes repaint one line or none)
        old_rows, rows = old.rows, data.rows
        for i, key in enumerate(shown):
            if old_rows.get(key) is not rows[key]:
                self._refresh_row(top + i)

    def refresh_live(self) -> None:
        """Called once a second: repaint the visible lines if a column shows the
        clock (elapsed time) and they were last repainted LIVE_REPAINT ago, so
        those cells move on while the data stays the same."""
        if self.data.order and self._live_due():
            self.refresh()

    def _live_due(self) -> bool:
        return self._has_live and time.monotonic() - self._painted >= LIVE_REPAINT

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
        old = self.cursor
        self.cursor = pos
        self._cursor_key = self.data.order[pos] if n else None
        body = max(1, self.size.height - 1)
        top = int(self.scroll_y)
        if pos < top:
            self.scroll_to(y=pos, animate=False, immediate=True)
        elif pos >= top + body:
            self.scroll_to(y=pos - body + 1, animate=False, immediate=True)
        if int(self.scroll_y) != top:
            self.refresh()  # scrolled: every line changes
        else:
            self._refresh_row(old)
            self._refresh_row(pos)

    def _refresh_row(self, pos: int) -> None:
        """Repaint the line showing row ``pos`` (if it is on screen)."""
        y = pos - int(self.scroll_y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def action_cursor(self, delta: int) -> None:
        self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor + direction * max(1, self.size.height - 2))

    def action_jump(self, where: int) -> None:
        self._move_to(self.row_count - 1 if where < 0 else 0)

    def action_mark(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self._marked.symmetric_difference_update({key})
            self._refresh_row(self.cursor)
            self._move_to(self.cursor + 1)

    def clear_marks(self) -> None:
        self._marked.clear()
        self.refresh()

    def action_activate(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self.post_message(self.RowActivated(self, key))

    # -- sorting --------------------------------------------------------
    def sort_by(self, column: int | None, reverse: bool = False) -> None:
        self.sort_column, self.sort_reverse = column, reverse
        field = None if column is None else self.columns[column].field
        self.post_message(self.SortRequested(self, field, reverse))
        self.refresh()

    @property
    def sort_field(self) -> int | None:
        return None if self.sort_column is None else self.columns[self.sort_column].field

    def action_cycle_sort(self) -> None:
        nxt = 0 if self.sort_column is None else self.sort_column + 1
        self.sort_by(None if nxt >= len(self.columns) else nxt, False)

    def action_reverse_sort(self) -> None:
        self.sort_by(self.sort_column if self.sort_column is not None else 0, not self.sort_reverse)

    def _column_at(self, x: int) -> int | None:
        pos = 0
        for i, col in enumerate(self.columns):
            if pos <= x < pos + col.width + 1:
                return i
            pos += col.width + 1
        return None

    def on_click(self, event: events.Click) -> None:
        self.focus()
        if event.y == 0:
            col = self._column_at(event.x + int(self.scroll_x))
            if col is not None:
                self.sort_by(col, not self.sort_reverse if col == self.sort_column else False)
            return
        pos = int(self.scroll_y) + event.y - 1
        if 0 <= pos < self.row_count:
            self._move_to(pos)
            if event.chain >= 2:
                self.action_activate()

    # -- drawing --------------------------------------------------------
    def _cells(self, texts: Sequence[str], style: Style) -> list[Segment]:
        segs = []
        for col, text in zip(self.columns, texts):
            t = truncate(text, col.width)
            pad = col.width - len(t) if t.isascii() else col.width - Segment(t).cell_length
            t = (" " * pad + t) if col.align == "right" else (t + " " * pad)
            segs.append(Segment(t + " ", style))
        return segs

    def _header(self) -> list[Segment]:
        labels = []
        for i, col in enumerate(self.columns):
            mark = ("▼" if self.sort_reverse else "▲") if i == self.sort_column else ""
            labels.append(col.label + mark)
        return self._cells(labels, self.get_component_rich_style("vtable--header"))

    def _row_texts(self, row: Row, now: float) -> list[str]:
        return [col.live(row.values[col.field], now) if col.live else cell for col, cell in zip(self.columns, row.cells)]

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's own style walks every ancestor's CSS (~0.1 ms): once per
        # repaint, not once per line.
        self._base_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._base_style = None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = int(self.scroll_x), int(self.scroll_y)
        base = self._base_style or self.rich_style
        if y == 0:
            segs = self._header()
        else:
            pos = scroll_y + y - 1
            if pos >= self.row_count:
                return Strip.blank(width, base)
            key = self.data.order[pos]
            row = self.data.rows[key]
            style = base
            if row.style:
                style += self.get_component_rich_style(f"vtable--{row.style}", partial=True)
            if key in self._marked:
                style += self.get_component_rich_style("vtable--marked", partial=True)
            if pos == self.cursor:
                style += self.get_component_rich_style("vtable--cursor", partial=True)
            texts = self._row_texts(row, self.clock())
            drawn = self._drawn.get(key)
            if drawn is not None and drawn[0] is row and drawn[2] == style and drawn[1] == texts:
                strip = drawn[3]  # a Strip keeps its recent crops: unchanged lines cost a lookup
            else:
                segs = self._cells(texts, style)
                strip = Strip(segs)
                if len(self._drawn) > 4 * max(self.size.height, 50):
                    self._drawn.clear()  # only what is on screen is worth keeping
                self._drawn[key] = (row, texts, style, strip)
            return strip.crop(scroll_x, scroll_x + width).extend_cell_length(width, style)
        line_style = segs[0].style if segs else base
        strip = Strip(segs).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, line_style)
