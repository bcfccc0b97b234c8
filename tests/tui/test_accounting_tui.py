"""The accounting views in the TUI (Pilot, on the demo's simulated accounting):
History with Enter to a finished job's efficiency, a node's event history with
its flapping mark, reservations and what they block, the utilisation plot, the
palette entries; and one line where the backend has no accounting."""

from __future__ import annotations

from cockpit.backends.demo import DemoBackend
from cockpit.tui.accounting import accounting_commands
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.history import FinishedJobScreen, HistoryScreen
from cockpit.tui.screens.nodehistory import NodeHistoryScreen
from cockpit.tui.screens.reservations import ReservationsScreen
from cockpit.tui.screens.utilization import UtilizationScreen

from .fakes import FakeBackend
from .test_pilot import screen_text, settle

NOW = 1_750_000_000.0


async def wait_text(pilot, app, needle: str, tries: int = 100) -> str:
    """The screen's text once it shows ``needle`` (a worker's result lands a frame later)."""
    for _ in range(tries):
        text = screen_text(app)
        if needle in text:
            return text
        await pilot.pause(0.05)
    return screen_text(app)


def demo_app():
    backend = DemoBackend(clock=lambda: NOW)
    return CockpitApp(backend, clock=lambda: NOW), backend


async def test_history_then_a_finished_jobs_efficiency():
    app, _ = demo_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        app.push_screen(HistoryScreen("1d", services=app.services))
        await settle(pilot, app, 0.3)
        screen = app.screen
        assert isinstance(screen, HistoryScreen) and screen.loaded
        text = screen_text(app)
        assert "job(s)" in text and "failed, from demo (simulated accounting)" in text
        newest = screen.loaded[0]
        assert screen.table.cursor_key() == newest.job_id
        await pilot.press("enter")
        await settle(pilot, app, 0.3)
        assert isinstance(app.screen, FinishedJobScreen)
        text = await wait_text(pilot, app, "Efficiency")
        assert "Efficiency" in text and "TotalCPU" in text and "gres/gpuutil" in text
        await pilot.press("escape")
        await pilot.press("right_square_bracket")  # the last week (1-5 switch views: issue 25)
        await settle(pilot, app, 0.3)
        assert len(app.screen.loaded) > len(screen.loaded) or app.screen.window == "7d"


async def test_node_history_marks_the_flapping_node():
    app, backend = demo_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        app.push_screen(NodeHistoryScreen(backend.xid_node, services=app.services))
        await settle(pilot, app, 0.3)
        text = await wait_text(pilot, app, "FLAPPING")
        assert "FLAPPING" in text and "Xid 79" in text and "drained" in text


async def test_reservations_say_what_they_block_and_the_utilization_plot():
    app, _ = demo_app()
    async with app.run_test(size=(180, 50)) as pilot:
        await settle(pilot, app)
        app.push_screen(ReservationsScreen(services=app.services))
        await settle(pilot, app, 0.3)
        text = await wait_text(pilot, app, "maint-leaf01")
        assert "maint-leaf01" in text and "maintenance" in text and "WILL BLOCK" in text and "pending" in text
        await pilot.press("escape")
        app.push_screen(UtilizationScreen("7d", services=app.services))
        await settle(pilot, app, 0.5)
        text = await wait_text(pilot, app, "of the GPU-hours allocated")
        assert "of the GPU-hours allocated" in text and "70-80% band" in text and "IDLE IN ALLOC" in text


async def test_palette_lists_the_accounting_views():
    app, _ = demo_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        titles = [c.title for c in accounting_commands(app)]
        assert any(t.startswith("History") for t in titles) and any(t.startswith("Utilization") for t in titles)
        from cockpit.tui.commands import cockpit_commands

        assert set(titles) <= {c.title for c in cockpit_commands(app)}


async def test_without_accounting_one_line():
    app = CockpitApp(FakeBackend(), clock=lambda: NOW)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        app.push_screen(HistoryScreen("1d", services=app.services))
        await settle(pilot, app, 0.3)
        needle = "accounting is not configured: the fake backend offers no accounting"
        assert needle in await wait_text(pilot, app, needle)


async def test_the_nodes_view_marks_the_flapping_node():
    app, backend = demo_app()
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot, app)
        view = app.main.views["nodes"]
        for _ in range(100):
            if view.flapping:
                break
            await pilot.pause(0.05)
        assert backend.xid_node in view.flapping
        await pilot.press("2")
        await pilot.press("slash", *"state:flapping", "enter")
        text = await wait_text(pilot, app, "flapping")
        assert backend.xid_node in text and "⚑flapping" in text
