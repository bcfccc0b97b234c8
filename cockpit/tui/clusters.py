"""The App's clusters (``cockpit --cluster all``): which one the main views show,
one poller each, and where each poll's snapshot and each watch's reading goes.

Every cluster brings its snapshots, its probe runner, its gate and its watches:
GPU telemetry, the output watch, the controller's health line and the flapping
marks, node kinds of its own poller (cockpit/tui/watches.py). Their readings are
kept on the cluster's link and shown only while it is in front, so one cluster's
never shows for another. Switching (``:cluster NAME``, ``c`` then Enter) changes
what the main views show (that cluster's snapshot and readings, at once) and what
a screen opened from now on is handed; screens already open stay on their
cluster (cockpit/tui/services.py). A message naming no cluster (a session without
``[clusters.NAME]``, a test's) is the first cluster's.
"""

from __future__ import annotations

from typing import Any

from cockpit.config import Config
from cockpit.models import ClusterSnapshot
from cockpit.tui.accounting import show_flapping
from cockpit.tui.fleet import ClusterLink, probes_for
from cockpit.tui.messages import SnapshotUpdated
from cockpit.tui.services import ClusterBound
from cockpit.tui.watches import attach_watches, watch_behind


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
                                                     probes=probes_for(backend, config), confirm=first._confirm,
                                                     clock=app.clock)
        self.unopened = dict(unopened)  # name -> why it could not be opened (the fleet Pulse says so)
        self.current = first

    # -- what there is --------------------------------------------------
    @property
    def several(self) -> bool:
        return len(self.links) + len(self.unopened) > 1

    def names(self) -> list[str]:
        return list(self.links)

    def link_of(self, cluster: str) -> ClusterLink | None:
        """The link a message names ('' is the first cluster's); None for a cluster not opened."""
        return self.links.get(cluster) or (self.first if not cluster else None)

    def bound_to(self, screen: Any) -> ClusterLink:
        """The cluster ``screen`` shows: its own when bound to one, else the one in front."""
        bound = screen._services if isinstance(screen, ClusterBound) else None  # noqa: SLF001
        return bound if isinstance(bound, ClusterLink) else self.current

    def shows(self, screen: Any, link: ClusterLink) -> bool:
        """Whether ``screen`` shows ``link``'s data: its own cluster's when bound, else the one in front."""
        bound = screen._services if isinstance(screen, ClusterBound) else None  # noqa: SLF001
        return (bound is link) if bound is not None else (link is self.current)

    # -- pollers -------------------------------------------------------
    def start_pollers(self, clock: Any) -> None:
        """One poller per cluster, each with its own intervals and its own watches as node
        kinds. Raises ConfigError for the first cluster's unusable Prometheus setting (another
        cluster's turns its telemetry off, saying why)."""
        for link in self.links.values():
            kinds = attach_watches(self.app, link, clock, strict=link is self.first)
            link.start_poller(self._poster(link.name), clock=clock, node_kinds=kinds)

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
        link = self.link_of(message.cluster)
        if link is not None:
            link.snapshot, link.status = message.snapshot, message.status
            watch_behind(self.app, link)  # a cluster not in front: its jobs to watch, from its own snapshot
        return link

    # -- the watches' readings (cockpit/tui/watches.py) ------------------------
    def _keep(self, cluster: str, field: str, value: Any, show: Any) -> ClusterLink | None:
        """Keep a watch's reading on its cluster's link; ``show`` it while that cluster is in front."""
        link = self.link_of(cluster)
        if link is not None:
            setattr(link, field, value)
            if link is self.current:
                show(value)
        return link

    def telemetry_in(self, cluster: str, telemetry: Any) -> ClusterLink | None:
        """A cluster's new GPU readings (its link, or None for a cluster not opened)."""
        link = self._keep(cluster, "telemetry", dict(telemetry), self.app.main.update_telemetry)
        if link is not None:
            watch_behind(self.app, link)  # new evidence, new suspects: their nodes to read
        return link

    def outputs_in(self, cluster: str, mtimes: dict[int, float]) -> None:
        link = self._keep(cluster, "outputs", mtimes, self.app.main.update_outputs)
        if link is not None:
            watch_behind(self.app, link)

    def controller_in(self, cluster: str, line: str | None) -> None:
        if self._keep(cluster, "controller_line", line, self.app.main.update_controller) is not None:
            self.tick_fleet()  # the fleet Pulse names the cluster whose controller is unhealthy

    def flapping_in(self, link: ClusterLink, names: frozenset[str]) -> None:
        """The flapping kind of ``link``'s poller delivers here: the Nodes view's mark, while in front."""
        link.flapping = frozenset(names)
        if link is self.current:
            show_flapping(self.app, link.flapping)

    def tick(self) -> None:
        """Every cluster's status now (age, stale): the header, the banner and the fleet Pulse."""
        for link in self.links.values():
            link.status = link.poll_status()
        self.tick_fleet()

    def tick_fleet(self) -> None:
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
        left, self.current = self.current, link
        self._show_readings(link)
        main.update_snapshot(link.snapshot or ClusterSnapshot(source=f"{name}: waiting for its first data"))
        link.status = link.poll_status()
        main.update_header()
        self.app.update_crumbs()
        watch_behind(self.app, left)  # no Pulse picks for the cluster left any more
        for other in self.links.values():  # its telemetry panel shown, the others' hidden, now
            if other.live_telemetry is not None:
                other.live_telemetry.tick()
        return ""

    def _show_readings(self, link: ClusterLink) -> None:
        """The main views get ``link``'s readings, and nothing of the cluster left."""
        main = self.app.main
        main.pulse.switch_cluster(link.tracker, telemetry=link.telemetry, outputs=link.outputs,
                                  watching=link.watching)
        for kind in ("gpus", "jobs"):
            main.views[kind].telemetry_off = link.telemetry_off
        main.views["gpus"].set_telemetry(link.telemetry, visible=main.current == "gpus")
        main.update_controller(link.controller_line)
        show_flapping(self.app, link.flapping)

    def open_pulse(self) -> None:
        from cockpit.tui.screens.fleet import FleetScreen

        if not isinstance(self.app.screen, FleetScreen):
            self.app.push_screen(FleetScreen(self, self.app.clock))
