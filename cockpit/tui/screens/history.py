"""History: finished jobs from Slurm's accounting, newest first (``[``/``]``:
a shorter/longer window of the last hour, day, week; the number keys switch views
as everywhere); Enter opens one with its efficiency.

The query runs in a worker and big outputs are parsed in a thread
(cockpit.backends.accounting), the rows are built in a thread: keys keep
answering while 28k jobs load. Without slurmdbd the status line says so.
Cluster strings are Text, never markup.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from cockpit.errors import CockpitError
from cockpit.hostlist import collapse
from cockpit.models.accounting import FAILED_STATES, JobRecord
from cockpit.plugins.specs import ScreenOffers
from cockpit.text import clean
from cockpit.tui.screens.acctwindow import stepped, window_keys
from cockpit.tui.rows import Column, Row, build_table, duration
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.widgets.vtable import VTable
from cockpit.tui.services import ClusterBound, ClusterServices, host_of

WINDOWS = ("1h", "1d", "7d")
COLUMNS = (
    Column("JOBID", 6, 0, pin=True), Column("NAME", 8, 1), Column("USER", 4, 2, pin=True),
    Column("PARTITION", 6, 3), Column("STATE", 9, 4, pin=True), Column("EXIT", 4, 5, "right"),
    Column("ELAPSED", 7, 6, "right"), Column("NODES", 6, 7), Column("GPUS", 4, 8, "right"),
    Column("ENDED", 11, 9), Column("WHY", 10, 10),
)


def history_row(j: JobRecord, width: int = 40) -> Row:
    from cockpit.core.accounting import failure_text

    code = "" if j.exit_code is None else str(j.exit_code) + (f":{j.exit_signal}" if j.exit_signal else "")
    ended = time.strftime("%m-%d %H:%M", time.localtime(j.end_time)) if j.end_time else ""
    why = failure_text(j)
    cells = (clean(j.job_id, width), clean(j.name, width), clean(j.user, width), clean(j.partition, width), j.state,
             code, duration(j.elapsed_s), clean(collapse(j.nodes), width), str(j.gpus or ""), ended, clean(why, 80))
    values = (j.job_id_raw, j.name, j.user, j.partition, j.state, j.exit_code, j.elapsed_s, ",".join(j.nodes),
              j.gpus, j.end_time, why)
    style = "bad" if j.state in FAILED_STATES or j.state == "TIMEOUT" else ""
    return Row(j.job_id, cells, values, style, extra=j.account)


def rows_table(jobs: tuple[JobRecord, ...]):
    """(rows by key, the table data) for the VTable; run in a thread."""
    rows = [history_row(j) for j in jobs]
    return build_table(rows, None, None, False)


class HistoryScreen(ClusterBound, ScreenOffers, Screen):
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="history.back"),
        *window_keys("history"),
        Binding("r", "reload", "Reload", id="history.reload"),
    ]
    DEFAULT_CSS = """
    HistoryScreen #history-title { background: $panel; text-style: bold; height: 1; }
    HistoryScreen #history-status { height: auto; max-height: 3; color: $text-muted; }
    HistoryScreen VTable { height: 1fr; }
    """
    crumb = "history"

    def __init__(self, window: str = "1d", *, services: ClusterServices) -> None:
        """``services``: the cluster whose accounting it asks (cockpit/tui/services.py)."""
        super().__init__()
        self.bind_services(services)
        self.window = window
        self.table = VTable(COLUMNS, cap=40, id="history-table")
        self.loaded: tuple[JobRecord, ...] = ()

    def targets(self) -> tuple[str, tuple[str, ...]]:
        key = self.table.cursor_key()
        return ("job", (str(key),)) if key is not None else ("", ())

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", id="history-title")
        yield Static("", id="history-status")
        yield self.table
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.table.focus()
        self.load()

    def action_window(self, window: str) -> None:
        self.window = window
        self.load()

    def action_window_step(self, step: int) -> None:
        self.action_window(stepped(WINDOWS, self.window, step))

    def action_reload(self) -> None:
        self.load()

    def _status(self, text: str, style: str = "") -> None:
        self.query_one("#history-status", Static).update(Text(text, style=style))

    @work(exclusive=True, group="history")
    async def load(self) -> None:
        from cockpit.core.accounting import history, job_query, parse_since, require_accounting

        now = host_of(self).clock()
        self.query_one("#history-title", Static).update(Text(f" finished jobs, last {self.window} ([ ]: hour/day/week)"))
        self._status(f"asking accounting for the jobs that ended in the last {self.window} …")
        try:
            acct = await require_accounting(self.services.backend)
            query = replace(job_query(parse_since(self.window, now)), source="parsable")  # see JobQuery.source
            found = await history(acct, query, now)
            data = await asyncio.to_thread(rows_table, found.jobs)
        except CockpitError as exc:
            self._status(clean(str(exc), 300), "bold")
            return
        self.loaded = found.jobs
        self.table.set_data(data)
        cost = "; ".join(c.describe() for c in found.costs)
        failed = sum(1 for j in found.jobs if j.state in FAILED_STATES)
        self._status(f"{len(found.jobs)} job(s), {failed} failed, from {found.source}. query: {clean(cost, 400)}")

    def on_vtable_row_activated(self, event: VTable.RowActivated) -> None:
        event.stop()
        self.app.push_screen(FinishedJobScreen(str(event.key), services=self.services))


def job_text(job: JobRecord, eff: Any) -> Text:
    from cockpit.core.accounting import failure_text

    def when(t):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"

    t = Text()
    why = failure_text(job)
    t.append(f"{job.state}", style="bold red" if job.state in FAILED_STATES else "bold")
    t.append(f"{', ' + clean(why, 200) if why else ''}\n")
    for label, value in (("user / account", f"{job.user} / {job.account}"), ("partition / QOS", f"{job.partition} / {job.qos}"),
                         ("submitted", when(job.submit_time)), ("started", when(job.start_time)),
                         ("ended", when(job.end_time)), ("elapsed", duration(job.elapsed_s) or "0s"),
                         ("time limit", "none" if job.time_limit is None else f"{job.time_limit} min"),
                         ("exit code", "-" if job.exit_code is None else f"{job.exit_code}"
                          + (f" (signal {job.exit_signal})" if job.exit_signal else "")),
                         ("nodes", f"{collapse(job.nodes) or '-'} ({job.node_count})"),
                         ("CPUs / GPUs", f"{job.cpus} / {job.gpus}")):
        t.append(f"{label:>16}  ", style="bold")
        t.append(clean(value, 200) + "\n")
    t.append("\nEfficiency\n", style="bold underline")
    if eff is None:
        t.append("  once the job has finished\n", style="dim")
        return t
    for m in eff.measures:
        value = "not measured" if m.percent is None else f"{m.percent:g}%"
        t.append(f"{m.name:>16}  ", style="bold")
        t.append(value + (f" ({clean(m.used, 100)})" if m.used else "") + "\n")
        t.append(f"{'':>16}  {clean(m.source, 300)}\n", style="dim")
    if job.steps:
        t.append("\nSteps\n", style="bold underline")
        for s in job.steps:
            cpu = "" if s.total_cpu_s is None else f", CPU {s.total_cpu_s:.1f} s"
            t.append(f"  {clean(s.step_id, 20)} {clean(s.name, 30)}: {s.state}, exit {s.exit_code}, "
                     f"{duration(s.elapsed_s) or '0s'}{cpu}\n")
    return t


class FinishedJobScreen(ClusterBound, ScreenOffers, Screen):
    """One job as accounting recorded it, with its CPU, memory and GPU efficiency."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="finished.back")]
    DEFAULT_CSS = "FinishedJobScreen #finished-title { background: $panel; text-style: bold; height: 1; }"

    def __init__(self, job_id: str, *, services: ClusterServices) -> None:
        super().__init__()
        self.bind_services(services)
        self.job_id = job_id

    @property
    def crumb(self) -> str:
        return f"{self.job_id} (accounting)"

    def targets(self) -> tuple[str, tuple[str, ...]]:
        return "job", (self.job_id,)

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static(Text(f" job {self.job_id}: its accounting record"), id="finished-title")
        with VerticalScroll():
            yield Static(Text("asking accounting …", style="dim"), id="finished-body")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.load()

    @work(exclusive=True, group="finished-job")
    async def load(self) -> None:
        from cockpit.core.accounting import require_accounting
        from cockpit.core.efficiency import efficiency
        from cockpit.models.accounting import FINISHED_STATES

        body = self.query_one("#finished-body", Static)
        try:
            acct = await require_accounting(self.services.backend)
            found = await acct.job(self.job_id)
        except CockpitError as exc:
            body.update(Text(clean(str(exc), 300), style="bold"))
            return
        job = next((j for j in found.items if j.job_id == self.job_id or str(j.job_id_raw) == self.job_id), None)
        if job is None:
            body.update(Text(f"accounting has no record of job {clean(self.job_id, 30)}", style="bold"))
            return
        self.query_one("#finished-title", Static).update(Text(f" job {job.job_id} {clean(job.name, 60)}: {job.state}"))
        eff = None
        if job.state in FINISHED_STATES:  # with Prometheus, the GPU figure is the run's DCGM utilisation
            from cockpit.telemetry.promsource import finished_job_history

            eff = efficiency(job, *await finished_job_history(self.services.config, job))
        body.update(job_text(job, eff))
