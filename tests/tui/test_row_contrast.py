"""Every row state reads in every theme cockpit offers (issue 25, item 9: mixed rows
were 2.7:1 and down/failed rows 4.1:1 on textual-dark; WCAG asks 4.5:1). The ratio is
computed from the colours of the line as drawn, not from the CSS."""

from __future__ import annotations

from textual.app import App

from cockpit.tui.widgets.vtable import ROW_STYLES, VTable, contrast
from cockpit.tui.widgets.vtable_draw import readable

from .test_cursor_colours import _colours, _data

STYLES = (*ROW_STYLES, "")


class Host(App):
    def compose(self):
        from cockpit.tui.rows import Column

        self.table = VTable([Column("A", 12, 0)], id="t")
        yield self.table


async def test_every_row_state_reads_in_every_theme():
    app = Host()
    bad, seen = [], 0
    async with app.run_test(size=(40, 20)) as pilot:
        table = app.table
        table.set_data(_data())
        table._marked = {"mixed"}  # a marked row off the cursor too
        for theme in sorted(app.available_themes):
            app.theme = theme
            await pilot.pause()
            for pos in range(table.row_count):
                table._move_to((pos + 1) % table.row_count)  # the cursor elsewhere: its colours are its own
                seg = next(s for s in table.render_line(pos + 1) if s.text.strip())
                fg, bg = _colours(seg.style)
                if fg is None or bg is None:  # an ANSI theme: the terminal's own colours
                    assert "ansi" in theme, (theme, STYLES[pos], seg.style)
                    continue
                seen += 1
                ratio = contrast(fg, bg)
                if ratio < 4.5:
                    bad.append((theme, STYLES[pos] or "plain", round(ratio, 2), fg.hex, bg.hex))
    assert seen > 10 * len(STYLES)  # the ratios were measured, in many themes
    assert not bad, bad


def test_readable_keeps_a_readable_colour_and_fixes_a_dim_one():
    from textual.color import Color

    bg = Color.parse("#1e1e1e")
    good = Color.parse("#ffffff")
    assert readable(good, bg) == good
    dim = Color.parse("#444444")
    fixed = readable(dim, bg)
    assert contrast(fixed, bg) >= 4.5 and fixed != dim
