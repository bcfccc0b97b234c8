"""The cursor row stays readable: its foreground against its background, read from the
rendered line, for every row style (pending, drained, marked ...) in every theme
Textual ships, focused and not (issue 16, item 1: orange on orange)."""

from __future__ import annotations

from textual.app import App
from textual.color import Color

from cockpit.tui.rows import Column, Row, TableData
from cockpit.tui.widgets.vtable import MARK, ROW_STYLES, VTable, contrast

from .test_pilot import make_app, settle

STYLES = (*ROW_STYLES, "")


class Host(App):
    def compose(self):
        self.table = VTable([Column("A", 12, 0)], id="t")
        yield self.table


def _data() -> TableData:
    rows = {s or "plain": Row(s or "plain", (s or "plain",), (s,), s) for s in STYLES}
    order = tuple(rows)
    return TableData(rows, order, {k: i for i, k in enumerate(order)}, len(order), (12,))


def _colours(seg_style) -> tuple[Color | None, Color | None]:
    fg = Color.from_rich_color(seg_style.color) if seg_style.color and seg_style.color.triplet else None
    bg = Color.from_rich_color(seg_style.bgcolor) if seg_style.bgcolor and seg_style.bgcolor.triplet else None
    return fg, bg


async def test_cursor_row_reads_in_every_theme_and_style():
    app = Host()
    bad = []
    async with app.run_test(size=(40, 20)) as pilot:
        table = app.table
        table.set_data(_data())
        table._marked = {"pending", "drain"}  # marked rows under the cursor too
        for theme in sorted(app.available_themes):
            app.theme = theme
            for focused in (True, False):
                (table.focus if focused else app.set_focus)(*(() if focused else (None,)))
                await pilot.pause()
                for pos in range(table.row_count):
                    table._move_to(pos)
                    seg = next(s for s in table.render_line(pos + 1) if s.text.strip())
                    style = seg.style
                    if style.reverse:  # an ANSI theme: the terminal's own colours, swapped
                        default = (None, "default")
                        fg_name = style.color.name if style.color else None
                        bg_name = style.bgcolor.name if style.bgcolor else None
                        # the terminal's default foreground and background differ; any other pair must too
                        assert fg_name != bg_name or fg_name in default, (theme, STYLES[pos], style)
                        continue
                    fg, bg = _colours(style)
                    assert fg is not None and bg is not None, (theme, STYLES[pos], style)
                    ratio = contrast(fg, bg)
                    if ratio < 4.5:
                        bad.append((theme, STYLES[pos], focused, round(ratio, 2), fg.hex, bg.hex))
    assert not bad, bad


async def test_marked_rows_have_a_gutter_mark_not_the_pending_colour():
    app = Host()
    async with app.run_test(size=(40, 20)) as pilot:
        table = app.table
        table.set_data(_data())
        table.focus()
        table._move_to(1)
        table.action_mark()  # marks the pending row (1); the cursor moves on
        table._move_to(table.row_count - 1)  # and away
        await pilot.pause()
        running, pending = table.render_line(1), table.render_line(2)
        assert pending.text.startswith(MARK) and not running.text.startswith(MARK)
        marked_style = next(s for s in pending if s.text.strip() and s.text != MARK).style
        assert marked_style.bold and not marked_style.underline
        table.action_unmark_all()
        assert table.marked_keys() == ()
        assert not table.render_line(2).text.startswith(MARK)


async def test_pending_job_under_the_cursor_in_the_app(tmp_path):
    """The real jobs view: a pending job's row under the cursor, read from the screen."""
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        assert table.select_key(103)  # pending
        await settle(pilot, app)
        line = table.render_line(table.cursor - int(table.scroll_y) + 1)
        seg = next(s for s in line if "sweep" in s.text or "103" in s.text)
        fg, bg = _colours(seg.style)
        assert contrast(fg, bg) >= 4.5, (fg, bg)
