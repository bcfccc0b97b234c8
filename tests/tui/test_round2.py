"""Issue 25 round 2 (TUI part 2), on the demo at 80x24 and 160x48: every screen says
SIMULATED, ``d`` opens at its first line, the view keys work everywhere ..."""

from __future__ import annotations

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.config import Config, General
from cockpit.tui.accounting import open_history
from cockpit.tui.app import CockpitApp
from tuiwait import screen_text, wait_for_text, wait_until

from .test_pilot import settle

SIZES = [(80, 24), (160, 48)]
SIZE_IDS = ["80x24", "160x48"]


def demo(tmp_path, **general) -> CockpitApp:
    cfg = Config(general=General(audit_log=str(tmp_path / "audit.jsonl"),
                                 demo_audit_log=str(tmp_path / "demo-audit.jsonl"), **general))
    return CockpitApp(DemoBackend(seed=7), cfg)


async def cursor_key_in(pilot, app, view_key: str) -> str:
    """Settled, ``view_key`` pressed (a view): the key of the row under its cursor."""
    await settle(pilot, app)
    await pilot.press(view_key)
    await settle(pilot, app)
    return str(app.main.active_table().cursor_key())


async def back_to_main(pilot, app):
    while app.screen is not app.main:
        app.pop_screen()
        await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_every_screen_says_simulated(tmp_path, size):
    app = demo(tmp_path)
    opened = {"node detail": ("2", "enter"), "describe": ("5", "d"), "audit": ("A",), "runbook": ("w",),
              "layout": ("5", "l", "enter"), "slurm logs": ("2", "L")}
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        for what, presses in [*opened.items(), ("history", None)]:
            if presses is None:
                open_history(app)
            else:
                for key in presses:
                    await pilot.press(key)
                    await pilot.pause()
            await wait_until(pilot, lambda: app.screen is not app.main, f"the {what} screen")
            first = (await wait_for_text(pilot, lambda t: t.strip(), what)).splitlines()[0]
            assert "SIMULATED" in first, (what, screen_text(app)[:400])
            if what == "describe":
                await wait_for_text(pilot, "the demo's simulated Slurm, not a real one", "describe's title")
            await back_to_main(pilot, app)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_number_keys_switch_views_on_history_and_utilization(tmp_path, size):
    from cockpit.tui.accounting import open_utilization
    from cockpit.tui.screens.history import HistoryScreen
    from cockpit.tui.screens.utilization import UtilizationScreen

    app = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        for opener, cls, first, longer in ((open_history, HistoryScreen, "1d", "7d"),
                                           (open_utilization, UtilizationScreen, "7d", "30d")):
            opener(app)
            screen = await wait_until(pilot, lambda: isinstance(app.screen, cls) and app.screen, cls.__name__)
            await pilot.press("right_square_bracket")
            await wait_until(pilot, lambda: screen.window == longer, "] widens the window")
            await pilot.press("left_square_bracket", "left_square_bracket")
            await wait_until(pilot, lambda: screen.window != longer and screen.window != first, "[ narrows it")
            await pilot.press("4")
            await wait_until(pilot, lambda: app.screen is app.main and app.main.current == "partitions",
                             f"4 on {cls.__name__}: the Partitions view")


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_describe_opens_at_its_first_line(tmp_path, size):
    from textual.widgets import RichLog

    app = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "d")
        log = await wait_until(pilot, lambda: len(app.screen.query(RichLog)) and app.screen.query_one(RichLog),
                               "the describe screen")
        await wait_until(pilot, lambda: len(log.lines) > 5, "scontrol show job's lines")
        await pilot.pause()
        assert log.max_scroll_y > 0 or size == (160, 48)  # at 80x24 it is longer than the pane
        assert log.scroll_y == 0
        assert "JobId=" in screen_text(app)  # its first line, on screen


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_L_on_a_job_leads_with_its_lines(tmp_path, size):
    app = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        job = await cursor_key_in(pilot, app, "5")
        await pilot.press("L")
        text = await wait_for_text(pilot, lambda t: f"── job {job}:" in t or f"names job {job}" in t,
                                   "the job's lines or that there are none")
        assert f"── job {job}:" in text  # the demo's log names every job it started
        lines = text.splitlines()
        at = next(i for i, ln in enumerate(lines) if f"── job {job}:" in ln)
        assert f"JobId={job}" in lines[at + 1] or f"({job})" in lines[at + 1]


def test_a_job_without_lines_is_said_so():
    from cockpit.tui.screens.slurmtext import job_lines

    lines = ["[t] sched: Allocate JobId=17 NodeList=a", "[t] JobId=170 done", "[t] _job_complete: JobId=4_2(9) done"]
    assert job_lines(lines, "17") == lines[:1] and job_lines(lines, "9") == lines[2:] and job_lines(lines, "18") == []


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_reservations_fit_in_a_few_lines(tmp_path, size):
    from cockpit.tui.accounting import open_reservations

    app = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        open_reservations(app)
        text = await wait_for_text(pilot, "GPU(s)", "the reservation and what it will block")
        lines = text.splitlines()
        first = next(i for i, ln in enumerate(lines) if "maint-leaf01" in ln)
        last = next(i for i, ln in enumerate(lines) if "GPU(s)" in ln)
        assert last - first < 5, "\n".join(lines[first:last + 1])  # was 15 lines at 80x24
        assert "dgx[001-008]" in text


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_columns_keep_one_order_at_every_width(tmp_path, size):
    app = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        for view in ("5", "2", "3", "4"):
            await pilot.press(view)
            await settle(pilot, app)
            table = app.main.active_table()
            for _ in range(3):
                shown = [p.index for p in table.column_layout.placed]
                assert shown == sorted(shown), (view, [table.columns[i].label for i in shown])
                await pilot.press("right")
                await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_enter_on_a_partition_has_a_breadcrumb_and_esc_comes_back(tmp_path, size):
    app = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        part = await cursor_key_in(pilot, app, "4")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.main.current == "nodes", "the Nodes view")
        head = (await wait_for_text(pilot, f"Partitions › {part} › Nodes", "the breadcrumb")).splitlines()[0]
        assert f"Partitions › {part} › Nodes" in head and app.sub_title == f"Partitions › {part} › Nodes"
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.main.current == "partitions", "Esc: back to Partitions")
        assert app.main.active_table().cursor_key() == part
        assert app.main.views["nodes"].query_text == ""


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_no_slurm_screen_is_whole(size):
    from cockpit.tui.screens.nocluster import NoClusterApp, help_text

    app = NoClusterApp("scontrol is not on PATH", None)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app)
        for line in help_text("scontrol is not on PATH", None).plain.splitlines():
            assert line.strip() in text, line


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_the_column_chooser_hides_a_column_and_saves_it(tmp_path, size):
    from cockpit.config import load_config
    from cockpit.tui.screens.tablecmds import ColumnsScreen

    cfg_file = tmp_path / "config.toml"
    cfg_file.write_text("# mine\n[tui]\ntheme = \"textual-dark\"\n")
    app = demo(tmp_path)
    from dataclasses import replace

    app.config = replace(app.config, path=str(cfg_file))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        name = [c.label for c in table.columns].index("NAME")
        await pilot.press("C")
        chooser = await wait_until(pilot, lambda: isinstance(app.screen, ColumnsScreen) and app.screen, "the chooser")
        chooser.query_one("SelectionList").deselect(name)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen is app.main, "back on the jobs view")
        assert name not in [p.index for p in table.column_layout.placed]
        assert "NAME" not in table.render_line(0).text
    saved = load_config(str(cfg_file))
    assert saved.tui.hidden_columns_jobs == "NAME" and saved.tui.theme == "textual-dark"
    assert cfg_file.read_text().startswith("# mine\n")  # the operator's file, kept
    again = demo(tmp_path, )
    again.config = replace(again.config, tui=saved.tui)
    async with again.run_test(size=size) as pilot:  # the next session starts with the choice
        await settle(pilot, again)
        await pilot.press("5")
        await settle(pilot, again)
        assert name not in [p.index for p in again.main.active_table().column_layout.placed]


async def test_a_config_that_cannot_be_written_is_one_line(tmp_path):
    from dataclasses import replace

    from cockpit.tui.screens.tablecmds import ColumnsScreen

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")  # a file where the config's directory would be: unwritable, even for root
    app = demo(tmp_path)
    app.config = replace(app.config, path=str(blocker / "config.toml"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "C")
        chooser = await wait_until(pilot, lambda: isinstance(app.screen, ColumnsScreen) and app.screen, "chooser")
        chooser.query_one("SelectionList").deselect(1)
        await pilot.press("enter")
        msg = await wait_until(pilot, lambda: next((n.message for n in app._notifications
                                                    if "columns not saved" in n.message), None), "the error")
        assert "\n" not in msg and "config.toml" in msg


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_export_writes_the_view_as_shown(tmp_path, size):
    import csv
    import json

    from cockpit.tui.screens.tablecmds import ExportScreen

    app = demo(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("5", "slash", *"state:PD", "enter")
        await settle(pilot, app)
        table = app.main.active_table()
        order = [table.data.rows[k].cells[0] for k in table.data.order]  # the JOBID cells, as shown
        assert order and len(order) < table.data.total  # filtered
        for name, fmt in (("jobs.csv", "csv"), ("jobs.json", "json")):
            await pilot.press("E")
            dialog = await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen) and app.screen, "export")
            dialog.query_one("Input").value = str(tmp_path / name)
            await pilot.press("enter")
            await wait_until(pilot, lambda n=name: any(n in str(x.message) for x in app._notifications), "said")
            text = (tmp_path / name).read_text()
            if fmt == "csv":
                got = list(csv.reader(text.splitlines()))
                assert got[0][0] == "JOBID" and [r[0] for r in got[1:]] == order
            else:
                got = json.loads(text)
                state = [c.label for c in table.columns].index("STATE")
                shown_states = [table.data.rows[k].cells[state] for k in table.data.order]
                assert [r["JOBID"] for r in got] == order and [r["STATE"] for r in got] == shown_states
        await pilot.press("E")
        dialog = await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen) and app.screen, "export")
        dialog.query_one("Input").value = str(tmp_path / "no" / "such" / "dir.csv")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("not exported: cannot write" in str(x.message)
                                            for x in app._notifications), "the one-line error")


async def test_the_one_second_tick_after_the_screens_are_gone_does_nothing(tmp_path):
    """The 1 Hz timer can fire once more while the app shuts down, after its screens are
    popped: that tick raised ScreenStackError and failed a CI run (2026-12-03). Here the
    tick runs, deterministically, on an app whose screen stack is empty."""
    from textual.app import ScreenStackError

    app = demo(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
    with pytest.raises(ScreenStackError):
        app.screen  # the state the last tick meets
    app._tick()
