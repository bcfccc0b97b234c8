"""The TUI (Pilot) on the real test cluster while slurmctld stalls: the stale banner names the
cause while it is stopped, the last data stays on screen, and the banner clears by itself
once slurmctld is continued.

The stall (SIGSTOP of slurmctld, SIGCONT in a finally: clusterlib.stopped) lasts until the
banner is seen, so it outlasts the command timeout however slow the machine is; the waits
below wait for events, with generous limits that only guard against a hang.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterlib import ctld_pid, proc_state, stopped
from cockpit.cli import build_parser
from cockpit.core.session import open_session
from cockpit.tui.app import CockpitApp

from .test_pilot import screen_text, settle

pytestmark = [pytest.mark.cluster]
TIMEOUT = 2


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(
        f'[general]\nbackend = "slurm-cli"\ncommand_timeout = {TIMEOUT}\naudit_log = "{tmp_path / "audit.jsonl"}"\n'
        "[refresh]\nnodes = 1.0\njobs = 1.0\npartitions = 1.0\ntopology = 1.0\n"
        "[tui]\ntelemetry = false\n"
    )
    return cfg


async def _wait(pilot, cond, what: str, seconds: float = 60.0):
    for _ in range(int(seconds / 0.1)):
        if cond():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"{what} within {seconds:g} s")


async def test_stale_banner_during_a_controller_stall_then_cleared(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", cluster["SLURM_CONF"])
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    session = await open_session(build_parser().parse_args(["--config", str(_config(tmp_path))]))
    nodes = cluster["COCKPIT_TEST_NODES"].split()
    pid = ctld_pid(cluster)
    try:
        app = CockpitApp(session.backend, session.config, read_only=session.read_only)
        async with app.run_test(size=(160, 48)) as pilot:
            banner = app.main.banner
            await _wait(pilot, lambda: app.snapshot is not None and len(app.snapshot.nodes) == len(nodes),
                        "the first snapshot")
            await pilot.press("2")
            await settle(pilot, app)
            assert not banner.has_class("-stale")
            with stopped(pid):
                await _wait(pilot, lambda: banner.has_class("-stale"), "the stale banner")
                await settle(pilot, app)
                text = screen_text(app)
                assert proc_state(pid) == "T"  # still stalled while the banner is read
            assert "STALE DATA" in text and f"did not answer within {TIMEOUT} s" in text, text
            for node in nodes:  # the last good data stays on screen
                assert node in text
            await _wait(pilot, lambda: not banner.has_class("-stale"), "the banner to clear")
            await settle(pilot, app)
            assert "STALE" not in screen_text(app)
    finally:
        await session.close()
