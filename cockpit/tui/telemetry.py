"""Live GPU telemetry in the TUI: a node kind of each cluster's poller.

Each cluster (cockpit/tui/fleet.py: ClusterLink) has its own :class:`LiveTelemetry`,
made from its own config (its ``[clusters.NAME] prometheus_url``, its host) and
probe runner. It gives that cluster's poller (cockpit.core.poller.NodeKind) the
nodes to read (for the cluster in front: the GPU view's rows on screen and the
Pulse's suspects; an open node detail of the cluster; the suspects' nodes the
cluster's background worker names while it is not in front; nodes asked for
with ``t``) and how to read them: ``nvidia-smi --query-gpu`` through the
cluster's probe runner (SSH on a real cluster, the simulated nodes in the
demo), every ``[refresh] telemetry`` seconds, ``[tui] telemetry`` switching it
off. Reads run on the app's event loop, never in a thread of their own; the
result is joined to Slurm's GPU index -> job mapping (:mod:`cockpit.telemetry.join`)
and posted as :class:`~cockpit.tui.messages.TelemetryUpdated`, naming the cluster.
A panel above the GPU view shows, for the cluster in front, the poll's age, a
progress bar while a poll takes long, each node's error, and GPUs held by a job
but idle ("job 123 (alice) GPU 3: 0% util for 20 min").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static

from cockpit.config import Config
from cockpit.core.poller import NodeKind
from cockpit.telemetry.join import LowUtilTracker, gpu_owners, join
from cockpit.telemetry.nvsmi import THROTTLE_BITS, GpuTelemetry
from cockpit.telemetry.probe import TelemetryReading, read_telemetry
from cockpit.telemetry.prometheus import PrometheusError
from cockpit.telemetry.promsource import prometheus_source, with_stale
from cockpit.text import clean
from cockpit.tui.messages import TelemetryUpdated
from cockpit.tui.suspects import IDLE_UTIL
from cockpit.tui.screens.detail import NodeDetailScreen

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.fleet import ClusterLink

KIND = "telemetry"  # the poller's name for this node kind
FLEET_KIND = "telemetry-idle"  # with Prometheus: the fleet-wide idle-GPU query
SHORT_REASON = {"sw_power_cap": "power cap", "hw_slowdown": "hw slow", "sw_thermal_slowdown": "sw thermal",
                "hw_thermal_slowdown": "hw thermal", "hw_power_brake_slowdown": "pwr brake"}
PANEL_LINES = 3  # errors and idle GPUs shown each; the rest is counted
SLOW_POLL_S = 1.0  # show the progress bar once a poll has lasted this long


def telemetry_blocker(config: Config, probes: Any, simulated: bool) -> str:
    """'' when telemetry can run, else why not (one line, "off (...)")."""
    from cockpit.remote.settings import SshSettings

    if not config.tui.telemetry:
        return "off ([tui] telemetry = false)"
    if config.refresh.telemetry <= 0:
        return "off ([refresh] telemetry = 0)"
    if config.telemetry.prometheus_url and not simulated:  # no SSH route needed: Prometheus has it all
        return ""
    if probes is None or not probes.available:
        return f"off ({probes.why_not if probes is not None else 'no nodes to ask behind this backend'})"
    cfg = config
    if not simulated and not (cfg.general.host or cfg.ssh.jump_host or SshSettings.from_config(cfg).config_paths()):
        return "off (no SSH route to the nodes: set [general] host, [ssh] jump_host or an ssh config file)"
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
    if t.stale:  # text, not a number: a stale 0 % is no evidence (the Pulse counts numbers only)
        out = {k: (f"{v:.0f} stale" if isinstance(v, float) else v) for k, v in out.items()}
        out["stale"] = True
    if low_since is not None:
        out["low_util_for"] = f"{int((now - low_since) // 60)} min"
    return out


def visible_gpu_nodes(app: CockpitApp) -> set[str]:
    """Nodes of the GPU view's rows on screen now (empty when the view is hidden)."""
    if app.screen is not app.main or app.current_view() != "gpus":
        return set()
    table = app.main.active_table()
    if table is None:
        return set()
    return {str(k).rsplit(":", 1)[0] for k in table.visible_keys()}


class LiveTelemetry:
    """The ``telemetry`` node kind of one cluster's poller, and what it shows."""

    def __init__(self, app: CockpitApp, link: ClusterLink, clock: Callable[[], float] = time.time) -> None:
        """``link``: the cluster whose GPUs these are (its config, probe runner, poller and
        snapshot). Raises ConfigError for an unusable Prometheus setting of its config."""
        self.app, self.link, self.clock = app, link, clock
        # [telemetry] prometheus_url / [clusters.NAME] prometheus_url / --prometheus:
        # dcgm-exporter's series instead of nvidia-smi
        self.prometheus = prometheus_source(link.config, clock) if not link.simulated else None
        self.probes = self.prometheus or link.probes  # .description for the panel
        self.interval = max(1.0, float(link.config.refresh.telemetry))
        self.tracker = LowUtilTracker()
        self.readings: dict[tuple[str, int], GpuTelemetry] = {}
        self.fleet_idle: dict[tuple[str, int], GpuTelemetry] = {}  # Prometheus: idle GPUs fleet-wide
        self.errors: dict[str, str] = {}
        self.last_poll: float | None = None
        self.last_nodes: tuple[str, ...] = ()
        self.last_duration = 0.0
        self.polls = 0
        self.polling: tuple[str, ...] | None = None  # the nodes of the read in flight
        self.read_once: set[str] = set()  # nodes read (or being read) at least once
        self.poll_started = 0.0
        self.panel: TelemetryPanel | None = None

    def node_kind(self) -> NodeKind:
        return NodeKind(fetch=self.fetch, wanted=self.wanted, deliver=self.deliver, interval=self.interval)

    def node_kinds(self) -> dict[str, NodeKind]:
        """The kinds for its cluster's poller: the nodes in view, and with Prometheus the
        fleet-wide idle GPUs (one query whose answer holds only the idle ones), so that the
        Pulse finds a job idle on GPUs nobody is looking at."""
        kinds = {KIND: self.node_kind()}
        if self.prometheus is not None:
            kinds[FLEET_KIND] = NodeKind(fetch=self.fetch_idle, wanted=self.gpu_job_nodes,
                                         deliver=self.deliver_idle, interval=self.interval)
        return kinds

    def post(self) -> None:
        self.app.post_message(TelemetryUpdated(self.view_map(), self.link.name))

    def in_front(self) -> bool:
        """Whether its cluster is the one the main views show."""
        return self.link is self.app.fleet.current

    def gpu_job_nodes(self) -> set[str]:
        """The fleet query's scope: nodes where a running job holds GPUs."""
        snap = self.link.snapshot
        nodes = {node for node, _ in gpu_owners(snap)} if snap is not None else set()
        if not nodes:  # no GPU job runs: nothing to ask, and nothing old may linger as "idle"
            self.fleet_idle = {}
        return nodes

    async def fetch_idle(self, nodes: tuple[str, ...]) -> dict[tuple[str, int], float]:
        assert self.prometheus is not None
        try:
            return await self.prometheus.idle_gpus(IDLE_UTIL)
        except PrometheusError:  # kept, marked stale: a 0 % that is not live is no evidence
            self.fleet_idle = {k: replace(t, stale=True) for k, t in self.fleet_idle.items()}
            self.post()
            raise

    def deliver_idle(self, nodes: tuple[str, ...], idle: dict[tuple[str, int], float]) -> None:
        scope = set(nodes)
        self.fleet_idle = {k: GpuTelemetry(k[1], util_gpu=u, source="prometheus")
                           for k, u in idle.items() if k[0] in scope}
        self.post()

    # -- what the poller calls (on the app's event loop) -----------------
    def wanted(self) -> set[str]:
        """The nodes on screen (the GPU view's visible rows, an open node detail of this
        cluster) and the nodes of its suspects and silent jobs (their GPUs' use is
        evidence): the Pulse's while it is in front, its background worker's otherwise."""
        app, link = self.app, self.link
        front = self.in_front()
        nodes = visible_gpu_nodes(app) if front else set()
        screen = app.screen
        if isinstance(screen, NodeDetailScreen) and app.fleet.shows(screen, link):
            nodes.add(str(screen.key))
        nodes.update(app.main.pulse.watch_nodes if front else link.watch_nodes)
        return nodes & link.node_names()

    async def fetch(self, nodes: tuple[str, ...]) -> TelemetryReading:
        self.polling, self.poll_started = nodes, time.monotonic()
        self.read_once.update(nodes)
        self.tick()
        try:
            if self.prometheus is None:
                return await read_telemetry(self.probes, nodes)
            try:
                return await self.prometheus.read(nodes)
            except PrometheusError:  # the last values stay, marked stale; the poller backs off
                self.readings = with_stale(TelemetryReading(self.readings)).readings
                self.post()
                raise
        finally:
            self.last_duration = time.monotonic() - self.poll_started
            self.polling = None

    def deliver(self, nodes: tuple[str, ...], reading: TelemetryReading) -> None:
        polled = set(nodes)
        self.readings = {k: v for k, v in self.readings.items() if k[0] not in polled}
        self.readings.update(reading.readings)
        self.errors = {n: e for n, e in self.errors.items() if n not in polled}
        self.errors.update(reading.errors)
        self.last_poll, self.last_nodes = self.clock(), tuple(nodes)
        self.polls += 1
        snap = self.link.snapshot
        if snap is not None:
            self.tracker.update(self.readings, gpu_owners(snap), now=self.clock())
        self.post()

    def ask(self, nodes: set[str]) -> None:
        """Read these nodes now (once), besides the nodes on screen: its cluster's only."""
        self.link.poller.ask(KIND, set(nodes) & self.link.node_names())

    # -- what the views show ---------------------------------------------
    def view_map(self) -> dict[tuple[str, int], dict[str, Any]]:
        now = self.clock()
        snap = self.link.snapshot
        owners = gpu_owners(snap) if snap is not None else {}
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for key, t in {**self.fleet_idle, **self.readings}.items():  # a node read in full wins
            job = owners.get(key)
            since = self.tracker.since(key[0], key[1], job.job_id) if job else None
            out[key] = view_values(t, since, now)
        for node, why in self.errors.items():  # node detail shows it per GPU; the panel in full
            gpus = next((n.gpu_total for n in snap.nodes if n.name == node), 0) if snap else 0
            for idx in range(gpus):
                out.setdefault((node, idx), {"error": why})
        return out

    def idle_lines(self) -> list[str]:
        snap = self.link.snapshot
        if snap is None or not self.readings:
            return []
        nodes = {k[0] for k in self.readings}
        rows = [r for r in join(snap, self.readings, self.tracker, nodes=nodes) if r.low_util_since is not None]
        rows.sort(key=lambda r: r.low_util_since)
        return [r.describe(now=self.clock()) for r in rows]

    def failure(self) -> str:
        """Why the last read failed as a whole ('' when it did not)."""
        st = self.link.poller.node_status(KIND)
        return st.error if st.failures else ""

    def tick(self) -> None:
        """Mount the panel once the GPU view exists, shown while its cluster is in front;
        refresh its text and progress bar; ask for the nodes wanted that were never read
        (a view whose rows arrived after it was shown, rows scrolled into view), without
        waiting for the next look."""
        if self.polling is None and not self.link.poller.node_status(KIND).failures:  # a failing kind backs off
            try:
                new = self.wanted() - self.read_once
            except Exception:  # noqa: BLE001 - the poller's own look reports a broken wanted()
                new = set()
            if new:
                self.read_once.update(new)
                self.ask(new)
        view = self.app.main.views.get("gpus")
        if self.panel is None and view is not None and view.is_mounted:
            self.panel = TelemetryPanel(self)
            self.panel.display = self.in_front()  # before it is laid out: never a flash of another cluster's
            view.mount_panel(self.panel)
        if self.panel is not None and self.panel.is_mounted:
            front = self.in_front()  # each cluster's panel: only the one in front is shown
            if self.panel.display != front:
                self.panel.display = front
            if front:
                self.panel.update_from(self)


class TelemetryPanel(Vertical):
    """Above the GPU view's table: poll status, progress, node errors, idle GPUs of jobs."""

    DEFAULT_CSS = """
    TelemetryPanel { height: auto; max-height: 9; }
    TelemetryPanel > Static { height: auto; color: $text-muted; }
    TelemetryPanel > ProgressBar { height: 1; display: none; }
    TelemetryPanel > ProgressBar.-busy { display: block; }
    """

    def __init__(self, live: LiveTelemetry) -> None:
        super().__init__(classes="telemetry-panel")  # one per cluster in the GPU view: no id
        self.live = live
        self.text = Static("", id="telemetry-text")
        self.bar = ProgressBar(total=None, show_eta=False, show_percentage=False, id="telemetry-progress")

    def compose(self):
        yield self.text
        yield self.bar

    def on_mount(self) -> None:
        self.update_from(self.live)

    def update_from(self, live: LiveTelemetry) -> None:
        self.text.update(panel_text(live))
        busy = live.polling is not None and time.monotonic() - live.poll_started >= SLOW_POLL_S
        self.bar.set_class(busy, "-busy")


def panel_text(s: LiveTelemetry) -> Text:
    """Plain Text (cluster strings and SSH errors are data, never markup)."""
    t = Text(f" GPU telemetry via {clean(s.probes.description, 40)} every {s.interval:g} s for the nodes in view: ",
             style="bold")
    if s.polling is not None:
        t.append(f"polling {len(s.polling)} node(s)…")
    elif s.last_poll is None:
        t.append("waiting for the first poll (scroll the GPU view or press t)")
    else:
        age = max(0, int(s.clock() - s.last_poll))
        t.append(f"last poll {age} s ago, {len(s.last_nodes)} node(s)")
        if s.last_duration >= SLOW_POLL_S:  # fast polls: no figure that changes with the machine's load
            t.append(f" in {s.last_duration:.1f} s")
    failure = s.failure()
    if failure:
        t.append("\n failed: ", style="bold red")
        t.append(clean(failure, 200))
        if s.readings:
            t.append("\n stale: the values below are the last ones read, not live", style="bold red")
    errors = [e if n in e else f"{n}: {e}" for n, e in sorted(s.errors.items())]
    for label, lines, style in (("no telemetry", errors, "bold red"),
                                ("idle", s.idle_lines(), "yellow")):
        for line in lines[:PANEL_LINES]:
            t.append(f"\n {label}: ", style=style)
            t.append(clean(line, 200))
        if len(lines) > PANEL_LINES:
            t.append(f"\n {label}: {len(lines) - PANEL_LINES} more", style=style)
    return t
