"""SVG snapshots of every view, dialog and plugin screen on the demo cluster, time
frozen, at 80x24 and 160x48 (issue 16: "no value cut while free width remains, and
no clipped pane", asserted before each snapshot is taken, see check_screen).

Update the baselines after a deliberate change with ``pytest --snapshot-update
tests/tui/test_snapshots.py``, after looking at the new SVGs (rsvg-convert renders them).
"""

from __future__ import annotations

import pytest
from textual.containers import ScrollableContainer
from textual.scroll_view import ScrollView
from textual.widgets import Input

from cockpit.backends.demo import DemoBackend
from cockpit.config import Config, General
from cockpit.tui.app import CockpitApp
from cockpit.tui.widgets.vtable import VTable
from tuiwait import wait_until

from .test_pilot import settle

FROZEN = 1_750_000_000.0
SIZES = [(80, 24), (160, 48)]
AUDIT = "/nonexistent/cockpit-snapshots/audit.jsonl"  # the audit view says there is none yet


def demo_app() -> CockpitApp:
    clock = lambda: FROZEN  # noqa: E731 - frozen: snapshots must not depend on the date
    return CockpitApp(DemoBackend(seed=7, clock=clock), Config(general=General(audit_log=AUDIT, demo_audit_log=AUDIT)), clock=clock)


def check_screen(app) -> None:
    """No table cuts a value while its line has room, and no pane outside a scrolling
    container reaches past the screen's edge."""
    screen = app.screen
    for table in screen.query(VTable):
        if table.display and table.region.area:
            assert table.cut_while_free() == [], (type(screen).__name__, table.id, table.cut_while_free())
    area = screen.region
    placed = screen._compositor.full_map  # every widget laid out, visible or not, with its clip
    for widget in screen.walk_children():
        if not widget.display or not widget.visible:
            continue
        if any(isinstance(a, (ScrollableContainer, ScrollView)) for a in widget.ancestors if a is not screen):
            continue  # out of view inside something that scrolls: the operator can scroll to it
        if any(not a.display for a in widget.ancestors):
            continue
        geometry = placed.get(widget)
        assert geometry is not None, (type(screen).__name__, widget, "not laid out")
        if not geometry.region.area:
            continue
        assert area.contains_region(geometry.region), (type(screen).__name__, widget, geometry.region, area)
        assert geometry.clip.contains_region(geometry.region), (type(screen).__name__, widget, "clipped",
                                                                 geometry.region, geometry.clip)


def steady_cursors(app) -> None:
    """Stop the text cursors blinking: shown steadily, whenever the snapshot is taken (a
    blinking one is on or off by how long the machine took to get here)."""
    for screen in app.screen_stack:
        for field in screen.query(Input):
            field.cursor_blink = False


def keys(*presses, then=None):
    async def run(pilot):
        app = pilot.app
        await wait_until(pilot, lambda: app.main.pulse.suspects.row_count > 0, "the Pulse's suspects")
        # and the first GPU reading of the simulated nodes (the hung job's 0% use), so no
        # picture depends on whether the telemetry tick came before it
        await wait_until(pilot, lambda: app.live_telemetry is None or app.live_telemetry.polls >= 1,
                         "the first telemetry reading")
        await settle(pilot, app, 0.3)
        for key in presses:
            await pilot.press(key)
            await settle(pilot, app)
        if then is not None:
            await then(pilot, app)
            await settle(pilot, app, 0.3)
        steady_cursors(app)
        await pilot.pause()
        check_screen(app)

    return run


async def runbook_done(pilot, app):
    await wait_until(pilot, lambda: getattr(app.screen, "finished", False), "the runbook to finish")
    await settle(pilot, app, 0.3)


def opened(fn):
    async def then(pilot, app):
        fn(app)
        await settle(pilot, app, 0.5)

    return then


async def pending_why(pilot, app):
    table = app.main.active_table()
    pending = next(k for k in table.data.order if table.data.rows[k].style == "pending")
    table.select_key(pending)
    await pilot.press("w")


CASES = {
    "pulse": keys(),
    "nodes": keys("2"),
    "gpus": keys("3"),
    "partitions": keys("4"),
    "jobs": keys("5"),
    "jobs-scrolled": keys("5", "right", "right"),
    "filtered": keys("5", "slash", *"state:PD", "enter"),
    "job-detail": keys("5", "enter"),
    "node-detail": keys("2", "enter"),
    "keys": keys("5", "question_mark"),
    "quit": keys("q"),
    "action-menu": keys("2", "a"),
    "drain-reason": keys("2", "a", "enter"),
    "drain-confirm": keys("2", "a", "enter", "down", "enter", "enter"),
    "job-log": keys("5", "f"),
    "job-procs": keys("5", "P"),
    "describe": keys("5", "d"),
    "slurm-logs": keys("2", "L"),
    "audit": keys("A"),
    "why-pending": keys("5", then=pending_why),
    "runbook-hung-job": keys("w", then=runbook_done),
    "runbook-gpu-xid": keys("tab", "down", "w", then=runbook_done),
    "nccl": keys("2", then=opened(lambda app: app.openers.open_target(app.plugins.get("nccl"), "nccl"))),
    "layout-form": keys("5", "l"),
    "layout": keys("5", "l", "enter", then=opened(lambda app: None)),
    "preflight-storage": keys(then=opened(lambda app: app.openers.open_target(app.plugins.get("preflight"),
                                                                              "preflight-storage"))),
    "preflight-burnin": keys(then=opened(lambda app: app.openers.open_target(app.plugins.get("preflight"),
                                                                             "preflight-burnin"))),
    "preflight-fabric": keys(then=opened(lambda app: app.openers.open_target(app.plugins.get("preflight"),
                                                                             "preflight-fabric"))),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("case", list(CASES))
def test_snapshot(snap_compare, monkeypatch, case, size):
    if case.startswith("runbook"):
        import time

        # the runbooks' probes read the wall clock (a reason's age, the last output line's)
        monkeypatch.setattr(time, "time", lambda: FROZEN)
    assert snap_compare(demo_app(), terminal_size=size, run_before=CASES[case])
