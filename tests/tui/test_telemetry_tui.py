"""Live GPU telemetry in the TUI (Pilot): a node kind of the App's one poller, read
through the backend's probe runner. The probe runner here answers nvidia-smi with
real recorded captures (tests/data/nvidia-smi) instead of reaching nodes."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

from cockpit.config import Config, General, Refresh, Tui
from cockpit.errors import CockpitError
from cockpit.tui.app import CockpitApp
from tuiwait import wait_for_text, wait_until

from .fakes import NOW, FakeBackend, FakeProbes, result
from .test_pilot import settle

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
    the others answer with no GPU lines. Counts the nodes asked per call. With a
    ``gate`` (an asyncio.Event) every read waits for it: a poll as slow as the test wants."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.asked: list[list[str]] = []

    def probes(self) -> FakeProbes:
        probes = FakeProbes(self.answer)
        on_nodes = probes.on_nodes

        async def counted(nodes, argv, **kw):
            assert argv[0] == "nvidia-smi" and argv[1].startswith("--query-gpu=")
            self.asked.append(list(nodes))
            if self.gate is not None:
                await self.gate.wait()
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


def gpu_row(text: str, node: str, idx: int) -> list[str]:
    """The words of the GPU view's line for GPU ``idx`` of ``node`` ([] when none)."""
    for line in text.splitlines():
        words = line.split()
        if words[:2] == [node, str(idx)]:
            return words
    return []


async def test_gpu_view_shows_recorded_telemetry_joined_to_jobs():
    nodes = RecordedNodes()
    probes = nodes.probes()
    threads_before = {t.name for t in threading.enumerate()}
    # A running clock: the poller schedules by it (a frozen one would never poll again).
    app = CockpitApp(FakeBackend(), _config(), clock=time.time, probes=probes)
    async with app.run_test(size=(150, 30)) as pilot:
        await settle(pilot, app)
        live = app.live_telemetry
        # pulse view: no GPU row on screen, so nothing to read (what the poller reads is
        # wanted() and what was asked; asked here: nothing)
        assert live.wanted() == set() and nodes.asked == []
        await pilot.press("3")
        await wait_until(pilot, lambda: live.polls >= 1, "a telemetry poll")
        first = nodes.asked[0]
        assert "gpu01" in first and "gpu10" not in first  # only nodes whose rows are on screen
        # the readings reach the table (a message, then a row build): wait for the cells.
        # recorded load capture: 100 % util, 19818/81559 MiB, 59 C, 631.95 W, no ECC errors
        load = ["101", "alice", "100", "24", "59", "632", "0", "none"]
        idle = ["101", "alice", "0", "0", "41", "70", "0", "none"]
        await wait_for_text(pilot, lambda t: gpu_row(t, "gpu01", 1)[-8:] == load and gpu_row(t, "gpu01", 0)[-8:] == idle,
                            "gpu01's recorded readings in the GPU view")
        # the panel: the node's error, and the idle GPU of a running job (for however many
        # minutes a busy machine took to get here)
        await wait_for_text(pilot, lambda t: "gpu02: connection refused (port 22)" in t
                            and re.search(r"job 101 \(alice\) GPU 0: 0% util for \d+ min", t),
                            "the node's error and the idle GPU in the panel")
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
        await wait_for_text(pilot, "100% util", "telemetry in the node detail")
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
    gate = asyncio.Event()  # the read lasts until the test opens it: slow however fast the machine
    nodes = RecordedNodes(gate)
    app = CockpitApp(FakeBackend(), _config(), clock=lambda: NOW, probes=nodes.probes())
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        live = app.live_telemetry
        await wait_until(pilot, lambda: nodes.asked, "the poll to start")
        # the bar shows once the read has lasted SLOW_POLL_S, at the panel's next tick
        bar = await wait_until(pilot, lambda: live.panel is not None and live.panel.bar.has_class("-busy")
                               and live.panel.bar, "the progress bar during a slow poll")
        await wait_for_text(pilot, f"polling {len(nodes.asked[0])} node(s)")
        assert live.polls == 0
        gate.set()
        await wait_until(pilot, lambda: live.polls >= 1, "the slow poll to end")
        # the clock is frozen: no poll follows unless one was asked for, and that one is not slow
        await wait_until(pilot, lambda: live.polling is None and not bar.has_class("-busy"), "the bar to go")


async def test_telemetry_off_by_config_or_without_probes():
    nodes = RecordedNodes()
    for app in (CockpitApp(FakeBackend(), _config(telemetry=False), clock=lambda: NOW, probes=nodes.probes()),
                CockpitApp(FakeBackend(), _config(), clock=lambda: NOW)):
        async with app.run_test(size=(150, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("3")
            assert app.telemetry_state.startswith("off (")
            assert app.live_telemetry is None and "telemetry" not in app.poller.node_kinds
            await wait_for_text(pilot, f"telemetry {app.telemetry_state}")  # the blank columns say why
            assert "GPU telemetry is off (" in dict(app.key_rows())["t"]  # and so does ? for t
    assert nodes.asked == []
