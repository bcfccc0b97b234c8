"""A job's processes per node (key ``P`` on a job, in its detail or the jobs view).

The list comes from :func:`cockpit.core.jobprocs.job_processes` (``scontrol
listpids`` on each node, ps state, GPU index) through the loader the screen is
given: the App's, which asks the backend's probe runner (SSH on a real cluster,
the simulated nodes in the demo). The screen never talks to a node itself; ``r``
asks again. Process command lines are cluster data: shown as Text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from cockpit.errors import CockpitError
from cockpit.models import Job
from cockpit.text import clean
from cockpit.tui.widgets.crumbs import Breadcrumb

Loader = Callable[[Job], Awaitable[tuple[dict[str, list], dict[str, str]]]]
STATE_STYLE = {"D": "bold yellow", "Z": "bold red", "T": "yellow", "R": "green"}


def procs_table(procs: dict[str, list], errors: dict[str, str]) -> Table:
    """Rows per process; a node without processes or with an error gets one line."""
    from cockpit.tui.rows import duration

    t = Table(expand=True, box=None, header_style="bold")
    for col in ("node", "pid", "step", "state", "elapsed", "GPU", "command"):
        t.add_column(col, no_wrap=col != "command", overflow="fold")
    for node in sorted(set(procs) | set(errors)):
        if node in errors:
            t.add_row(Text(clean(node, 30)), "", "", Text("error", style="bold red"), "", "", Text(clean(errors[node], 200)))
            continue
        if not procs[node]:
            t.add_row(Text(clean(node, 30)), "", "", "", "", "", Text("no processes of this job", style="dim"))
        for p in procs[node]:
            state = clean(p.state, 8)
            t.add_row(Text(clean(node, 30)), str(p.pid), Text(clean(p.step, 12)),
                      Text(state, style=STATE_STYLE.get(state[:1], "")), duration(p.elapsed_s),
                      "-" if p.gpu_index is None else str(p.gpu_index), Text(clean(p.command, 300)))
    return t


class JobProcsScreen(Screen):
    """Processes of one job on each of its nodes; ``r`` reloads, escape goes back."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="procs.back"),
                Binding("r", "reload", "Reload", id="procs.reload")]
    DEFAULT_CSS = "JobProcsScreen #procs-title { background: $panel; text-style: bold; height: 1; }"

    def __init__(self, job: Job, loader: Loader) -> None:
        super().__init__()
        self.job, self.loader = job, loader
        self.procs: dict[str, list] = {}
        self.errors: dict[str, str] = {}

    crumb = "processes"

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", id="procs-title")
        with VerticalScroll():
            yield Static("", id="procs")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        nodes = ",".join(self.job.nodes)
        self.query_one("#procs-title", Static).update(
            Text(f" job {self.job.display_id} processes on {clean(nodes, 80)} (asking the nodes…)"))
        self._load()

    @work(exclusive=True, group="jobprocs")
    async def _load(self) -> None:
        try:
            self.procs, self.errors = await self.loader(self.job)
        except CockpitError as exc:
            self.procs, self.errors = {}, {n: str(exc) for n in self.job.nodes}
        count = sum(len(p) for p in self.procs.values())
        failed = f", {len(self.errors)} node(s) failed" if self.errors else ""
        self.query_one("#procs-title", Static).update(
            Text(f" job {self.job.display_id}: {count} process(es) on {len(self.job.nodes)} node(s){failed}"))
        self.query_one("#procs", Static).update(procs_table(self.procs, self.errors))
