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
