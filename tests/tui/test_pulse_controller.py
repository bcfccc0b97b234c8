"""The Pulse's one line about slurmctld (cockpit/tui/controllerwatch.py), with Pilot, on a
replay of the 22.05 test cluster's recorded outputs (tests/data/slurm-22.05)."""

from __future__ import annotations

import shutil
from pathlib import Path

from cockpit.backends.replay import ReplayBackend
from cockpit.tui.app import CockpitApp
from tuiwait import wait_until

from .fakes import NOW
from .test_actions_tui import _config

REC = Path(__file__).resolve().parents[1] / "data" / "slurm-22.05"
FILES = {"version.txt": "version.txt", "squeue.json": "squeue.json", "sinfo.json": "sinfo.json",
         "scontrol-show-partition.txt": "scontrol-partitions.txt", "topology.txt": "topology.txt"}


def _replay(tmp_path: Path, sdiag: str | None) -> ReplayBackend:
    rec = tmp_path / "rec"
    rec.mkdir()
    for src, key in FILES.items():
        shutil.copy(REC / src, rec / key)
    if sdiag is not None:
        (rec / "sdiag.txt").write_text(sdiag)
    return ReplayBackend(str(rec))


def _line(app: CockpitApp) -> str | None:
    w = app.main.pulse.controller
    return str(w.render()) if w.display else None


async def test_an_unhealthy_controller_is_one_line_on_the_pulse(tmp_path):
    # the recorded sdiag with its agent queue raised (the only line changed)
    text = (REC / "sdiag.txt").read_text().replace("Agent queue size:     0", "Agent queue size:     20000")
    app = CockpitApp(_replay(tmp_path, text), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        line = await wait_until(pilot, lambda: _line(app), "the controller line")
        assert line.strip() == "controller CRIT: agent queue (RPCs waiting to go out to nodes): 20000"


async def test_a_healthy_controller_adds_no_line(tmp_path):
    app = CockpitApp(_replay(tmp_path, (REC / "sdiag.txt").read_text()), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.poller.node_status("controller").last_ok is not None, "sdiag read")
        await pilot.pause(0)
        assert _line(app) is None


async def test_a_recording_without_sdiag_is_not_asked_again(tmp_path):
    app = CockpitApp(_replay(tmp_path, None), _config(tmp_path), clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.poller.node_status("controller").last_ok is not None, "sdiag tried")
        assert _line(app) is None and app.controller_watch.wanted() == ()
        assert "sdiag.txt is not in the recording" in app.controller_watch.error
