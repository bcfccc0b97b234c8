"""CockpitApp: takes its backend as an argument, runs a poller per cluster, routes snapshots.

Data flow: backend -> Poller (cockpit.core.poller) -> SnapshotUpdated message ->
MainScreen -> the views (rows built in worker threads) -> VTable. Each cluster's
GPU telemetry, output watch, controller health and flapping marks are node kinds
of its own poller (cockpit/tui/watches.py) -> TelemetryUpdated, OutputUpdated,
ControllerUpdated naming the cluster; the App keeps each cluster's latest on its
link (cockpit/tui/clusters.py) and shows the readings of the cluster in front.

The App declares what it offers: its keys (``BINDINGS``, each with an id a
keymap can rebind; the main screen and the tables declare theirs), its palette
entries (``COMMANDS``: cockpit/tui/commands.py) and, from the plugins loaded
through the entry point, their keys (KeySpecs), screens and commands
(cockpit/tui/plugin_support.py). The actions are methods of the App and of the
helpers it owns: :class:`~cockpit.tui.acting.ActionFlows` (a, f, P),
:class:`~cockpit.tui.viewing.Viewers` (y, d, L, A) and
:class:`~cockpit.tui.openers.PluginOpeners` (plugin screens and checks).
The path of the screen stack (``Jobs › 48213 › dgx001``) is kept in
``sub_title`` for the breadcrumbs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, ScreenStackError
from textual.content import Content
from textual.binding import Binding, BindingsMap
from textual.css.query import NoMatches
from textual.screen import ModalScreen

from cockpit.config import Config
from cockpit.heap import one_malloc_arena, responsive_gil
from cockpit.core.actions import Actions
from cockpit.core.poller import Poller, PollStatus, note_input
from cockpit.models import ClusterSnapshot
from cockpit.text import clean
from cockpit.tui.acting import ActionFlows
from cockpit.tui.clusters import Fleet
from cockpit.tui.fleet import ClusterLink, probes_for
from cockpit.tui.viewing import Viewers
from cockpit.tui.commands import CockpitCommands
from cockpit.tui.keyhelp import KEY_HELP, key_sections
from cockpit.tui.messages import SnapshotUpdated, StatusUpdated, TelemetryUpdated
from cockpit.tui.openers import PluginOpeners
from cockpit.tui.controllerwatch import ControllerUpdated, ControllerWatch
from cockpit.tui.outputwatch import OutputUpdated, OutputWatch
from cockpit.tui.plugin_support import PluginRegistry, normalize_key
from cockpit.tui.screens.detail import DetailScreen, NodeDetailScreen
from cockpit.tui.screens.help import KeysScreen, QuitScreen
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.selection import nodes_in_view
from cockpit.tui.telemetry import KIND as TELEMETRY, LiveTelemetry, visible_gpu_nodes
from cockpit.tui.widgets.crumbs import app_title
from cockpit.tui.widgets.pulse import PulseView
from cockpit.tui.widgets.vtable import VTable

__all__ = ["KEY_HELP", "CockpitApp", "probes_for"]


class CockpitApp(App):
    """Also its screens' ScreenHost (cockpit/tui/services.py): ``config``, ``output_watch``,
    ``clock``, ``copy_value``, ``update_crumbs`` and ``start_action``."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "cockpit"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {CockpitCommands}
    BINDINGS = [
        Binding("a", "act", "Act", id="cockpit.act"),
        Binding("f", "follow_output", "Follow log", show=False, id="cockpit.follow"),
        Binding("P", "job_processes", "Procs", show=False, id="cockpit.procs"),
        Binding("t", "telemetry_now", "GPU poll", show=False, id="cockpit.telemetry"),
        Binding("y", "copy", "Copy", show=False, id="cockpit.copy"),
        Binding("d", "describe", "Describe", show=False, id="cockpit.describe"),
        Binding("L", "slurm_logs", "Slurm logs", show=False, id="cockpit.logs"),
        Binding("A", "audit_log", "Audit log", show=False, id="cockpit.audit"),
        Binding("c", "clusters", "Clusters", show=False, id="cockpit.clusters"),
        # ? on every screen (plugin screens included); ctrl+c asks as q does (a second one quits)
        Binding("question_mark", "show_keys", "Keys", show=False, id="cockpit.keys"),
        Binding("colon", "command_line", "Command", show=False, id="cockpit.command"),
        Binding("ctrl+c", "request_quit", "Quit", show=False, priority=True, id="cockpit.quit"),
        # the views from any screen: back to the main screen, then the view (1-5 there too)
        *(Binding(str(i), f"view('{kind}')", kind, show=False, id=f"cockpit.view-{kind}")
          for i, kind in enumerate(("pulse", "nodes", "gpus", "partitions", "jobs"), 1)),
    ]

    def __init__(
        self,
        backend: Any,
        config: Config | None = None,
        *,
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
        poll: bool = True,
        probes: Any = None,
        plugins: PluginRegistry | None = None,
        fleet: tuple[tuple[Any, Config], ...] = (),
        unopened: dict[str, str] | None = None,
    ) -> None:
        """``probes``: the backend's probe runner unless given; ``plugins``: loaded
        through the entry point unless given; ``fleet``: the other clusters' (backend,
        config), each polled on its own (``cockpit --cluster all``); ``unopened``: the
        clusters that could not be opened, and why. Every cluster has its own GPU
        telemetry, output watch, controller health and flapping marks (from its own
        config), shown while it is in front. Raises ConfigError for an unusable
        Prometheus setting of the first cluster."""
        one_malloc_arena()  # before any thread: see cockpit.heap
        responsive_gil()  # keys wait less for the worker threads' GIL: see cockpit.heap
        super().__init__()
        self.config = config or Config()
        self.read_only = read_only
        self.clock = clock
        self.probes = probes if probes is not None else probes_for(backend, self.config)
        self.fleet = Fleet(self, ClusterLink(backend, self.config, read_only=read_only, probes=self.probes,
                                             confirm=self._dialog_confirm, clock=clock), fleet, unopened or {})
        self.acting = ActionFlows(self)
        self.openers = PluginOpeners(self)
        self.viewers = Viewers(self)
        self.plugins = plugins if plugins is not None else PluginRegistry.load()
        self.title = app_title(self.simulated)  # every pushed screen's header says SIMULATED in the demo
        self._add_plugin_keys()
        self.fleet.start_pollers(clock)  # each with its cluster's watches as node kinds
        self._poll = poll
        first = self.fleet.first
        self.main = MainScreen(clock, self.config.tui.max_cell_width, silent_after=self.config.tui.silent_after,
                               watching=first.watching)
        for view in ("gpus", "jobs"):
            self.main.views[view].telemetry_off = first.telemetry_off
        self.main.pulse.tracker = first.tracker  # each cluster's recent changes are its own
        if self.config.tui.theme in self.available_themes:
            self.theme = self.config.tui.theme

    def _add_plugin_keys(self) -> None:
        # Textual compiles a class's BINDINGS when the class is made, and the plugins'
        # keys are known only once the entry points are loaded: so this App's binding
        # map gets one Binding per accepted KeySpec, once, before anything is mounted.
        # Each carries the spec's id (a keymap rebinds it) and runs the one declared
        # action plugin_key(id); a spec that clashes with a key declared here is refused.
        taken = {}
        for cls in (CockpitApp, MainScreen, VTable, DetailScreen):  # the keys a plugin key may not take
            for b in Binding.make_bindings(cls.BINDINGS):
                taken[normalize_key(b.key)] = f"cockpit's {b.description or b.action!r}"
        bindings = self.plugins.register_keys(taken)
        if bindings:
            self._bindings = BindingsMap.merge([self._bindings, BindingsMap(bindings)])

    # -- facts: the cluster in front (cockpit/tui/fleet.py) ---------------------
    @property
    def services(self) -> ClusterLink:
        """The services of the cluster the main views show; what a screen opened now is handed."""
        return self.fleet.current

    @property
    def backend(self) -> Any:
        return self.fleet.current.backend

    @property
    def snapshot(self) -> ClusterSnapshot | None:
        return self.fleet.current.snapshot

    @snapshot.setter
    def snapshot(self, snap: ClusterSnapshot | None) -> None:
        self.fleet.current.snapshot = snap

    @property
    def poll_status(self) -> PollStatus | None:
        return self.fleet.current.status

    @poll_status.setter
    def poll_status(self, status: PollStatus | None) -> None:
        self.fleet.current.status = status

    @property
    def poller(self) -> Poller:
        return self.fleet.current.poller

    # the watches of the cluster in front (each cluster has its own: cockpit/tui/watches.py)
    @property
    def telemetry(self) -> dict:
        return self.fleet.current.telemetry

    @property
    def live_telemetry(self) -> LiveTelemetry | None:
        return self.fleet.current.live_telemetry

    @property
    def telemetry_state(self) -> str:
        return self.fleet.current.telemetry_state

    @property
    def output_watch(self) -> OutputWatch | None:
        """Its output watch: the Pulse hands it the jobs to watch (they are its cluster's)."""
        return self.fleet.current.output_watch

    @property
    def controller_watch(self) -> ControllerWatch:
        return self.fleet.current.controller_watch

    @property
    def simulated(self) -> bool:
        return self.fleet.current.simulated

    @property
    def backend_name(self) -> str:
        return self.fleet.current.backend_name

    def _dialog_confirm(self, link: ClusterLink) -> Any:
        from cockpit.tui.plugin_support import dialog_confirm

        return dialog_confirm(self, link)

    def gate(self) -> Actions:
        """The one gate for the actions on the cluster in front (the operator's and plugins'),
        confirming with the dialog; its audit lines name the cluster. Raises ConfigError
        when the audit log path is unusable."""
        return self.fleet.current.gate()

    @property
    def gate_description(self) -> str:
        return self.fleet.current.gate_description

    # -- lifecycle -------------------------------------------------------
    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):
            note_input()  # someone is at the keys: the poller's thaw waits (settle_heap)
        await super().on_event(event)

    def on_mount(self) -> None:
        self.push_screen(self.main)
        for warning in self.plugins.warnings:
            self.notify(warning, title="plugin", severity="error", timeout=15)
        if self._poll:
            self.fleet.run_pollers()
        self.set_interval(1.0, self._tick)
        self.call_after_refresh(self._tick_telemetry)  # the panels in place before the GPU view is first laid out

    async def on_unmount(self) -> None:
        """Stop the node reads in flight and close the probe runners' connections."""
        await self.fleet.close()

    def _tick(self) -> None:
        """Once a second: age in the header, countdown in the banner, elapsed times."""
        try:
            shown = self.screen
        except ScreenStackError:  # shutting down: the screens are popped, and the timer fired once more
            return
        self.fleet.tick()
        self.main.update_header()
        table = self.main.active_table() if shown is self.main else None
        if table is not None:
            table.refresh_live()
        self._tick_telemetry()

    def _tick_telemetry(self) -> None:
        for link in self.fleet.links.values():  # each cluster's: its panel, the nodes new to it
            if link.live_telemetry is not None:
                link.live_telemetry.tick()

    # -- messages --------------------------------------------------------
    def on_snapshot_updated(self, message: SnapshotUpdated) -> None:
        link = self.fleet.received(message)
        if link is None:
            return
        if link is self.fleet.current:
            self.main.update_snapshot(message.snapshot)
        for screen in self.screen_stack:
            # A screen pushed but not yet composed has no widgets to update; its on_mount reads
            # the snapshot anyway. A screen bound to another cluster keeps its own.
            if (screen is not self.main and screen.is_mounted and hasattr(screen, "refresh_snapshot")
                    and self.fleet.shows(screen, link)):
                try:
                    screen.refresh_snapshot(message.snapshot)
                except NoMatches:  # mounted, its children not (yet, or any more): on_mount reads app.snapshot
                    pass
        if link.refresh_once and link.poller is not None:  # r while paused: this was the one poll
            link.refresh_once = False
            link.poller.pause()
            self.post_message(StatusUpdated(link.poller.status()))

    def on_status_updated(self, message: StatusUpdated) -> None:
        self.fleet.tick()
        self.main.update_header()

    def on_telemetry_updated(self, message: TelemetryUpdated) -> None:
        link = self.fleet.telemetry_in(message.cluster, message.telemetry)
        if link is None:
            return
        screen = self.screen
        if (isinstance(screen, NodeDetailScreen) and screen.is_mounted and link.snapshot is not None
                and self.fleet.shows(screen, link)):
            screen.refresh_snapshot(link.snapshot)  # its GPU lines carry the readings of its own cluster
        if link.live_telemetry is not None:
            link.live_telemetry.tick()

    def on_output_updated(self, message: OutputUpdated) -> None:
        self.fleet.outputs_in(message.cluster, message.mtimes)

    def on_controller_updated(self, message: ControllerUpdated) -> None:
        self.fleet.controller_in(message.cluster, message.line)

    def on_pulse_view_updated(self, message: PulseView.Updated) -> None:
        if self.live_telemetry is not None:  # the new suspects' GPUs read now, not at the next tick (up to 1 s)
            self.live_telemetry.tick()

    def on_main_screen_view_shown(self, message: MainScreen.ViewShown) -> None:
        self.update_crumbs()
        if message.kind == "gpus" and self.live_telemetry is not None:
            self.poller.ask(TELEMETRY)  # its rows are on screen now: read them now, not at the next look

    def on_node_detail_screen_shown(self, message: NodeDetailScreen.Shown) -> None:
        shown = next((s for s in reversed(self.screen_stack)
                      if isinstance(s, NodeDetailScreen) and str(s.key) == message.node), self.screen)
        link = self.fleet.bound_to(shown)  # the node is of the cluster its detail was opened for
        if link.live_telemetry is not None:
            link.poller.ask(TELEMETRY, (message.node,))

    def on_plugin_finished(self, message: Any) -> None:
        self.on_plugin_facts(message)

    def on_plugin_facts(self, message: Any) -> None:
        """A plugin screen reports what it found (FACTS_NAMESPACE in the plugin API): the
        hung-job runbook's straggler, shown first among the job's nodes in its detail. Kept
        in the facts of the cluster the plugin screen was opened for (cockpit/tui/openers.py)."""
        facts = getattr(message, "facts", None) or {}
        job = getattr(message, "job_id", None)
        if job and facts.get("straggler_node"):
            link = self.openers.cluster_of(message)
            link.facts.remember(int(str(job).split("_")[0]), facts)

    def set_telemetry(self, telemetry) -> None:
        """Replace the live GPU telemetry of the cluster in front (the GPU view, node details)."""
        self.fleet.telemetry_in(self.fleet.current.name, telemetry)

    # -- screens and where we are -------------------------------------------
    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        result = super().push_screen(*args, **kwargs)
        self.update_crumbs()
        return result

    def pop_screen(self) -> Any:
        result = super().pop_screen()
        self.update_crumbs()
        return result

    def switch_screen(self, screen: Any) -> Any:
        result = super().switch_screen(screen)
        self.update_crumbs()
        return result

    def format_title(self, title: str, sub_title: str) -> Content:
        """Textual's Header (plugin screens) drawn as cockpit's Breadcrumb: one header style."""
        return Content.assemble((f" {title} ", "bold reverse"), " ", (sub_title, "bold"))

    def crumbs(self) -> str:
        """``Jobs › 48213 › dgx001``: the screens in the stack (dialogs left out)."""
        parts = []
        for screen in self.screen_stack[1:]:
            if isinstance(screen, ModalScreen):
                continue
            if screen is self.main:
                parts.append(self.main.crumb_title())
                continue
            parts.append(clean(str(getattr(screen, "crumb", "") or type(screen).__name__.removesuffix("Screen")), 40))
        return " › ".join(parts)  # node names and job ids are cluster strings: cleaned

    def update_crumbs(self) -> None:
        self.sub_title = self.crumbs()

    # -- what the main screen shows ----------------------------------------
    def selected_keys(self) -> tuple:
        """Keys (job ids / node names / 'node:idx') an action applies to in the current view."""
        table = self.main.active_table()
        return table.selected_keys() if table else ()

    def marked_keys(self) -> tuple:
        table = self.main.active_table()
        return table.marked_keys() if table else ()

    def current_view(self) -> str:
        return self.main.current

    def key_rows(self) -> list[tuple[str, str]]:
        """(key, help) of every key the keys screen lists, the current view's first."""
        return [row for _title, rows in key_sections(self) for row in rows]

    # -- actions ---------------------------------------------------------
    def action_toggle_pause(self) -> None:
        """Pause or resume the poller of the cluster in front (the others keep polling)."""
        poller = self.fleet.current.poller
        if poller.paused:
            poller.resume()
        else:
            poller.pause()
        self.post_message(StatusUpdated(poller.status()))

    def action_refresh_now(self) -> None:
        """Fetch now (the cluster in front); while paused, fetch once and stay paused."""
        link = self.fleet.current
        if link.poller.paused:
            link.refresh_once = True
            link.poller.resume()
            self.notify("paused: refreshing once (p resumes polling)")
            return
        link.poller.refresh_now()

    def action_clusters(self) -> None:
        """c: the fleet Pulse, every cluster's state, suspects and drained nodes; Enter switches."""
        self.fleet.open_pulse()

    def switch_cluster(self, name: str) -> str:
        """Show cluster ``name`` in the main views; '' or what was wrong, in words."""
        return self.fleet.switch(name)

    def action_command_line(self) -> None:
        """``:`` on every screen (the main screen opens its own line; dialogs take no command)."""
        if self.screen is self.main:
            self.main.action_command()
        elif not isinstance(self.screen, ModalScreen):
            from cockpit.tui.screens.command import CommandScreen, run_line

            self.push_screen(CommandScreen(), callback=lambda text: run_line(self, text))

    def action_show_keys(self) -> None:
        if not isinstance(self.screen, KeysScreen):
            self.push_screen(KeysScreen(key_sections(self)))

    def action_request_quit(self) -> None:
        """q, ctrl+c, :q: ask first (a second q on a detail screen's way back must not end
        the session); ctrl+c while asking quits."""
        if isinstance(self.screen, QuitScreen):
            self.exit()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(QuitScreen(), callback=answered)

    def action_view(self, kind: str) -> None:
        while self.screen is not self.main and len(self.screen_stack) > 1:
            self.pop_screen()
        self.main.action_view(kind)

    def action_cycle_sort(self) -> None:
        table = self.main.active_table()
        if table is not None:
            table.action_cycle_sort()

    def action_act(self) -> None:
        self.acting.open_menu()

    def action_follow_output(self) -> None:
        self.acting.follow_output()

    def action_job_processes(self) -> None:
        self.acting.job_processes()

    def action_plugin_key(self, key_id: str) -> None:
        self.openers.key(key_id)

    def copy_value(self, value: str, what: str) -> None:
        self.viewers.copy_value(value, what)

    def start_action(self, services: ClusterLink, kind: str, targets: tuple[str, ...], name: str) -> None:
        """ScreenHost's: action ``name`` on ``targets`` through ``services``' gate (the audit
        viewer's follow-ups act on the cluster whose log it shows)."""
        self.acting.start(kind, targets, name, services=services)

    def action_copy(self) -> None:
        self.viewers.copy()

    def action_describe(self) -> None:
        self.viewers.describe()

    def action_slurm_logs(self) -> None:
        self.viewers.slurm_logs()

    def action_audit_log(self) -> None:
        self.viewers.audit_log()

    def action_unmark_all(self) -> None:
        table = self.main.active_table()
        if table is not None:
            table.unmark(None)

    def action_telemetry_now(self) -> None:
        """Poll the GPUs of the selection (nodes, or a job's nodes) and of the rows in view now."""
        link = self.fleet.bound_to(self.screen)  # a node detail's cluster, else the one in front
        if link.live_telemetry is None:
            self.notify(f"GPU telemetry is {link.telemetry_state}", severity="warning")
            return
        nodes = nodes_in_view(self) | visible_gpu_nodes(self)
        if not nodes:
            self.notify("select nodes, a job or open the GPU view to poll their GPUs", severity="warning")
            return
        link.live_telemetry.ask(nodes)
        self.notify(f"polling GPU telemetry of {len(nodes)} node(s)")
