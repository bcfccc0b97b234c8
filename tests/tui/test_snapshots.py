"""SVG snapshots of every view on the demo cluster, time frozen, at 80x24 and 160x48.

Update the baselines after a deliberate change with ``pytest --snapshot-update tests/tui``.
"""

from __future__ import annotations

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.tui.app import CockpitApp

from .test_pilot import settle

FROZEN = 1_750_000_000.0
SIZES = [(80, 24), (160, 48)]
VIEWS = {"pulse": "1", "nodes": "2", "gpus": "3", "partitions": "4", "jobs": "5"}


def demo_app() -> CockpitApp:
    clock = lambda: FROZEN  # noqa: E731 - frozen: snapshots must not depend on the date
    return CockpitApp(DemoBackend(seed=7, clock=clock), clock=clock)


def before(*keys):
    async def run(pilot):
        await settle(pilot, pilot.app, 0.3)
        for key in keys:
            await pilot.press(key)
            await settle(pilot, pilot.app)

    return run


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("view", list(VIEWS))
def test_view_snapshot(snap_compare, view, size):
    assert snap_compare(demo_app(), terminal_size=size, run_before=before(VIEWS[view]))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_job_and_node_detail_snapshot(snap_compare, size):
    assert snap_compare(demo_app(), terminal_size=size, run_before=before("5", "enter"))
    assert snap_compare(demo_app(), terminal_size=size, run_before=before("2", "enter"))


def test_filtered_jobs_snapshot(snap_compare):
    async def run(pilot):
        await before("5")(pilot)
        await pilot.press("slash", *"state:pending", "enter")
        await settle(pilot, pilot.app)

    assert snap_compare(demo_app(), terminal_size=(100, 30), run_before=run)


def test_keys_help_snapshot(snap_compare):
    assert snap_compare(demo_app(), terminal_size=(80, 24), run_before=before("question_mark"))
