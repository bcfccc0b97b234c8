"""Races found by the real-terminal and real-cluster tests, replayed without either.

* Keys that arrive in one burst (fast typing, a batched SSH link, tmux send-keys):
  Textual routes each queued key to the widget focused when the key is dequeued,
  and a focus change made by a normal binding lands after the keys already
  queued. So ``/`` or ``:`` followed at once by text sent that text to the table
  (``p`` paused, ``q`` quit). Found by tests/tui/test_tmux_e2e.py.
* A snapshot arriving between pushing a detail screen and its compose crashed the
  app (NoMatches '#detail-title'). Found by tests/cluster/test_controller_load.py.
* A view's row-building thread that finished after the app quit raised
  NoActiveAppError at exit. Found by the same test.
"""

from __future__ import annotations

import threading

from textual import events

from cockpit.tui.messages import SnapshotUpdated
from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen

from .fakes import NOW, FakeBackend
from .test_pilot import make_app, screen_text, settle


def burst(app, keys: str) -> None:
    """Queue every key before the app handles the first (what a terminal read of several bytes does)."""
    for ch in keys:
        if ch == "\r":
            app.post_message(events.Key("enter", "\r"))
        else:
            name = {"/": "slash", ":": "colon"}.get(ch, ch)
            app.post_message(events.Key(name, ch))


async def test_filter_typed_in_one_burst_reaches_the_filter_line():
    app = make_app(FakeBackend())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        burst(app, "/user:q\r")  # on the table q would quit; : would open the command line
        await settle(pilot, app)
        assert app.is_running
        assert app.current_view() == "jobs"
        assert app.main.active_view().query_text == "user:q"
        assert not app.poller.paused


async def test_command_typed_in_one_burst_from_pulse():
    app = make_app(FakeBackend(), clock=lambda: NOW)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        assert app.current_view() == "pulse"
        burst(app, ":nodes\r")
        await settle(pilot, app)
        assert app.current_view() == "nodes"
        burst(app, "/pu\r")  # from a table view; 'p' must not pause
        await settle(pilot, app)
        assert app.main.active_view().query_text == "pu"
        assert not app.poller.paused


async def test_snapshot_between_push_and_compose_of_a_detail_screen():
    app = make_app(FakeBackend())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        snap = app.snapshot
        for screen in (JobDetailScreen(101, services=app.services), NodeDetailScreen("gpu02", services=app.services)):
            app.push_screen(screen)  # not awaited: the screen is on the stack, not composed yet
            app.on_snapshot_updated(SnapshotUpdated(snap, app.poll_status))
            await settle(pilot, app)
            assert app.screen is screen
            await pilot.press("escape")
            await settle(pilot, app)
        # Mounted, but its widgets not (the window CI hit under load: tests/tui/test_tui_cluster.py):
        # the snapshot is not for it yet, and the app goes on.
        screen = JobDetailScreen(101, services=app.services)
        await app.push_screen(screen)
        await screen.query_one("#detail-title").remove()
        app.on_snapshot_updated(SnapshotUpdated(snap, app.poll_status))
        await settle(pilot, app)
        assert app.is_running and app.screen is screen
        await pilot.press("escape")
        await settle(pilot, app)
        await pilot.press("5", "enter")
        await settle(pilot, app)
        assert "llama-70b" in screen_text(app)  # the detail screen shows the job after all that


async def test_view_threads_finishing_after_quit_do_not_raise():
    app = make_app(FakeBackend())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        snap, pulse, jobs = app.snapshot, app.main.views["pulse"], app.main.views["jobs"]
        gen = jobs._gen
    errors: list[BaseException] = []

    def late() -> None:  # what the worker threads run, once the app is gone
        try:
            pulse._pending = snap
            type(pulse)._compute.__wrapped__(pulse, True)
            type(jobs)._build.__wrapped__(jobs, "", None, False, gen)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=late)
    t.start()
    t.join(10)
    assert not errors, errors
