"""Live GPU telemetry in the TUI: nvidia-smi over SSH for the nodes in view.

Installed by CockpitApp on mount (:func:`install`) when SSH can reach the
nodes ([general] host, [ssh] jump_host or an ssh config file), the backend
talks to a real cluster, and ``[tui] telemetry`` is true. One thread with its
own event loop polls every ``[refresh] telemetry`` seconds, one poll at a
time (never overlapping), and only the nodes in view: the GPU view's visible
rows, an open node detail, and nodes asked for with ``t``. SSH and parsing
stay off the UI thread; the UI thread only joins the result to Slurm's GPU
index -> job mapping (:mod:`cockpit.telemetry.join`) and hands it to
``app.set_telemetry``. A panel above the GPU view shows the poll's age and a
progress bar while a poll takes long, each node's error, and GPUs held by a
job but idle ("job 123 (alice) GPU 3: 0% util for 20 min").
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static

from cockpit.core.text import clean
from cockpit.telemetry.collect import TelemetryCollector
from cockpit.telemetry.join import LowUtilTracker, gpu_owners, join
from cockpit.telemetry.nvsmi import THROTTLE_BITS, GpuTelemetry
from cockpit.tui.plugin_support import add_cleanup

SHORT_REASON = {"sw_power_cap": "power cap", "hw_slowdown": "hw slow", "sw_thermal_slowdown": "sw thermal",
                "hw_thermal_slowdown": "hw thermal", "hw_power_brake_slowdown": "pwr brake"}
PANEL_LINES = 3  # errors and idle GPUs shown each; the rest is counted
SLOW_POLL_S = 1.0  # show the progress bar once a poll has lasted this long


def telemetry_blocker(app: Any) -> str:
    """'' when telemetry can run for this app, else why not (one line)."""
    from cockpit.config import Config
    from cockpit.remote.settings import SshSettings

    cfg = app.config or Config()
    if not getattr(cfg.tui, "telemetry", True):
        return "off ([tui] telemetry = false)"
    if getattr(app.backend, "runner", None) is None:
        return "off (no real nodes behind this backend)"
    if not (cfg.general.host or cfg.ssh.jump_host or SshSettings.from_config(cfg).config_paths()):
        return "off (no SSH route to the nodes: set [general] host, [ssh] jump_host or an ssh config file)"
    if cfg.refresh.telemetry <= 0:
        return "off ([refresh] telemetry = 0)"
    return ""


def throttle_word(t: GpuTelemetry) -> str | None:
    """'none', or the first active throttle reason (+N more); None when not reported."""
    if t.clock_event_reasons is None:
        return None
    bits = [e for e in t.clock_events if e in SHORT_REASON]
    if not bits or not t.clock_event_reasons & THROTTLE_BITS:
        return "none"
    return SHORT_REASON[bits[0]] + (f"+{len(bits) - 1}" if len(bits) > 1 else "")


def view_values(t: GpuTelemetry, low_since: float | None, now: float) -> dict[str, Any]:
    """The GPU view's telemetry cells (see cockpit/tui/messages.py): percent, °C, W, count."""
    mem = None
    if t.mem_used_mib is not None and t.mem_total_mib:
        mem = round(100.0 * t.mem_used_mib / t.mem_total_mib, 1)
    out: dict[str, Any] = {"util": t.util_gpu, "mem": mem, "temp": t.temp_gpu, "power": t.power_w,
                           "ecc": t.ecc_uncorr_volatile, "throttle": throttle_word(t)}
    if low_since is not None:
        out["low_util_for"] = f"{int((now - low_since) // 60)} min"
    return out


def visible_gpu_nodes(app: Any) -> set[str]:
    """Nodes of the GPU view's rows on screen now (empty when the view is hidden)."""
    if app.screen is not app.main or app.current_view() != "gpus":
        return set()
    table = app.main.active_table()
    try:
        order = table.data.order
        start = max(0, int(table.scroll_y))
        keys = order[start:start + max(1, table.size.height - 1)]
    except (AttributeError, TypeError):  # a table without these internals: poll nothing rather than crash
        return set()
    return {str(k).rsplit(":", 1)[0] for k in keys}


class TelemetryService:
    """Polls in a thread of its own; everything it shows is applied on the UI thread."""

    def __init__(self, app: Any, settings: Any, interval: float, clock: Callable[[], float] = time.time) -> None:
        self.app, self.settings, self.clock = app, settings, clock
        self.interval = max(1.0, float(interval))
        self.tracker = LowUtilTracker()
        self.readings: dict[tuple[str, int], GpuTelemetry] = {}
        self.errors: dict[str, str] = {}
        self.asked: set[str] = set()
        self.last_poll: float | None = None
        self.last_nodes: tuple[str, ...] = ()
        self.last_duration = 0.0
        self.polls = 0
        self.progress: tuple[int, int] | None = None  # (done, total) while a poll runs
        self.poll_started = 0.0
        self.panel: TelemetryPanel | None = None
        self._stop = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Future | None = None

    # -- UI thread -----------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="cockpit-telemetry", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Stop polling and close the SSH connections (waits in a thread: the poller may need the UI)."""
        self._stop = True
        self._poke()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            try:  # a poll waiting on a silent node must not hold the exit for its timeouts
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 10.0)

    def ask(self, nodes: Iterable[str]) -> None:
        """Poll these nodes now (once), besides the nodes in view."""
        self.asked.update(nodes)
        self._poke()

    def wanted(self) -> list[str]:
        nodes, self.asked = set(self.asked), set()
        from cockpit.tui.screens.detail import NodeDetailScreen

        if isinstance(self.app.screen, NodeDetailScreen):
            nodes.add(str(self.app.screen.key))
        nodes |= visible_gpu_nodes(self.app)
        return sorted(nodes)

    def apply(self, nodes: list[str], readings: dict, errors: dict[str, str], duration: float) -> None:
        polled = set(nodes)
        self.readings = {k: v for k, v in self.readings.items() if k[0] not in polled}
        self.readings.update(readings)
        self.errors = {n: e for n, e in self.errors.items() if n not in polled}
        self.errors.update(errors)
        self.last_poll, self.last_nodes, self.last_duration = self.clock(), tuple(nodes), duration
        self.polls += 1
        self.progress = None
        snap = self.app.snapshot
        if snap is not None:
            self.tracker.update(self.readings, gpu_owners(snap), now=self.clock())
        self.app.set_telemetry(self.view_map())
        from cockpit.tui.screens.detail import NodeDetailScreen

        screen = self.app.screen
        if isinstance(screen, NodeDetailScreen) and str(screen.key) in polled and snap is not None:
            screen.refresh_snapshot(snap)  # its GPU lines carry the readings
        self.tick()

    def view_map(self) -> dict[tuple[str, int], dict[str, Any]]:
        now = self.clock()
        owners = gpu_owners(self.app.snapshot) if self.app.snapshot is not None else {}
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for key, t in self.readings.items():
            job = owners.get(key)
            since = self.tracker.since(key[0], key[1], job.job_id) if job else None
            out[key] = view_values(t, since, now)
        snap = self.app.snapshot
        for node, why in self.errors.items():  # node detail shows it per GPU; the panel in full
            gpus = next((n.gpu_total for n in snap.nodes if n.name == node), 0) if snap else 0
            for idx in range(gpus):
                out.setdefault((node, idx), {"error": why})
        return out

    def idle_lines(self) -> list[str]:
        snap = self.app.snapshot
        if snap is None or not self.readings:
            return []
        nodes = {k[0] for k in self.readings}
        rows = [r for r in join(snap, self.readings, self.tracker, nodes=nodes) if r.low_util_since is not None]
        rows.sort(key=lambda r: r.low_util_since)
        return [r.describe(now=self.clock()) for r in rows]

    def tick(self) -> None:
        """Mount the panel once the GPU view exists; refresh its text and progress bar."""
        view = self.app.main.views.get("gpus")
        if self.panel is None and view is not None and view.is_mounted:
            self.panel = TelemetryPanel(self)
            view.mount(self.panel, before=view.table)
        if self.panel is not None and self.panel.is_mounted:
            self.panel.update_from(self)

    # -- the poller thread -----------------------------------------------
    def _poke(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # its loop already closed
                pass

    def _ui(self, fn: Callable, *args: Any) -> Any:
        try:
            return self.app.call_from_thread(fn, *args)
        except Exception:  # the app is gone or going: stop quietly
            self._stop = True
            return None

    def _main(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        collector = TelemetryCollector(self.settings)
        try:
            while not self._stop:
                self._wake.clear()
                nodes = self._ui(self.wanted)
                if nodes and not self._stop:
                    self._task = asyncio.ensure_future(self._poll(collector, nodes))
                    try:
                        await self._task
                    except asyncio.CancelledError:
                        break
                    finally:
                        self._task = None
                if self._stop:
                    break
                try:
                    await asyncio.wait_for(self._wake.wait(), self.interval)
                except asyncio.TimeoutError:
                    pass
        finally:
            await collector.close()

    async def _poll(self, collector: Any, nodes: list[str]) -> None:
        def progress(done: int, total: int, _res: Any) -> None:
            self.progress = (done, total)  # one tuple: read by the UI thread's tick

        self.progress, self.poll_started = (0, len(nodes)), time.monotonic()
        try:
            readings = await collector.telemetry_for(nodes, progress=progress)
            errors = dict(collector.errors)
        except Exception as exc:  # a collector bug: every node says so, the TUI keeps running
            readings, errors = {}, {n: f"telemetry failed: {type(exc).__name__}: {exc}" for n in nodes}
        self._ui(self.apply, nodes, readings, errors, time.monotonic() - self.poll_started)


class TelemetryPanel(Vertical):
    """Above the GPU view's table: poll status, progress, node errors, idle GPUs of jobs."""

    DEFAULT_CSS = """
    TelemetryPanel { height: auto; max-height: 9; }
    TelemetryPanel > Static { height: auto; color: $text-muted; }
    TelemetryPanel > ProgressBar { height: 1; display: none; }
    TelemetryPanel > ProgressBar.-busy { display: block; }
    """

    def __init__(self, service: TelemetryService) -> None:
        super().__init__(id="telemetry-panel")
        self.service = service
        self.text = Static("", id="telemetry-text")
        self.bar = ProgressBar(total=1, show_eta=False, id="telemetry-progress")

    def compose(self):
        yield self.text
        yield self.bar

    def update_from(self, s: TelemetryService) -> None:
        self.text.update(panel_text(s))
        busy = s.progress is not None and time.monotonic() - s.poll_started >= SLOW_POLL_S
        self.bar.set_class(busy, "-busy")
        if busy and s.progress:
            done, total = s.progress
            self.bar.update(total=max(1, total), progress=done)


def panel_text(s: TelemetryService) -> Text:
    """Plain Text (cluster strings and SSH errors are data, never markup)."""
    t = Text(f" GPU telemetry every {s.interval:g} s for the nodes in view: ", style="bold")
    if s.progress is not None:
        t.append(f"polling {s.progress[0]}/{s.progress[1]} nodes…")
    elif s.last_poll is None:
        t.append("waiting for the first poll (scroll the GPU view or press t)")
    else:
        age = max(0, int(s.clock() - s.last_poll))
        t.append(f"last poll {age} s ago, {len(s.last_nodes)} node(s) in {s.last_duration:.1f} s")
    for label, lines, style in (("no telemetry", [f"{n}: {e}" for n, e in sorted(s.errors.items())], "bold red"),
                                ("idle", s.idle_lines(), "yellow")):
        for line in lines[:PANEL_LINES]:
            t.append(f"\n {label}: ", style=style)
            t.append(clean(line, 200))
        if len(lines) > PANEL_LINES:
            t.append(f"\n {label}: {len(lines) - PANEL_LINES} more", style=style)
    return t


def _ask_selected(app: Any, service: TelemetryService) -> None:
    from cockpit.tui.screens.actions import current_targets

    kind, targets = current_targets(app)
    nodes: set[str] = set()
    if kind == "node":
        nodes.update(targets)
    elif kind == "job" and app.snapshot is not None:
        for job in app.snapshot.jobs:
            if str(job.job_id) in targets:
                nodes.update(job.nodes)
    nodes |= visible_gpu_nodes(app)
    if not nodes:
        app.notify("select nodes, a job or open the GPU view to poll their GPUs", severity="warning")
        return
    service.ask(nodes)
    app.notify(f"polling GPU telemetry of {len(nodes)} node(s)")


def install(app: Any) -> None:
    """The app's seam: start the poller when SSH reaches the nodes; key ``t`` polls now."""
    why = telemetry_blocker(app)
    app.telemetry_state = why or "on"
    if why:
        return
    from cockpit.remote.settings import SshSettings

    service = TelemetryService(app, SshSettings.from_config(app.config), app.config.refresh.telemetry)
    app.telemetry_service = service
    app.action_telemetry_now = lambda: _ask_selected(app, service)
    app.bind("t", "telemetry_now", description="GPU poll")
    keys = getattr(app, "extra_keys", None)
    if keys is None:
        keys = app.extra_keys = []
    keys.append(("t", "poll GPU telemetry now for the selected nodes / job (nodes in view are polled anyway)"))
    app.add_command("Telemetry: poll the selected nodes now (t)", "nvidia-smi over SSH on the selection",
                    app.action_telemetry_now)
    app.set_interval(0.5, service.tick)
    add_cleanup(app, service.stop)
    service.start()
