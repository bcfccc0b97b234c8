"""Pilot tests: navigation, filter, sort, drill-down, marks, pause, stale banner."""

from __future__ import annotations


import pytest

from cockpit.config import Config, Refresh
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen
from tuiwait import screen_text, wait_for_text, wait_until  # screen_text: other tests import it from here
from cockpit.models import record_replace

from .fakes import NOW, FakeBackend

FAST = Config(refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1, topology=0.1))


async def settle(pilot, app, delay=0.15):
    from textual.worker import WorkerState

    await pilot.pause(delay)
    # the first poll has reached the screens (however long a busy machine took for it)
    await wait_until(pilot, lambda: app.snapshot is not None, "the first snapshot")
    # every worker but the poller (which runs for the app's lifetime) has finished, and so
    # has any read of the nodes (GPU telemetry) the poller started. An action's worker that
    # waits on a dialog waits for the operator: it is not work in progress; nor is a job log
    # that shows its last lines and follows the file (it runs until the screen closes).
    from textual.screen import ModalScreen

    for _ in range(200):
        asking = isinstance(app.screen, ModalScreen)
        following = getattr(app.screen, "following", False)
        busy = [w for w in app.workers if w.group != "poller" and not (asking and w.group == "action")
                and not (following and w.group == "joblog")
                and w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        poller = getattr(app, "poller", None)
        if not busy and not (poller and any(poller.node_busy(k) for k in poller.node_kinds)):
            break
        await pilot.pause(0.02)
    await pilot.pause()


def make_app(backend=None, config=None, **kw):
    return CockpitApp(backend or FakeBackend(), config, clock=kw.pop("clock", lambda: NOW), **kw)


async def test_number_keys_and_colon_commands_switch_views():
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.current_view() == "pulse"
        for key, view in zip("2345", ("nodes", "gpus", "partitions", "jobs")):
            await pilot.press(key)
            assert app.current_view() == view
        await pilot.press("colon", *"nodes", "enter")
        assert app.current_view() == "nodes"
        await pilot.press("colon", *"bogus", "enter")
        await wait_for_text(pilot, "unknown command :bogus")


async def test_filter_with_field_terms_numeric_and_bad_field():
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        assert table.row_count == 5
        await pilot.press("slash", *"user:alice", "enter")
        await settle(pilot, app)
        assert set(table.data.order) == {101, 103}
        await pilot.press("slash")
        app.main.query_one("#filter").value = "gpus>2 state:running"
        await pilot.press("enter")
        await settle(pilot, app)
        assert list(table.data.order) == [101]
        await pilot.press("slash")
        app.main.query_one("#filter").value = "colour:red"
        await pilot.press("enter")
        await wait_for_text(pilot, "unknown filter field 'colour'")
        await settle(pilot, app)
        assert list(table.data.order) == [101]  # a bad filter keeps the previous one
        await pilot.press("escape", "escape")
        await settle(pilot, app)
        assert table.row_count == 5


async def test_sort_key_cycles_columns_and_header_click_reverses():
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        table = app.main.active_table()
        await pilot.press("s")  # by NODE
        await settle(pilot, app)
        assert list(table.data.order) == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu10"]
        await pilot.press("S")
        await settle(pilot, app)
        assert table.data.order[0] == "gpu10"
        lay = table.column_layout
        x = next(x for x in range(table.size.width) if lay.column_at(x) == 1)
        await pilot.click(table, offset=(x, 0))  # STATE header
        await settle(pilot, app)
        assert table.sort_column == 1
        assert [table.data.rows[k].cells[1] for k in table.data.order][0].endswith("allocated")


async def test_drill_down_job_to_node_and_back():
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        assert app.main.active_table().cursor_key() == 101
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, JobDetailScreen)
        text = screen_text(app)
        assert "llama-70b" in text and "idx 0,1,2,3,4,5,6,7" in text and "/nonexistent/out.log" in text
        assert "Nodes (1)" in text and "state" in text and "alice" in text  # the glance, above the links
        assert app.screen.focused is app.screen.links  # Enter Enter: the links have the focus
        from textual.containers import VerticalScroll

        app.screen.query_one(VerticalScroll).scroll_end(animate=False)
        await wait_for_text(pilot, "not readable from here")  # the log tails, at the bottom
        await settle(pilot, app)
        await pilot.press("enter")  # the first node of the job
        await settle(pilot, app)
        assert isinstance(app.screen, NodeDetailScreen) and app.screen.key == "gpu01"
        text = screen_text(app)
        assert "GPU 7" in text and "job 101 user alice" in text
        await pilot.press("escape", "escape")
        assert app.screen is app.main


async def test_node_detail_shows_reason_who_and_idle_gpus():
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("colon", *"node gpu03", "enter")
        await settle(pilot, app)
        text = screen_text(app)
        assert "Xid 79 [bold]fallen off the bus[/bold]" in text  # literal, not markup
        assert "root" in text and "1h00m ago" in text
        assert "idle — node unavailable" in text


async def test_cluster_strings_are_shown_literally_without_escapes():
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        text = screen_text(app)
        assert "[red]evil[/red]" in text and "\x1b" not in text and "ZXZpbA" not in text


async def test_marks_and_selected_keys_for_actions():
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        assert app.selected_keys() == (101,)
        await pilot.press("space", "down", "space")  # marks 101 and 103 (space also moves down)
        assert app.marked_keys() == (101, 103)
        assert app.selected_keys() == (101, 103)


async def test_update_by_key_keeps_cursor_on_its_row():
    backend = FakeBackend()
    app = make_app(backend)  # a frozen clock: the poller polls only when told to
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        assert table.select_key(103)
        backend.jobs = tuple(j for j in backend.jobs if j.job_id != 101) + (record_replace(backend.jobs[0], job_id=999),)
        app.poller.refresh_now()
        await wait_until(pilot, lambda: 999 in table.data.index, "the refreshed jobs in the table")
        await settle(pilot, app)
        assert 101 not in table.data.index
        assert table.cursor_key() == 103


def count_loop_turns(poller) -> list[int]:
    """Counts the turns of the poller's loop: it calls start_node_kinds once a turn,
    after it has decided whether to poll."""
    turns = [0]
    start = poller.start_node_kinds

    def counted():
        turns[0] += 1
        return start()

    poller.start_node_kinds = counted
    return turns


async def test_pause_stops_polling_and_shows_in_header():
    backend = FakeBackend()
    app = make_app(backend)  # a frozen clock: nothing is due unless refresh_now makes it so
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        turns = count_loop_turns(app.poller)
        await pilot.press("p")
        await wait_for_text(pilot, "PAUSED")  # in the header
        assert app.poller.paused
        assert await app.poller.poll_once() is None  # waits for a poll in flight, if any, and polls nothing
        calls = dict(backend.calls)
        # Every kind made due three times, each seen by the loop: had pause not stopped it,
        # each turn would have polled. Counted turns, not a wait: load cannot hide a poll.
        for _ in range(3):
            before = turns[0]
            app.poller.refresh_now()
            await wait_until(pilot, lambda: turns[0] > before, "the poller's loop to look again")
            assert await app.poller.poll_once() is None
        assert backend.calls == calls
        await pilot.press("p")  # resume refreshes at once
        await wait_until(pilot, lambda: backend.calls["jobs"] > calls["jobs"], "a poll after resuming")
        await wait_for_text(pilot, lambda t: "PAUSED" not in t, "PAUSED gone from the header")


async def test_stale_banner_appears_on_failure_and_clears_on_recovery():
    backend = FakeBackend()
    now = [float(NOW)]  # the app's clock, moved by the test: the retry is due when the test says
    app = make_app(backend, FAST, clock=lambda: now[0])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        banner = app.main.banner
        assert not banner.has_class("-stale")
        backend.fail = True
        app.poller.refresh_now()
        await wait_until(pilot, lambda: banner.has_class("-stale"), "the stale banner")
        await wait_for_text(pilot, lambda t: "STALE DATA" in t and "Unable to contact slurm controller" in t,
                            "STALE DATA and its cause on the screen")
        await pilot.press("5")  # keys still respond, last data still shown
        await settle(pilot, app)
        assert app.main.active_table().row_count == 5
        backend.fail = False
        retry = app.poller.status().next_retry
        assert retry is not None
        now[0] = retry + 1.0  # the backoff has passed: the poller retries by itself
        await wait_until(pilot, lambda: not banner.has_class("-stale"), "the banner to clear")
        await wait_for_text(pilot, lambda t: "STALE" not in t, "STALE gone from the screen")


async def test_telemetry_seam_fills_gpu_columns():
    app = make_app()
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await settle(pilot, app)
        row = app.main.active_table().data.rows["gpu01:0"]
        assert row.cells[7] == ""  # empty until telemetry arrives
        app.set_telemetry({("gpu01", 0): {"util": 97.0, "temp": 64.0, "throttle": "thermal"}})
        await settle(pilot, app)
        row = app.main.active_table().data.rows["gpu01:0"]
        assert row.cells[7] == "97" and row.cells[9] == "64" and row.cells[12] == "thermal"


async def test_command_palette_lists_view_commands():
    from cockpit.tui.commands import cockpit_commands

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        titles = [c.title for c in cockpit_commands(app)]
        for needed in ("View: jobs", "View: nodes", "Filter", "Pause / resume polling", "Keys: every key (?)",
                       "Job: cancel job", "Job: follow output", "Job: processes"):
            assert needed in titles


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
async def test_keys_screen_opens_and_closes(size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await settle(pilot, app)
        assert "This view: Pulse" in screen_text(app)  # the current view's keys come first
        assert any("command palette" in what for _key, what in app.screen.rows)
        await pilot.press("escape")
        assert app.screen is app.main


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_a_bad_state_in_the_filter_is_refused_naming_it(size):
    """#25: `state:bogus` selected nothing and read as "no such jobs"; now it is refused,
    naming the value and the known states, and the previous filter stays."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        table = app.main.active_table()
        await pilot.press("slash", *"state:PD", "enter")
        await settle(pilot, app)
        pending = set(table.data.order)
        assert pending and len(pending) < 5
        await pilot.press("slash")
        app.main.query_one("#filter").value = "state:bogus"
        await pilot.press("enter")
        await wait_for_text(pilot, "state:bogus: not a Slurm state")
        await settle(pilot, app)
        assert set(table.data.order) == pending


async def test_a_key_defers_the_pollers_due_thaw(monkeypatch):
    """A thaw (a full collection of the whole heap) holds the UI thread; one that is due
    while someone is pressing keys waits for a quiet moment (cockpit.core.poller.settle_heap)."""
    from cockpit.core import poller

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        poller.reset_heap_settling()  # nobody at the keys yet
        # a thaw due now (not at 0.0: on a machine up for more than THAW_DEFER_MAX that
        # thaw would be overdue past the deferral, and run whatever the keys)
        due = poller.time.monotonic()
        monkeypatch.setattr(poller, "_next_thaw", due)
        await pilot.press("2")
        assert poller.time.monotonic() - poller._last_input < poller.THAW_QUIET
        poller.settle_heap()
        assert poller._next_thaw == due, "the due thaw waited: it did not run and reschedule"
        monkeypatch.setattr(poller, "_last_input", -poller.math.inf)  # quiet again
        poller.settle_heap()
        assert poller._next_thaw > due, "with nobody at the keys the due thaw runs"
