"""The fleet Pulse screen (``c``, ``:fleet``): every cluster, and the switcher.

Enter on a cluster's row shows it in the main views; on a suspect job or a
drained node, switches to its cluster and opens its detail there (bound to
that cluster: cockpit/tui/services.py). It is handed the App's clusters (a
FleetServices) and the clock, and asks the App for nothing about them.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from cockpit.plugins.specs import ScreenOffers
from cockpit.text import clean
from cockpit.tui.services import FleetServices
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.widgets.fleetpulse import FleetPulse
from cockpit.tui.widgets.vtable import VTable


class FleetScreen(ScreenOffers, Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="fleet.back")]
    crumb = "Fleet"

    def __init__(self, fleet: FleetServices, clock: Callable[[], float]) -> None:
        """``fleet``: the App's clusters (cockpit/tui/clusters.py); ``clock``: the App's."""
        super().__init__()
        self.fleet = fleet
        cfg = fleet.first.config.tui
        self.pulse = FleetPulse(fleet, clock, cfg.max_cell_width, silent_after=cfg.silent_after)

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield self.pulse
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.refresh_fleet()
        self.set_focus(self.pulse.clusters)

    def refresh_fleet(self) -> None:
        self.pulse.refresh_fleet()

    def targets(self) -> tuple[str, tuple[str, ...]]:
        return "", ()  # a row here names its cluster: act from that cluster's views (Enter)

    def on_vtable_row_activated(self, event: VTable.RowActivated) -> None:
        event.stop()
        key = event.key
        name = key if event.table is self.pulse.clusters else key[0]
        err = self.fleet.switch(name)
        if err:
            self.app.notify(clean(err, 200), severity="warning", markup=False)  # names a cluster: text
            return
        self.app.pop_screen()
        link = self.fleet.links[name]  # the row's cluster, whatever is in front by now
        if event.table is self.pulse.suspects:
            from cockpit.tui.screens.detail import JobDetailScreen

            self.app.push_screen(JobDetailScreen(key[1], services=link))
        elif event.table is self.pulse.bad:
            from cockpit.tui.screens.detail import NodeDetailScreen

            self.app.push_screen(NodeDetailScreen(key[1], services=link))
