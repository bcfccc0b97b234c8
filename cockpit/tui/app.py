"""CockpitApp: takes its backend as an argument, runs the one poller, routes snapshots.

Data flow: backend -> Poller (cockpit.core.poller) -> SnapshotUpdated message ->
MainScreen -> the views (rows built in worker threads) -> VTable.

Seams for other issues:
* telemetry: post ``TelemetryUpdated(mapping)`` or call :meth:`set_telemetry`
  (see cockpit/tui/messages.py for the mapping's shape);
* actions: a module ``cockpit.tui.screens.actions`` with ``install(app)`` is
  called on mount; it can ``app.bind(...)``, add palette entries with
  :meth:`add_command`, and read :meth:`selected_keys` / :meth:`marked_keys`;
  ``cockpit.tui.screens.plugins`` (plugin screens, keys l/w) and
  ``cockpit.tui.telemetry`` (live GPU telemetry, key t) are installed the same way.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.screen import Screen

from cockpit.core.poller import Poller, PollStatus
from cockpit.models import ClusterSnapshot
from cockpit.tui.messages import SnapshotUpdated, StatusUpdated, TelemetryUpdated
from cockpit.tui.screens.help import KeysScreen
from cockpit.tui.screens.main import VIEW_ORDER, MainScreen


class CockpitApp(App):
    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "cockpit"
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        backend: Any,
        config: Any = None,
        *,
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
        poll: bool = True,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.config = config
        self.read_only = read_only
        self.clock = clock
        self.snapshot: ClusterSnapshot | None = None
        self.poll_status: PollStatus | None = None
        self.telemetry: dict = {}
        self.extra_commands: list[tuple[str, str, Callable[[], Any]]] = []
        refresh = getattr(config, "refresh", None)
        intervals = {k: getattr(refresh, k) for k in ("nodes", "jobs", "partitions", "topology")} if refresh else None
        self.poller = Poller(backend, self._on_poll, intervals, clock=clock)
        self._poll = poll
        tui = getattr(config, "tui", None)
        self.main = MainScreen(clock, getattr(tui, "max_cell_width", 40))
        if tui is not None and tui.theme in self.available_themes:
            self.theme = tui.theme

    # -- lifecycle -------------------------------------------------------
    def on_mount(self) -> None:
        self.push_screen(self.main)
        if self._poll:
            self.run_worker(self.poller.run(), name="poller", group="poller", exclusive=True)
        self.set_interval(1.0, self._tick)
        self._install_extensions()

    # Each module's install(app) adds keys, palette entries and services (actions,
    # plugin screens, live GPU telemetry); app.cleanups run on unmount.
    EXTENSIONS = ("cockpit.tui.screens.actions", "cockpit.tui.screens.plugins", "cockpit.tui.telemetry")

    def _install_extensions(self) -> None:
        for name in self.EXTENSIONS:
            try:
                mod = importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name != name:  # the extension exists but something it needs is missing
                    self.notify(f"{name} not loaded: {exc}", severity="error")
                continue
            install = getattr(mod, "install", None)
            if install is not None:
                install(self)

    async def on_unmount(self) -> None:
        """Close what extensions opened (SSH pools, the telemetry thread)."""
        for fn in reversed(getattr(self, "cleanups", [])):
            try:
                result = fn()
                if hasattr(result, "__await__"):
                    await result
            except Exception as exc:  # one failing cleanup must not skip the others
                self.log.warning(f"cleanup {fn!r} failed: {exc}")

    async def _on_poll(self, snap: ClusterSnapshot, status: PollStatus) -> None:
        self.post_message(SnapshotUpdated(snap, status))

    def _tick(self) -> None:
        """Once a second: age in the header, countdown in the banner, elapsed times."""
        self.poll_status = self.poller.status()
        self.main.update_header()
        table = self.main.active_table() if self.screen is self.main else None
        if table is not None:
            table.refresh_live()

    # -- messages --------------------------------------------------------
    def on_snapshot_updated(self, message: SnapshotUpdated) -> None:
        self.snapshot, self.poll_status = message.snapshot, message.status
        self.main.update_snapshot(message.snapshot)
        for screen in self.screen_stack:
            # A screen pushed but not yet composed has no widgets to update; its on_mount reads
            # app.snapshot anyway.
            if screen is not self.main and screen.is_mounted and hasattr(screen, "refresh_snapshot"):
                screen.refresh_snapshot(message.snapshot)

    def on_status_updated(self, message: StatusUpdated) -> None:
        self.poll_status = message.status
        self.main.update_header()

    def on_telemetry_updated(self, message: TelemetryUpdated) -> None:
        self.set_telemetry(message.telemetry)

    def set_telemetry(self, telemetry) -> None:
        """Replace the live GPU telemetry shown in the GPU view and node details."""
        self.telemetry = dict(telemetry)
        self.main.update_telemetry(self.telemetry)

    # -- actions ---------------------------------------------------------
    def action_toggle_pause(self) -> None:
        if self.poller.paused:
            self.poller.resume()
        else:
            self.poller.pause()
        self.post_message(StatusUpdated(self.poller.status()))

    def action_refresh_now(self) -> None:
        self.poller.refresh_now()

    def action_show_keys(self) -> None:
        if not isinstance(self.screen, KeysScreen):
            self.push_screen(KeysScreen())

    def action_view(self, kind: str) -> None:
        while self.screen is not self.main and len(self.screen_stack) > 1:
            self.pop_screen()
        self.main.action_view(kind)

    def selected_keys(self) -> tuple:
        """Keys (job ids / node names / 'node:idx') an action applies to in the current view."""
        table = self.main.active_table()
        return table.selected_keys() if table else ()

    def marked_keys(self) -> tuple:
        table = self.main.active_table()
        return table.marked_keys() if table else ()

    def current_view(self) -> str:
        return self.main.current

    def add_command(self, title: str, help: str, callback: Callable[[], Any]) -> None:
        """Add an entry to the command palette (used by the actions extension)."""
        self.extra_commands.append((title, help, callback))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for i, kind in enumerate(VIEW_ORDER, 1):
            yield SystemCommand(f"View: {kind}", f"Show the {kind} view (key {i}, :{kind})",
                                lambda k=kind: self.action_view(k))
        yield SystemCommand("Filter", "Filter the current table (/): words, state:drain user:alice gpus>0",
                            lambda: self.main.action_filter())
        yield SystemCommand("Pause / resume polling", "Stop or restart refreshing (p)", self.action_toggle_pause)
        yield SystemCommand("Refresh now", "Fetch everything now (r)", self.action_refresh_now)
        yield SystemCommand("Sort: next column", "Cycle the sort column of the table (s; S reverses)",
                            lambda: (t := self.main.active_table()) and t.action_cycle_sort())
        yield SystemCommand("Keys", "Show every key (?)", self.action_show_keys)
        for title, help_text, cb in self.extra_commands:
            yield SystemCommand(title, help_text, cb)
