"""Live GPU telemetry in the TUI (Pilot): a node kind of the App's one poller, read
through the backend's probe runner. The probe runner here answers nvidia-smi with
real recorded captures (tests/data/nvidia-smi) instead of reaching nodes."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from cockpit.config import Config, General, Refresh, Tui
from cockpit.errors import CockpitError
from cockpit.tui.app import CockpitApp

from .fakes import NOW, FakeBackend, FakeProbes, result
from .test_pilot import screen_text, settle

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi"
HEADER, IDLE = (DATA / "query-gpu-h100-idle.csv").read_text().splitlines()[:2]
LOAD = (DATA / "query-gpu-h100-load.csv").read_text().splitlines()[1]
INDEX = HEADER.split(", ").index("index")


def as_gpu(row: str, index: int) -> str:
    cells = row.split(", ")
    cells[INDEX] = str(index)
    return ", ".join(cells)


class RecordedNodes:
    """gpu01: GPU 0 idle and GPU 1 under load (the two real captures); gpu02 unreachable;
    the others answer with no GPU lines. Counts the nodes asked per call."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.asked: list[list[str]] = []

    def probes(self) -> FakeProbes:
        probes = FakeProbes(self.answer)
        on_nodes = probes.on_nodes

        async def counted(nodes, argv, **kw):
            assert argv[0] == "nvidia-smi" and argv[1].startswith("--query-gpu=")
            self.asked.append(list(nodes))
            for _ in nodes:
                await asyncio.sleep(self.delay)
            return await on_nodes(nodes, argv, **kw)

        probes.on_nodes = counted
        return probes

    def answer(self, node: str, argv: list[str]):
        if node == "gpu02":
            return CockpitError("gpu02: connection refused (port 22)")
        if node == "gpu01":
            return result(argv, "\n".join([HEADER, as_gpu(IDLE, 0), as_gpu(LOAD, 1)]) + "\n")
        return result(argv, HEADER + "\n")


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


async def test_gpu_view_shows_recorded_telemetry_joined_to_jobs():
    nodes = RecordedNodes()
    probes = nodes.probes()
    threads_before = {t.name for t in threading.enumerate()}
    # A running clock: the poller schedules by it (a frozen one would never poll again).
    app = CockpitApp(FakeBackend(), _config(), clock=time.time, probes=probes)
    async with app.run_test(size=(150, 30)) as pilot:
        await settle(pilot, app)
        assert nodes.asked == []  # pulse view: no GPU row on screen, nothing asked
        await pilot.press("3")
        live = app.live_telemetry
        await wait_until(pilot, lambda: live.polls >= 1, "a telemetry poll")
        await settle(pilot, app, 0.3)
        first = nodes.asked[0]
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
        await wait_until(pilot, lambda: any("gpu10" in c for c in nodes.asked), "a poll of gpu10")
        # the one poller reads on the app's own thread and event loop: no thread of its own
        assert probes.threads == {threading.current_thread().name}
        assert not any(t.name == "cockpit-telemetry" for t in threading.enumerate())
        assert app.poller.node_status("telemetry").last_ok is not None
    assert probes.closed  # the probe runner's connections are closed when the app exits
    # No thread besides the event loop's executor pool, which runs the views' row builds
    # (asyncio_N; the old telemetry had a thread and an event loop of its own).
    extra = {t.name for t in threading.enumerate()} - threads_before
    assert all(name.startswith("asyncio_") for name in extra), extra


async def test_node_detail_polls_its_node_and_shows_readings():
    nodes = RecordedNodes()
    app = CockpitApp(FakeBackend(), _config(), clock=lambda: NOW, probes=nodes.probes())
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press(":", *"node gpu01", "enter")
        await wait_until(pilot, lambda: "100% util" in screen_text(app), "telemetry in the node detail")
        assert nodes.asked and all(c == ["gpu01"] for c in nodes.asked)


async def test_t_asks_for_the_selected_job_nodes_at_once():
    nodes = RecordedNodes()
    app = CockpitApp(FakeBackend(), _config(), clock=lambda: NOW, probes=nodes.probes())
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await settle(pilot, app)
        assert app.main.active_table().select_key(102)  # runs on gpu02
        await pilot.press("t")
        await wait_until(pilot, lambda: nodes.asked, "a poll asked for with t")
        assert nodes.asked[0] == ["gpu02"]
        assert any("polling GPU telemetry of 1 node(s)" in n.message for n in app._notifications)


async def test_slow_poll_shows_a_progress_bar():
    nodes = RecordedNodes(delay=0.6)
    app = CockpitApp(FakeBackend(), _config(), clock=lambda: NOW, probes=nodes.probes())
    async with app.run_test(size=(150, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("3")
        bar = None
        for _ in range(100):
            await pilot.pause(0.05)
            panel = app.live_telemetry.panel
            if panel is not None and panel.bar.has_class("-busy"):
                bar = panel.bar
                break
        assert bar is not None, "no progress bar during a slow poll"
        assert f"polling {len(nodes.asked[0])} node(s)" in screen_text(app)
        await wait_until(pilot, lambda: app.live_telemetry.polls >= 1, "the slow poll to end", tries=200)
        await pilot.pause(1.2)
        assert not bar.has_class("-busy") or app.live_telemetry.polling is not None


async def test_telemetry_off_by_config_or_without_probes():
    nodes = RecordedNodes()
    for app in (CockpitApp(FakeBackend(), _config(telemetry=False), clock=lambda: NOW, probes=nodes.probes()),
                CockpitApp(FakeBackend(), _config(), clock=lambda: NOW)):
        async with app.run_test(size=(150, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("3")
            await settle(pilot, app, 0.3)
            assert app.telemetry_state.startswith("off (")
            assert app.live_telemetry is None and "telemetry" not in app.poller.node_kinds
            assert f"telemetry {app.telemetry_state}" in screen_text(app)  # the blank columns say why
            assert "GPU telemetry is off (" in dict(app.key_rows())["t"]  # and so does ? for t
    assert nodes.asked == []
