"""The accounting views of the TUI: opened from the command palette
(cockpit/tui/commands.py lists :func:`accounting_commands`).

- History: finished jobs from slurmdbd (cockpit/tui/screens/history.py); Enter
  opens a finished job with its CPU, memory and GPU efficiency.
- Node history: a node's drain/down/reboot events and its one-line summary, with
  a flapping mark (cockpit/tui/screens/nodehistory.py).
- Reservations, maintenance windows included, and what each will block.
- Utilisation: GPU-hours per day as a plot with the 70-80% band and the 50% line.

Each loads in a worker and says in one line where accounting is not configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cockpit.tui.services import services_for

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


def selected_node(app: Any) -> str | None:
    from cockpit.tui.selection import current_targets

    kind, targets = current_targets(app)
    if kind == "node" and targets:
        return targets[0]
    return None


def selected_job_id(app: Any) -> str | None:
    from cockpit.tui.selection import current_targets

    kind, targets = current_targets(app)
    return targets[0] if kind == "job" and targets else None


def open_history(app: Any, window: str = "1d") -> None:
    from cockpit.tui.screens.history import HistoryScreen

    app.push_screen(HistoryScreen(window, services=services_for(app)))


def open_node_history(app: Any) -> None:
    from cockpit.tui.screens.nodehistory import NodeHistoryScreen

    node = selected_node(app)
    if node is None:
        app.notify("select a node first (Nodes view, or a node's detail)", severity="warning")
        return
    app.push_screen(NodeHistoryScreen(node, services=services_for(app)))


def open_finished_job(app: Any) -> None:
    from cockpit.tui.screens.history import FinishedJobScreen

    job = selected_job_id(app)
    if job is None:
        app.notify("select a job first (Jobs view, History, or a job's detail)", severity="warning")
        return
    app.push_screen(FinishedJobScreen(job, services=services_for(app)))


def open_reservations(app: Any) -> None:
    from cockpit.tui.screens.reservations import ReservationsScreen

    app.push_screen(ReservationsScreen(services=services_for(app)))


def open_utilization(app: Any, window: str = "7d") -> None:
    from cockpit.tui.screens.utilization import UtilizationScreen

    app.push_screen(UtilizationScreen(window, services=services_for(app)))


def accounting_commands(app: CockpitApp) -> list[Any]:
    """The palette entries of the accounting views (declared as ``:`` commands)."""
    from cockpit.tui.commands import COLON_COMMANDS, palette_entry

    names = ("history", "efficiency", "events", "reservations", "utilization")
    return [palette_entry(app, c) for c in COLON_COMMANDS if c.name in names]


def show_flapping(app: Any, names: frozenset[str]) -> None:
    """The poller's flapping kind (cockpit/core/flapwatch.py) delivers here: the Nodes view's mark."""
    view = app.main.views.get("nodes")
    if view is not None and hasattr(view, "set_flapping"):
        view.set_flapping(names, visible=app.main.current == "nodes")
