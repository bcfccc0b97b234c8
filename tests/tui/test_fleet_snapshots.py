"""SVG snapshots of the TUI with two clusters (two demo clusters, time frozen), at
80x24 and 160x48: the main Pulse naming the cluster in front, and the fleet Pulse.

Update after a deliberate change with ``pytest --snapshot-update tests/tui/test_fleet_snapshots.py``,
after reading the new SVGs' text."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.fleet import FleetScreen
from tuiwait import wait_until

from .test_pilot import settle
from .test_snapshots import AUDIT, FROZEN, SIZES, check_screen, steady_cursors
from cockpit.config import Config, General


def fleet_app() -> CockpitApp:
    clock = lambda: FROZEN  # noqa: E731 - frozen: snapshots must not depend on the date
    cfg = Config(general=General(audit_log=AUDIT, demo_audit_log=AUDIT))
    return CockpitApp(DemoBackend(seed=7, clock=clock), replace(cfg, cluster="west"), clock=clock,
                      fleet=((DemoBackend(seed=8, clock=clock), replace(cfg, cluster="east")),),
                      unopened={"lab": "slurmrestd at http://127.0.0.1:6899 did not answer"})


def evidence_read(app) -> bool:
    """Every cluster's own watches have read what its suspects need (its jobs' output
    mtimes, its suspects' GPUs) and no read is in flight: the time is frozen, so nothing
    is read again unless asked, and the screen is the same on every run."""
    for link in app.fleet.links.values():
        nodes = app.main.pulse.watch_nodes if link is app.fleet.current else link.watch_nodes
        if not link.outputs or not nodes or not set(nodes) <= {node for node, _ in link.telemetry}:
            return False
        if any(link.poller.node_busy(kind) for kind in link.poller.node_kinds):
            return False
    return True


def keys(*presses):
    async def run(pilot):
        app = pilot.app
        await wait_until(pilot, lambda: all(link.snapshot is not None for link in app.fleet.links.values()),
                         "both clusters' first snapshots")
        await wait_until(pilot, lambda: app.main.pulse.suspects.row_count > 0, "the Pulse's suspects")
        await wait_until(pilot, lambda: app.live_telemetry is None or app.live_telemetry.polls >= 1,
                         "the first telemetry reading")
        await wait_until(pilot, lambda: evidence_read(app), "every cluster's suspects' evidence")
        await settle(pilot, app, 0.3)
        for key in presses:
            await pilot.press(key)
            await settle(pilot, app)
        if isinstance(app.screen, FleetScreen):
            pulse = app.screen.pulse
            await wait_until(pilot, lambda: pulse.bad.row_count > 0 and pulse.suspects.row_count > 0,
                             "the fleet Pulse's tables")
            hung = [(name, link.backend.hung_job_id) for name, link in app.fleet.links.items()]
            await wait_until(pilot, lambda: all(k in pulse.suspects.data.rows and "% use" in
                                                pulse.suspects.data.rows[k].values[6] for k in hung),
                             "every cluster's hung job with its own evidence")
            await settle(pilot, app, 0.3)
        steady_cursors(app)
        await pilot.pause()
        check_screen(app)

    return run


CASES = {"fleet-main": keys(), "fleet-pulse": keys("c")}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("case", list(CASES))
def test_fleet_snapshot(snap_compare, case, size):
    assert snap_compare(fleet_app(), terminal_size=size, run_before=CASES[case])
