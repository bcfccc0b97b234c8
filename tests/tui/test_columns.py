"""Columns use the width they have (issue 16, item 7): whole values while width is
free, the key columns kept and the rest scrolled a column at a time when narrow,
and the sort arrow pointing the way the cells run."""

from __future__ import annotations

from cockpit.tui.columns import GUTTER, layout
from cockpit.tui.rows import JOB_SCHEMA, Column, job_row
from cockpit.tui.livetable import LiveTable
from cockpit.models import record_replace

from .fakes import small_cluster
from .test_pilot import make_app, settle

COLS = (Column("ID", 4, 0, pin=True), Column("NAME", 4, 1), Column("STATE", 4, 2, pin=True),
        Column("REASON", 4, 3, pin=True), Column("NODES", 4, 4))


def test_everything_fits_at_its_natural_width():
    lay = layout(COLS, (6, 30, 9, 46, 20), 160, cap=40)
    assert [p.width for p in lay.placed] == [6, 30, 9, 46, 20] and not lay.scrolls
    assert [p.index for p in lay.placed] == [0, 1, 2, 3, 4]  # schema order


def test_the_widest_are_cut_to_a_common_limit_before_anything_scrolls():
    lay = layout(COLS, (6, 30, 9, 46, 20), 100, cap=20)
    assert not lay.scrolls and lay.line_width() <= 100
    widths = [p.width for p in lay.placed]
    assert widths[0] == 6 and widths[2] == 9 and widths[3] == widths[1] < 46  # only the widest cut


def test_narrow_keeps_the_key_columns_and_scrolls_the_rest():
    lay = layout(COLS, (6, 30, 9, 46, 20), 60, cap=20)
    shown = [p.index for p in lay.placed]
    assert {0, 2, 3} <= set(shown) and lay.pinned == 3 and shown == sorted(shown)  # schema order (issue 25)
    assert lay.scrolls and lay.hidden_left == 0 and lay.line_width() <= 60
    right = layout(COLS, (6, 30, 9, 46, 20), 60, cap=20, first=1)
    assert [p.index for p in right.placed] == [0, 2, 3, 4] and right.hidden_left == 1


def test_column_at_maps_screen_cells_to_columns():
    lay = layout(COLS, (6, 30, 9, 46, 20), 160, cap=40)
    assert lay.column_at(0) is None  # the mark gutter
    assert lay.column_at(GUTTER) == 0 and lay.column_at(GUTTER + 7) == 1


def test_live_table_measures_the_widest_cell_and_grows_with_changes():
    nodes, jobs, *_ = small_cluster()
    live = LiveTable(job_row, lambda j: j.job_id)
    live.configure("", None, None, False)
    data = live.update(jobs)
    name = [c.label for c in JOB_SCHEMA.columns].index("NAME")
    assert data.widths[name] >= len("llama-70b")
    longer = record_replace(jobs[0], name="x" * 70)
    data = live.update((longer, *jobs[1:]))
    assert data.widths[name] == 70


async def test_no_value_is_cut_while_width_is_free_and_time_sorts_as_its_arrow_says():
    app = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        assert table.cut_while_free() == []
        time_col = [c.label for c in table.columns].index("TIME")
        table.sort_by(time_col, False)  # ▲: the shortest elapsed time on top
        await settle(pilot, app)
        running = [k for k in table.data.order if table.data.rows[k].values[6] is not None]
        starts = [table.data.rows[k].values[6] for k in running]
        assert starts == sorted(starts, reverse=True)  # a later start is a shorter elapsed time
        assert "TIME▲" in table.render_line(0).text


async def test_narrow_jobs_view_keeps_id_state_user_gpus_reason_and_right_scrolls_a_column():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        keys = ["JOBID", "USER", "STATE", "GPUS", "REASON"]

        def shown():
            return [table.columns[p.index].label for p in table.column_layout.placed]

        order = [c.label for c in table.columns]
        assert [c for c in shown() if c in keys] == keys
        assert shown() == sorted(shown(), key=order.index)  # the one order of the wide table (issue 25)
        before = table.column_layout.hidden_left
        await pilot.press("right")
        await settle(pilot, app)
        assert table.column_layout.hidden_left == before + 1
        assert [c for c in shown() if c in keys] == keys and shown() == sorted(shown(), key=order.index)


async def test_the_more_columns_hint_follows_a_resize():
    """The status line's "←→ N more column(s)" is said again when the table is placed
    again (under Python 3.13/3.14 a hint computed while a screen was pushed stayed)."""
    from .test_pilot import screen_text

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        assert "more column(s)" in screen_text(app)
        await pilot.resize_terminal(240, 30)
        await settle(pilot, app)
        assert not app.main.active_table().column_layout.scrolls
        assert "more column(s)" not in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot, app)
        assert "more column(s)" in screen_text(app)
