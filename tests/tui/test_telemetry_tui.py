"""Live GPU telemetry in the TUI (Pilot), with a collector that returns real recorded
nvidia-smi readings (tests/data/nvidia-smi) instead of reaching nodes over SSH."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from cockpit.config import Config, General, Refresh, Tui
from cockpit.telemetry.nvsmi import parse_query_gpu
from cockpit.tui import telemetry as tui_telemetry
from cockpit.tui.app import CockpitApp

from .fakes import NOW, FakeBackend
from .test_pilot import screen_text, settle

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi"
IDLE = parse_query_gpu((DATA / "query-gpu-h100-idle.csv").read_text())[0]
LOAD = parse_query_gpu((DATA / "query-gpu-h100-load.csv").read_text())[0]


class RecordedCollector:
    """gpu01: GPU 0 idle and GPU 1 under load (the two real captures); gpu02 unreachable."""

    instances: list["RecordedCollector"] = []
    delay = 0.0

    def __init__(self, settings) -> None:
        self.settings = settings
        self.errors: dict[str, str] = {}
        self.calls: list[list[str]] = []
        self.closed = False
        RecordedCollector.instances.append(self)

    async def telemetry_for(self, nodes, progress=None):
        nodes = list(nodes)
        self.calls.append(nodes)
        self.errors, out = {}, {}
        for i, node in enumerate(nodes):
            await asyncio.sleep(self.delay)
            if node == "gpu02":
                self.errors[node] = "gpu02: connection refused (port 22)"
            elif node == "gpu01":
                out[(node, 0)] = IDLE
                out[(node, 1)] = replace(LOAD, index=1)
            if progress is not None:
                progress(i + 1, len(nodes), None)
        return out

    async def close(self) -> None:
        self.closed = True


class RunnerFake(FakeBackend):
    runner = object()  # a real cluster sits behind it (never called: the collector is replaced)


def _config(**tui):
    return Config(general=General(host="login-fake"), refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1,
                  topology=0.1, telemetry=1.0), tui=Tui(**tui))


def gpu_line(text: str, node: str, idx: int) -> list[str]:
    for line in text.splitlines():
        words = line.split()
        if words[:2] == [node, str(idx)]:
            return words
    raise AssertionError(f"no GPU row {node} {idx} on screen:\n{text}")


async def wait_until(pilot, cond, what, tries=120):
    for _ in range(tries):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{what} never happened")


async def test_gpu_view_shows_recorded_telemetry_joined_to_jobs(monkeypatch):
    RecordedCollector.instances, RecordedCollector.delay = [], 0.0
    monkeypatch.setattr(tui_telemetry, "TelemetryCollector", RecordedCollector)
    app = CockpitApp(RunnerFake(), _config(), clock=lambda: NOW)
    async with app.run_test(size=(150, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await settle(pilot, app)
        service = app.telemetry_service
        await wait_until(pilot, lambda: service.polls >= 1, "a telemetry poll")
        await settle(pilot, app, 0.3)
        collector = RecordedCollector.instances[0]
        first = collector.calls[0]
        assert "gpu01" in first and "gpu10" not in first  # only nodes whose rows are on screen
        text = screen_text(app)
        load = gpu_line(text, "gpu01", 1)
        # recorded load capture: 100 % util, 19818/81559 MiB, 59 C, 631.95 W, no ECC errors
        assert load[-8:] == ["101", "alice", "100", "24", "59", "632", "0", "none"]
        idle = gpu_line(text, "gpu01", 0)
        assert idle[-8:] == ["101", "alice", "0", "0", "41", "70", "0", "none"]
        assert "job 101 (alice) GPU 0: 0% util for 0 min" in text  # idle GPU of a running job
        assert "gpu02: connection refused (port 22)" in text  # the node's error in the view
        assert app.telemetry[("gpu02", 0)] == {"error": "gpu02: connection refused (port 22)"}
        # scrolling to the end brings gpu10 into view, and the next poll includes it
        app.main.active_table().focus()
        await pilot.press("end")
        await wait_until(pilot, lambda: any("gpu10" in c for c in collector.calls), "a poll of gpu10")
    assert collector.closed  # the SSH connections are closed when the app exits


async def test_node_detail_polls_its_node_and_shows_readings(monkeypatch):
    RecordedCollector.instances, RecordedCollector.delay = [], 0.0
    monkeypatch.setattr(tui_telemetry, "TelemetryCollector", RecordedCollector)
    app = CockpitApp(RunnerFake(), _config(), clock=lambda: NOW)
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press(":", *"node gpu01", "enter")
        await wait_until(pilot, lambda: "util=100" in screen_text(app), "telemetry in the node detail")
        assert all(c == ["gpu01"] for c in RecordedCollector.instances[0].calls)


async def test_slow_poll_shows_a_progress_bar(monkeypatch):
    RecordedCollector.instances, RecordedCollector.delay = [], 0.6
    monkeypatch.setattr(tui_telemetry, "TelemetryCollector", RecordedCollector)
    app = CockpitApp(RunnerFake(), _config(), clock=lambda: NOW)
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        bar = None
        for _ in range(100):
            await pilot.pause(0.05)
            panel = app.telemetry_service.panel
            if panel is not None and panel.bar.has_class("-busy") and (panel.bar.progress or 0) >= 1:
                bar = panel.bar
                break
        assert bar is not None, "no progress bar during a slow poll"
        assert bar.total == len(RecordedCollector.instances[0].calls[0])
        assert "polling" in screen_text(app)
        await wait_until(pilot, lambda: app.telemetry_service.polls >= 1, "the slow poll to end", tries=200)
        await pilot.pause(0.6)
        assert not bar.has_class("-busy")


async def test_telemetry_off_by_config_or_without_real_nodes(monkeypatch):
    RecordedCollector.instances = []
    monkeypatch.setattr(tui_telemetry, "TelemetryCollector", RecordedCollector)
    for app in (CockpitApp(RunnerFake(), _config(telemetry=False), clock=lambda: NOW),
                CockpitApp(FakeBackend(), _config(), clock=lambda: NOW)):
        async with app.run_test(size=(150, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("3")
            await settle(pilot, app, 0.3)
            assert app.telemetry_state.startswith("off (")
            assert not hasattr(app, "telemetry_service")
            assert "GPU telemetry" not in screen_text(app)
    assert RecordedCollector.instances == []
