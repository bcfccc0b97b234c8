"""A node's event history from accounting: drains, downs and reboots with reason,
who and when, the one-line summary ("drained 3x in 14 d, 2x Xid 79, 4 of the last
10 jobs failed"), a FLAPPING mark, and its last finished jobs (Enter on none:
read only). ``[``/``]``: the last 14 / 30 days."""

from __future__ import annotations

import time

from rich.table import Table
from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.widgets import Static

from cockpit.text import clean
from cockpit.tui.rows import duration
from cockpit.tui.screens.acctwindow import AccountingWindowScreen, window_keys
from cockpit.tui.services import ClusterServices


def _when(t) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "now"


def history_renderables(h, now: float) -> list:
    from cockpit.core.accounting import failure_text

    head = Text()
    if h.flapping:
        head.append(" FLAPPING ", style="bold reverse red")
        head.append(" ")
    head.append(clean(h.summary, 300), style="bold")
    events = Table("EVENT", "STATE", "FROM", "UNTIL", "FOR", "BY", "REASON", box=None, pad_edge=False)
    for e in h.events:
        events.add_row(Text(e.kind), Text(clean(e.state, 20)), Text(_when(e.start)), Text(_when(e.end)),
                       Text(duration((e.end or now) - e.start) or "0s"), Text(clean(e.user, 20)),
                       Text(clean(e.reason, 120)))
    jobs = Table("JOBID", "NAME", "STATE", "ENDED", "WHY", box=None, pad_edge=False)
    for j in h.recent_jobs:
        jobs.add_row(Text(clean(j.job_id, 20)), Text(clean(j.name, 30)), Text(j.state), Text(_when(j.end_time)),
                     Text(clean(failure_text(j), 80)), style="red" if j.failed else "")
    return [head, Text("\nEvents", style="bold underline"), events if h.events else Text("  none in the window"),
            Text(f"\nLast {len(h.recent_jobs)} finished job(s) on {h.node}", style="bold underline"),
            jobs if h.recent_jobs else Text("  none in the window"),
            Text("\n" + "; ".join(c.describe() for c in h.costs), style="dim")]


class NodeHistoryScreen(AccountingWindowScreen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="nodehistory.back"), *window_keys("nodehistory")]
    windows = ("14d", "30d")
    DEFAULT_CSS = "NodeHistoryScreen #nh-title { background: $panel; text-style: bold; height: 1; }"
    title_id, status_id = "nh-title", "nh-body"

    def __init__(self, node: str, window: str = "14d", *, services: ClusterServices) -> None:
        super().__init__(window, services=services)
        self.node = node

    @property
    def crumb(self) -> str:
        return f"{self.node} history"

    def targets(self) -> tuple[str, tuple[str, ...]]:
        return "node", (self.node,)

    @work(exclusive=True, group="node-history")
    async def load(self) -> None:
        from rich.console import Group

        from cockpit.core.nodehistory import node_history

        answer = await self.ask(f" {clean(self.node, 60)}: events, last {self.window} ([ ]: 14/30 d)",
                                lambda acct, since, now: node_history(acct, self.node, since, now))
        if answer is not None:
            h, now = answer
            self.query_one("#nh-body", Static).update(Group(*history_renderables(h, now)))

