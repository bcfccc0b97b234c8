"""What ``?`` lists: the keys of the view in front first, then the App's and the plugins'.

Read from the bindings active on the screen in front (the focused widget's,
then its screen's): the footer shows some of them, ``?`` all of them. The
App's keys carry a longer help line (KEY_HELP); a key that is off says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp

# What each of the App's keys does, for the keys screen (by binding id).
KEY_HELP = {
    "cockpit.act": "act on the marked rows (or the cursor row): cancel, signal, requeue, hold, drain ..., "
                   "always confirmed with the exact command",
    "cockpit.follow": "follow a job's stdout/stderr (read here, or on its batch host through the probe runner)",
    "cockpit.procs": "a job's processes on each of its nodes",
    "cockpit.telemetry": "poll GPU telemetry now for the selected nodes / job (nodes in view are polled anyway)",
    "cockpit.copy": "copy the job id, node list or command under the cursor (OSC 52: works over SSH)",
    "cockpit.describe": "what Slurm says about this job or node, in its own words (scontrol show)",
    "cockpit.logs": "the end of slurmctld's log, and of the node's slurmd log (for a node)",
    "cockpit.audit": "the audit log: past actions, who, what, result; follow-ups (resume after a drain)",
    "cockpit.clusters": "the fleet Pulse: every cluster's state, age, suspects and drained nodes; Enter shows "
                        "that cluster in the views (:cluster NAME too)",
}
# Extra words for keys of the views (by binding id); the binding's description otherwise.
VIEW_HELP = {
    "table.mark": "mark the row (actions apply to marked rows, else the cursor row)",
    "table.unmark": "unmark every row",
    "table.open": "open the row: job → detail → node, node → detail → jobs",
    "table.sort": "sort by the next column (the arrow in the header shows the direction)",
    "table.sort-reverse": "reverse the sort",
    "table.left": "scroll the columns left (when they do not all fit; key columns stay)",
    "table.right": "scroll the columns right",
    "poll.pause": "pause / resume polling",
    "poll.refresh": "refresh now (while paused: once)",
    "main.filter": "filter the table",
    "main.command": "command line",
    "main.problems": "what the last fetch could not read: each record left out, named",
    "detail.back": "back",
    "joblog.stream": "switch between stdout and stderr",
    "view.columns": "choose this view's columns (saved in the config file)",
    "view.export": "export this view as shown (filtered, sorted) to a .csv or .json file",
}
SKIP = {"cockpit.keys", "cockpit.quit", "command.complete", "table.up", "table.down", "table.page-up", "table.page-down", "table.top", "table.bottom",
        "view.pulse", "view.nodes", "view.gpus", "view.partitions", "view.jobs", "main.keys", "main.clear",
        *(f"cockpit.view-{k}" for k in ("pulse", "nodes", "gpus", "partitions", "jobs"))}


def key_sections(app: CockpitApp) -> list[tuple[str, list[tuple[str, str]]]]:
    """(title, [(key, help)]) for the keys screen: this view's keys, then everywhere's."""
    view, everywhere, seen = [], [], set()
    plugin_ids = set(app.plugins.keys)
    for _key, active in app.screen.active_bindings.items():
        b: Binding = active.binding
        if not b.id or b.id in seen or b.id in SKIP or b.id in plugin_ids or b.id in KEY_HELP:
            continue  # no id: Textual's own scrolling keys
        seen.add(b.id)
        if active.node is app:
            continue
        view.append((app.get_key_display(b), VIEW_HELP.get(b.id or "", b.description or b.action)))
    for b in app.BINDINGS:
        if not isinstance(b, Binding) or b.id not in KEY_HELP:
            continue
        help_ = KEY_HELP[b.id]
        if b.id == "cockpit.telemetry" and app.live_telemetry is None:
            help_ += f"  [GPU telemetry is {app.telemetry_state}]"
        everywhere.append((b.key, help_))
    everywhere += [(k.spec.key, k.spec.help) for k in app.plugins.keys.values()]
    return [(f"This view: {app.crumbs()}", view), ("Everywhere", everywhere)]
