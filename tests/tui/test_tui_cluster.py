"""The whole TUI through ``--host head`` on the real test cluster (Pilot): Slurm over SSH
(SshRunner), and live GPU telemetry from the nodes' sshd with the stand-in nvidia-smi
(tests/data/nvidia-smi/standin, replaying real recorded captures) joined to a real job.

Shared cluster: each test cancels the job it submits; nothing else is changed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from clusterlib import cancel, gpu_gres, submit
from cockpit.cli import build_parser
from cockpit.core.session import open_session
from cockpit.tui.app import CockpitApp

from .test_pilot import screen_text, settle
from .test_telemetry_tui import gpu_row as gpu_line

pytestmark = [pytest.mark.cluster]
DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi"


def _config(tmp_path: Path, env: dict, *, telemetry: bool, standin: Path | None = None) -> Path:
    prepend = f'remote_path_prepend = "{standin}"\n' if standin else ""
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(
        f'[general]\naudit_log = "{tmp_path / "audit.jsonl"}"\n'
        f'[ssh]\nconfig_file = "{env["COCKPIT_TEST_SSH_CONFIG"]}"\nknown_hosts = "{env["COCKPIT_TEST_SSH_KNOWN_HOSTS"]}"\n'
        f"connect_timeout = 5.0\ncommand_timeout = 15.0\n{prepend}"
        f"[refresh]\nnodes = 1.0\njobs = 1.0\npartitions = 5.0\ntelemetry = 1.0\n"
        f"[tui]\ntelemetry = {'true' if telemetry else 'false'}\n"
    )
    return cfg


async def _session(cfg: Path, monkeypatch):
    monkeypatch.delenv("SLURM_CONF", raising=False)  # nothing local: every Slurm command goes over SSH
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    return await open_session(build_parser().parse_args(["--config", str(cfg), "--host", "head"]))


async def _wait(pilot, cond, what: str, seconds: float = 40.0):
    for _ in range(int(seconds / 0.1)):
        value = cond()
        if value:
            return value
        await pilot.pause(0.1)
    raise AssertionError(f"{what} within {seconds:g} s")


async def test_tui_through_host_head_shows_real_nodes_and_an_sbatch_job(cluster, tmp_path, monkeypatch):
    job = submit("sleep 300", job_name="cockpit-tui-host-head", hold=True)
    session = await _session(_config(tmp_path, cluster, telemetry=False), monkeypatch)
    try:
        assert type(session.runner).__name__ == "SshRunner" and session.runner.host == "head"
        app = CockpitApp(session.backend, session.config, read_only=session.read_only)
        async with app.run_test(size=(160, 48)) as pilot:
            await _wait(pilot, lambda: app.snapshot and app.snapshot.job(int(job)), f"job {job} on screen")
            await pilot.press("2")
            await settle(pilot, app)
            text = screen_text(app)
            for node in cluster["COCKPIT_TEST_NODES"].split():
                assert node in text
            await pilot.press("5")
            await settle(pilot, app)
            assert app.main.active_table().select_key(int(job))
            await pilot.pause(0.2)
            row = next(line for line in screen_text(app).splitlines() if line.split()[:1] == [job])
            assert "cockpit-tui" in row and "root" in row  # the name column is cut with an ellipsis
            await pilot.press("enter")
            await _wait(pilot, lambda: "cockpit-tui-host-head" in screen_text(app) and "JobHeldUser" in screen_text(app),
                        "the held job's detail")
    finally:
        await session.close()
        cancel(job)


def _standin(tmp_path: Path) -> Path:
    d = tmp_path / "standin-bin"
    d.mkdir()
    shutil.copy(DATA / "standin" / "nvidia-smi", d / "nvidia-smi")
    (d / "capture").symlink_to(DATA / "query-gpu-h100-idle.csv")
    (d / "capture.node02").symlink_to(DATA / "query-gpu-h100-load.csv")
    return d


async def test_gpu_view_shows_standin_telemetry_joined_to_a_real_job(cluster, tmp_path, monkeypatch):
    cfg = _config(tmp_path, cluster, telemetry=True, standin=_standin(tmp_path))
    job = submit("sleep 120", job_name="cockpit-tui-telemetry", nodelist="node01", gres=gpu_gres(1), partition="gpu")
    session = await _session(cfg, monkeypatch)
    try:
        app = CockpitApp(session.backend, session.config, read_only=session.read_only)
        async with app.run_test(size=(170, 60)) as pilot:
            def running():
                j = app.snapshot.job(int(job)) if app.snapshot else None
                return j if j is not None and j.state == "RUNNING" and j.gpus else None

            real = await _wait(pilot, running, f"job {job} running with a GPU")
            held = real.gpus[0].indexes[0]
            await pilot.press("3")
            await _wait(pilot, lambda: ("node02", 0) in app.telemetry and ("node01", 0) in app.telemetry,
                        "telemetry of node01 and node02")
            await settle(pilot, app, 0.5)
            text = screen_text(app)
            # node02 replays the recorded load capture: 100 % util, 59 C, 631.95 W
            assert gpu_line(text, "node02", 0)[-6:] == ["100", "24", "59", "632", "0", "none"]
            row = gpu_line(text, "node01", held)
            assert job in row and "root" in row  # Slurm's GPU index -> job mapping
            if held == 0:  # the capture is of one GPU: only index 0 has readings
                assert row[-6:] == ["0", "0", "41", "70", "0", "none"]
                # the minutes are how long the run took since the first idle reading
                assert re.search(rf"job {job} \(root\) GPU 0: 0% util for \d+ min", text), text
            else:
                assert gpu_line(text, "node01", 0)[-6:] == ["0", "0", "41", "70", "0", "none"]
            assert "no telemetry" not in text, text
    finally:
        await session.close()
        cancel(job)
