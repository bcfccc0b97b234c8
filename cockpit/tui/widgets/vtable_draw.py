"""How a VTable draws its lines: the header, the cells placed by the column layout,
the mark gutter and the cursor row's colours (a mixin of VTable, cockpit/tui/widgets/vtable.py).

The cursor row's colours are worked out here, not taken from the row's style: the
theme's cursor background over the table's background, and black or white text,
whichever has the higher WCAG contrast against it; an ANSI theme reverses the
terminal's own colours. Every other row's colour (mixed, down, pending ...) is the
theme's, moved towards white or black until it reaches WCAG's 4.5:1 against the
table's background (issue 25: $secondary on a dark theme was 2.7:1, $error 4.1:1).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from textual.color import BLACK, WHITE, Color
from textual.geometry import Region
from textual.strip import Strip

from cockpit.text import truncate
from cockpit.tui.rows import Row

MARK = "*"
READABLE = 4.5  # WCAG AA for text


def contrast(a: Color, b: Color) -> float:
    """The WCAG contrast ratio of two opaque colours (1 to 21)."""
    def lum(c: Color) -> float:
        def lin(v: int) -> float:
            x = v / 255
            return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
        return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b)

    la, lb = lum(a), lum(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)



def readable(fg: Color, bg: Color, ratio: float = READABLE) -> Color:
    """``fg``, or the nearest blend of it towards white or black (whichever ``bg`` is
    farther from) with at least ``ratio`` contrast against ``bg``."""
    if contrast(fg, bg) >= ratio:
        return fg
    to = max((WHITE, BLACK), key=lambda c: contrast(c, bg))
    for step in range(1, 21):
        c = fg.blend(to, step / 20)
        if contrast(c, bg) >= ratio:
            return c
    return to


class VTableDrawing:
    """render_line and its helpers; the state (data, layout, marks, cursor) is VTable's."""

    def cursor_style(self) -> Style:
        """The cursor row's colours: the theme's cursor background (over this table's
        background) and black or white text, whichever reads on it."""
        key = (self.app.theme, self.has_focus)
        if self._cursor_cache[0] == key:
            return self._cursor_cache[1]
        comp = self.get_component_styles("vtable--cursor")
        under = self.background_colors[1]
        bg = under + comp.background
        if bg.ansi is not None or under.ansi is not None:  # an ANSI theme: the terminal's own colours
            style = Style(reverse=True, bold=True)
        else:
            fg = max((WHITE, BLACK), key=lambda c: contrast(c, bg))
            style = Style(color=fg.rich_color, bgcolor=bg.rich_color, bold=bool(comp.text_style.bold))
        self._cursor_cache = (key, style)
        return style

    def row_style(self, name: str) -> Style:
        """The colours of a row in state ``name`` (``vtable--NAME``), made readable on this
        table's background (cached per theme)."""
        key = (self.app.theme, name)
        got = self._row_styles.get(key)
        if got is None:
            got = self.get_component_rich_style(f"vtable--{name}", partial=True)
            comp = self.get_component_styles(f"vtable--{name}")
            under = self.background_colors[1]
            if comp.has_rule("color") and under.ansi is None and comp.color.ansi is None:
                fg = under + comp.color  # a colour with alpha ($text-muted) as drawn
                got += Style(color=readable(fg, under).rich_color)
            self._row_styles[key] = got
        return got

    def _cells(self, texts: Sequence[str], style: Style, gutter: str = " ") -> list[Segment]:
        """The line's cells as placed, in one segment (the whole line has one style)."""
        parts = [gutter]
        for p in self._layout.placed:
            col = self.columns[p.index]
            t = truncate(texts[p.index], p.width)
            pad = p.width - len(t) if t.isascii() else p.width - Segment(t).cell_length
            parts.append((" " * pad + t + " ") if col.align == "right" else (t + " " * pad + " "))
        return [Segment("".join(parts), style)]

    def _header(self) -> list[Segment]:
        lay = self._layout
        labels = []
        for i, col in enumerate(self.columns):
            label = col.label + (("▼" if self.sort_reverse else "▲") if i == self.sort_column else "")
            labels.append(label)
        scrolled = next((p.index for p in lay.placed if p.index not in lay.pins), None)
        if lay.hidden_left and scrolled is not None:  # the first scrolling column shown: more to its left
            labels[scrolled] = "◂" + labels[scrolled]
        if lay.hidden_right and lay.placed:
            i = lay.placed[-1].index
            width = lay.placed[-1].width
            labels[i] = truncate(labels[i], max(1, width - 1)).ljust(width - 1) + "▸"
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
        scroll_y = int(self.scroll_y)
        base = self._base_style or self.rich_style
        if y == 0:
            segs = self._header()
            return Strip(segs).crop(0, width).extend_cell_length(width, segs[0].style if segs else base).simplify()
        pos = scroll_y + y - 1
        if pos >= self.row_count:
            return Strip.blank(width, base)
        key = self.data.order[pos]
        row = self.data.rows[key]
        style = base
        if row.style:
            style += self.row_style(row.style)
        marked = key in self._marked
        if marked:
            style += self.get_component_rich_style("vtable--marked", partial=True)
        if pos == self.cursor:
            style += self.cursor_style()
        texts = self._row_texts(row, self.clock())
        drawn = self._drawn.get(key)
        lay = self._layout
        if drawn is not None and drawn[0] is row and drawn[2] == style and drawn[1] == texts and drawn[4] is lay:
            strip = drawn[3]  # unchanged lines cost a lookup
        else:
            # One segment across the width: Textual's compositor, its filters and the
            # terminal writer work per segment (one a column was ~10% more per line).
            strip = Strip(self._cells(texts, style, MARK if marked else " "))
            strip = strip.crop(0, width).extend_cell_length(width, style).simplify()
            if len(self._drawn) > 4 * max(self.size.height, 50):
                self._drawn.clear()  # only what is on screen is worth keeping
            self._drawn[key] = (row, texts, style, strip, lay)
        return strip.crop(0, width).extend_cell_length(width, style)  # the same strip while the width holds

    def cut_while_free(self) -> list[str]:
        """Labels of the columns drawn narrower than their cells while the line has room
        to spare (what the snapshot tests assert never happens)."""
        lay = self._layout
        free = self.size.width - lay.line_width()
        if lay.scrolls or free <= 0:
            return []
        from cockpit.tui.columns import natural_widths

        natural = natural_widths(self.columns, self.data.widths)
        return [self.columns[p.index].label for p in lay.placed if p.width < natural[p.index]]

