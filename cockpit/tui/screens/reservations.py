"""Reservations, maintenance windows included, and what each will block: the
running jobs on its nodes whose time limit runs past its start, the pending jobs
that may use its nodes and whose time limit crosses it (cockpit.core.reservations).
``r`` reloads. Narrower than WIDE a table of eight columns wraps each cell over a
dozen lines (issue 25: 15 lines for one reservation at 80x24), so there each
reservation is two lines, cut with an ellipsis, and what it will block under them."""

from __future__ import annotations

import time

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from cockpit.errors import CockpitError
from cockpit.hostlist import collapse
from cockpit.text import clean
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.services import ClusterBound, ClusterServices, host_of


def _when(t: int | None, now: float) -> str:
    if not t:
        return "-"
    delta = t - now
    rel = f"in {abs(delta) / 3600:.1f} h" if delta >= 0 else f"{abs(delta) / 3600:.1f} h ago"
    return time.strftime("%m-%d %H:%M", time.localtime(t)) + f" ({rel})"


WIDE = 130  # the table's eight columns fit whole from here on


def _compact(items, snap, now: float):
    """Per reservation: its facts on one line, then "will block: ..." (wrapped)."""
    from cockpit.core.reservations import impact

    out = []
    for r in sorted(items, key=lambda r: r.start or 0):
        who = ",".join(r.users) or ",".join(r.accounts) or "-"
        hit = impact(r, snap, now) if snap is not None else None
        line = Text(no_wrap=True, overflow="ellipsis", style="bold" if r.is_maintenance else "")
        line.append(clean(r.name, 40), style="bold")
        line.append(f"  {'maintenance' if r.is_maintenance else 'reservation'}  {clean(r.state, 12)}"
                    f"  {clean(collapse(r.nodes), 40)}  for {clean(who, 30)}")
        when = Text(f"  {_when(r.start, now)} → {_when(r.end, now)}", no_wrap=True, overflow="ellipsis")
        out += [line, when, Text("  will block: " + (clean(hit.text, 160) if hit else "-"))]
    return Group(*out)


def reservations_renderable(items, snap, now: float, width: int = WIDE):
    from cockpit.core.reservations import impact

    if not items:
        return Text("no reservations")
    if width < WIDE:
        return _compact(items, snap, now)
    t = Table("NAME", "KIND", "STATE", "FROM", "UNTIL", "NODES", "FOR", "WILL BLOCK", box=None, pad_edge=False)
    for r in sorted(items, key=lambda r: r.start or 0):
        who = ",".join(r.users) or ",".join(r.accounts) or "-"
        hit = impact(r, snap, now) if snap is not None else None
        t.add_row(Text(clean(r.name, 40)), Text("maintenance" if r.is_maintenance else "reservation"),
                  Text(clean(r.state, 12)), Text(_when(r.start, now)), Text(_when(r.end, now)),
                  Text(clean(collapse(r.nodes), 40)), Text(clean(who, 30)),
                  Text(clean(hit.text, 160) if hit else "-"), style="bold" if r.is_maintenance else "")
    return t


class ReservationsScreen(ClusterBound, Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="reservations.back"),
                Binding("r", "reload", "Reload", id="reservations.reload")]
    DEFAULT_CSS = "ReservationsScreen #res-title { background: $panel; text-style: bold; height: 1; }"
    crumb = "reservations"

    def __init__(self, *, services: ClusterServices) -> None:
        """``services``: the cluster whose reservations it shows (cockpit/tui/services.py)."""
        super().__init__()
        self.bind_services(services)

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static(Text(" reservations and maintenance windows"), id="res-title")
        with VerticalScroll():
            yield Static(Text("asking Slurm …", style="dim"), id="res-body")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.load()

    def action_reload(self) -> None:
        self.load()

    def refresh_snapshot(self, snap) -> None:  # the App calls it on every poll: the impact follows the queue
        if getattr(self, "_items", None) is not None:
            self.query_one("#res-body", Static).update(self._body(snap))

    def _body(self, snap):
        return Group(reservations_renderable(self._items, snap, host_of(self).clock(), self.size.width),
                     Text("\n" + self._cost, style="dim"))

    def on_resize(self) -> None:
        self.refresh_snapshot(self.services.snapshot)

    @work(exclusive=True, group="reservations")
    async def load(self) -> None:
        from cockpit.core.accounting import scheduling_of

        body = self.query_one("#res-body", Static)
        try:
            sched = await scheduling_of(self.services.backend)
            if sched is None:
                body.update(Text(f"the {self.services.backend_name} backend cannot ask Slurm for reservations", style="bold"))
                return
            found = await sched.reservations()
        except CockpitError as exc:
            body.update(Text(clean(str(exc), 300), style="bold"))
            return
        self._items, self._cost = found.items, "; ".join(c.describe() for c in found.costs)
        body.update(self._body(self.services.snapshot))
