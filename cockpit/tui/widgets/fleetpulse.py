"""The fleet Pulse: every cluster at a glance (``cockpit --cluster all``).

Top: one row per cluster (its state, data age, source, nodes, drained/down,
suspects): Enter shows that cluster in the main views. Under it, one stale
banner per cluster whose fetches fail, naming that cluster alone, and one line
per cluster whose controller is unhealthy (its Pulse's controller line). Then
every cluster's suspect jobs, with that cluster's own output-silent and idle-GPU
evidence, and drained/down nodes (cockpit/tui/fleetdata.py), the cluster named
first. The suspects and nodes are computed in a worker thread when a cluster's
snapshot or readings change; the state rows are redrawn every second.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual import work
from textual.containers import Vertical
from textual.widgets import Static

from cockpit.text import clean
from cockpit.tui.fleetdata import FLEET_NODE_COLUMNS, FLEET_SUSPECT_COLUMNS, ClusterInput, compute_fleet
from cockpit.tui.rows import Column, Row, build_table, duration
from cockpit.tui.services import FleetServices
from cockpit.tui.widgets.header import StaleBanner
from cockpit.tui.widgets.vtable import VTable

# SOURCE last and wider than other cells: a slurmrestd URL is longer than the usual
# cap, and the counts stay on screen at 80 columns however long the source is.
CLUSTER_COLUMNS = (Column("CLUSTER", 7, 0, pin=True), Column("STATE", 5, 1, pin=True), Column("AGE", 3, 2, "right"),
                   Column("NODES", 5, 4, "right"), Column("DOWN", 4, 5, "right"),
                   Column("SUSPECTS", 8, 6, "right"), Column("SOURCE", 6, 3))
SOURCE_CAP = 100


def cluster_row(name: str, link: Any, counts: tuple[int, int, int] | None, current: bool, why: str = "") -> Row:
    """One cluster's state row; ``link`` None: it could not be opened (``why``)."""
    status = link.status if link is not None else None
    snap = link.snapshot if link is not None else None
    if link is None:
        state = "NOT OPENED"
    elif status is not None and status.stale:
        state = "STALE"
    elif status is not None and status.paused:
        state = "paused"
    else:
        state = "ok" if snap is not None else "waiting"
    age = status.age() if status is not None else None
    source = clean(why, 120)
    if snap is not None:
        source = clean(snap.source, 80) + (f" slurm {clean(snap.slurm_version, 12)}" if snap.slurm_version else "")
    nodes, down, suspects = counts or (None, None, None)
    cells = (("▸ " if current else "  ") + clean(name, 40), state, "—" if age is None else duration(age) or "0s",
             *("" if v is None else str(v) for v in (nodes, down, suspects)), source)  # CLUSTER_COLUMNS' order
    style = "bad" if state in ("STALE", "NOT OPENED") else ""
    return Row(name, cells, (name, state, age, source, nodes, down, suspects), style)


class FleetPulse(Vertical):
    DEFAULT_CSS = """
    FleetPulse { height: 1fr; }
    FleetPulse > .pulse-title { height: 1; text-style: bold; color: $text; background: $boost; }
    FleetPulse > #fleet-clusters { height: 2; }
    FleetPulse > VTable { height: 1fr; }
    FleetPulse > #fleet-controllers { height: auto; color: $error; text-style: bold; display: none; }
    """

    def __init__(self, fleet: FleetServices, clock: Any, width: int = 40, *, silent_after: float = 600.0, **kw: Any) -> None:
        """``fleet``: the App's clusters (cockpit/tui/clusters.py), read on each refresh."""
        super().__init__(**kw)
        self.fleet, self.clock, self.silent_after = fleet, clock, silent_after
        self.clusters = VTable(CLUSTER_COLUMNS, clock=clock, cap=max(width, SOURCE_CAP), scroll_room=0,
                               id="fleet-clusters")
        self.clusters.styles.height = max(2, len(fleet.links))  # every cluster's row, however many
        self.banners = [StaleBanner(classes="fleet-banner") for _ in fleet.links]
        self.controllers = Static("", id="fleet-controllers")  # "cluster b: controller CRIT: ..."
        self.suspects = VTable(FLEET_SUSPECT_COLUMNS, clock=clock, cap=width, target_kind="job", scroll_room=0,
                               id="fleet-suspects")
        self.bad = VTable(FLEET_NODE_COLUMNS, clock=clock, cap=width, target_kind="node", scroll_room=0,
                          id="fleet-nodes")
        self._seen: tuple = ()
        self._counts: dict[str, tuple[int, int, int]] = {}
        self._controller_text = ""

    def compose(self):
        yield Static("CLUSTERS  (Enter: show it in the views)", classes="pulse-title")
        yield self.clusters
        yield from self.banners
        yield self.controllers
        yield Static("SUSPECT JOBS, EVERY CLUSTER", classes="pulse-title")
        yield self.suspects
        yield Static("DRAINED / DOWN NODES, EVERY CLUSTER", classes="pulse-title")
        yield self.bad

    def refresh_fleet(self) -> None:
        """Redraw the state rows and banners; recompute the tables when a snapshot changed."""
        fleet = self.fleet
        self._state_rows()
        for banner, (name, link) in zip(self.banners, fleet.links.items()):
            banner.show(link.status, name)  # this cluster's outage, named: the others keep their rows fresh
        self._controller_lines()
        # the readings are replaced whole, never changed in place: a new object is a change
        seen = tuple((id(link.snapshot), id(link.outputs), id(link.telemetry)) for link in fleet.links.values())
        if seen != self._seen:
            self._seen = seen
            self._recompute()

    def _state_rows(self) -> None:
        fleet = self.fleet
        rows = [cluster_row(name, link, self._counts.get(name), link is fleet.current)
                for name, link in fleet.links.items()]
        rows += [cluster_row(name, None, None, False, why) for name, why in fleet.unopened.items()]
        self.clusters.set_data(build_table(rows, None, None, False))
        height = len(rows) + 1  # every cluster's row, and the header: never a scrolled list
        if self.clusters.styles.height is None or self.clusters.styles.height.value != height:
            self.clusters.styles.height = height

    def _controller_lines(self) -> None:
        lines = [(name, link.controller_line) for name, link in self.fleet.links.items() if link.controller_line]
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (name, line) in enumerate(lines):  # cluster names and the line are data: Text, never markup
            text.append(("\n" if i else "") + f" cluster {clean(name, 40)}: {clean(line, 200)}")
        if text.plain != self._controller_text:  # redrawn each second: touched only when it changed
            self._controller_text = text.plain
            self.controllers.update(text)
            self.controllers.display = bool(lines)

    def _inputs(self) -> list[ClusterInput]:
        return [ClusterInput(name, link.snapshot, link.tracker.usual, link.outputs, link.telemetry)
                for name, link in self.fleet.links.items()]

    @work(exclusive=True, group="fleet-pulse")
    async def _recompute(self) -> None:
        data = await asyncio.to_thread(compute_fleet, self._inputs(), self.clock(), silent_after=self.silent_after)
        self._counts = dict(data.counts)
        self.suspects.set_data(data.suspects)
        self.bad.set_data(data.bad_nodes)
        self._state_rows()
