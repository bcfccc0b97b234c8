"""The App's clusters (``cockpit --cluster all``): which one the main views show,
one poller each, and where each poll's snapshot goes.

The first cluster (the first ``[clusters.NAME]`` by name) also carries GPU
telemetry, the output watch, the controller's health line and the flapping
marks; the others bring their snapshots, their probe runner and their gate.
Switching (``:cluster NAME``, ``c`` then Enter) changes what the main views show
and what a screen opened from now on is handed; screens already open stay on
their cluster (cockpit/tui/services.py).
"""

from __future__ import annotations

from typing import Any

from cockpit.config import Config
from cockpit.models import ClusterSnapshot
from cockpit.tui.fleet import ClusterLink, probes_for
from cockpit.tui.messages import SnapshotUpdated
from cockpit.tui.services import ClusterBound


class Fleet:
    def __init__(self, app: Any, first: ClusterLink, others: tuple[tuple[Any, Config], ...],
                 unopened: dict[str, str]) -> None:
        self.app = app
        self.first = first
        self.links: dict[str, ClusterLink] = {first.name: first}
        for backend, config in others:
            if config.cluster in self.links:
                continue  # the same [clusters.NAME] twice: one poller for it
            self.links[config.cluster] = ClusterLink(backend, config, read_only=first.read_only,
                                                     probes=probes_for(backend, config), confirm=first._confirm)
        self.unopened = dict(unopened)  # name -> why it could not be opened (the fleet Pulse says so)
        self.current = first
        self.outputs: dict[int, float] = {}  # the first cluster's output mtimes (shown while it is in front)
        self.controller_line: str | None = None

    # -- what there is --------------------------------------------------
    @property
    def several(self) -> bool:
        return len(self.links) + len(self.unopened) > 1

    def names(self) -> list[str]:
        return list(self.links)

    def on_first(self) -> bool:
        return self.current is self.first

    def shows(self, screen: Any, link: ClusterLink) -> bool:
        """Whether ``screen`` shows ``link``'s data: its own cluster's when bound, else the one in front."""
        bound = screen._services if isinstance(screen, ClusterBound) else None  # noqa: SLF001
        return (bound is link) if bound is not None else (link is self.current)

    # -- pollers -------------------------------------------------------
    def start_pollers(self, clock: Any, first_kinds: dict) -> Any:
        """One poller per cluster, each with its own intervals; returns the first's."""
        for link in self.links.values():
            link.start_poller(self._poster(link.name), clock=clock,
                              node_kinds=first_kinds if link is self.first else None)
        return self.first.poller

    def _poster(self, name: str) -> Any:
        async def on_poll(snap: ClusterSnapshot, status: Any) -> None:
            self.app.post_message(SnapshotUpdated(snap, status, name))
        return on_poll

    def run_pollers(self) -> None:
        """Every cluster's poller in the one "poller" worker, side by side (a fetch that
        fails is that poller's stale state, never an exception out of its loop)."""
        import asyncio

        async def run_all() -> None:
            await asyncio.gather(*(link.poller.run() for link in self.links.values()))

        self.app.run_worker(run_all(), name="poller", group="poller", exclusive=True)

    def received(self, message: SnapshotUpdated) -> ClusterLink | None:
        # a message naming no cluster (a test's, a replay's) is the first cluster's
        link = self.links.get(message.cluster) or (self.first if not message.cluster else None)
        if link is not None:
            link.snapshot, link.status = message.snapshot, message.status
        return link

    def tick(self) -> None:
        """Every cluster's status now (age, stale): the header, the banner and the fleet Pulse."""
        for link in self.links.values():
            link.status = link.poll_status()
        from cockpit.tui.screens.fleet import FleetScreen

        for screen in self.app.screen_stack:
            if isinstance(screen, FleetScreen) and screen.is_mounted:
                screen.refresh_fleet()

    def stale_others(self) -> tuple[str, ...]:
        """The other clusters whose last fetch failed (the header names them)."""
        return tuple(n for n, link in self.links.items()
                     if link is not self.current and link.status is not None and link.status.stale)

    async def close(self) -> None:
        for link in self.links.values():
            try:
                await link.close()
            except Exception as exc:  # noqa: BLE001 - exiting anyway
                self.app.log.warning(f"closing cluster {link.name!r} failed: {exc}")

    # -- switching -----------------------------------------------------
    def switch(self, name: str) -> str:
        """Show cluster ``name`` in the main views; '' or what was wrong, in words."""
        link = self.links.get(name)
        if link is None:
            if name in self.unopened:
                return f"cluster {name!r} could not be opened: {self.unopened[name]}"
            known = ", ".join(self.links) if self.several else "this session has one cluster (cockpit --cluster all)"
            return f"unknown cluster {name!r} (known: {known})"
        if link is self.current:
            return ""
        main = self.app.main
        for view in main.views.values():  # marks are node names / job ids of the cluster left
            for table in (getattr(view, "table", None), getattr(view, "suspects", None), getattr(view, "bad", None)):
                if table is not None:
                    table.unmark(None)
        self.current = link
        main.pulse.tracker = link.tracker
        first = link is self.first
        main.update_telemetry(self.app.telemetry if first else {})
        main.update_outputs(self.outputs if first else {})
        main.update_controller(self.controller_line if first else None)
        main.update_snapshot(link.snapshot or ClusterSnapshot(source=f"{name}: waiting for its first data"))
        link.status = link.poll_status()
        main.update_header()
        self.app.update_crumbs()
        return ""

    def open_pulse(self) -> None:
        from cockpit.tui.screens.fleet import FleetScreen

        if not isinstance(self.app.screen, FleetScreen):
            self.app.push_screen(FleetScreen(self))
