"""A job's processes per node (key ``P`` on a job, in its detail or the jobs view).

The list comes from :func:`cockpit.core.jobprocs.job_processes` (``scontrol
listpids`` on each node over SSH, ps state, GPU index) through a loader:
``app.job_procs_loader`` when the app has one (tests, other transports), else
SSH with the config's node settings. The screen never talks to SSH itself;
``r`` asks again. Process command lines are cluster data: shown as Text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from cockpit.core.text import clean
from cockpit.errors import CockpitError

Loader = Callable[[Any], Awaitable[tuple[dict[str, list], dict[str, str]]]]
STATE_STYLE = {"D": "bold yellow", "Z": "bold red", "T": "yellow", "R": "green"}


def node_access(app: Any) -> dict[str, Any]:
    """How the TUI reaches compute nodes: keyword arguments for open_job_output."""
    from cockpit.config import Config
    from cockpit.remote.settings import node_settings

    cfg = getattr(app, "config", None) or Config()
    # demo, replay and test backends have no nodes to reach: their files are read here or not at all
    real = getattr(getattr(app, "backend", None), "runner", None) is not None
    return {"remote_session": real and bool(cfg.general.host), "settings": node_settings(cfg),
            "where": "auto" if real else "local"}


async def ssh_loader(app: Any, job: Any) -> tuple[dict[str, list], dict[str, str]]:
    """The job's processes over SSH, one pool for this one listing."""
    from cockpit.core.jobprocs import job_processes
    from cockpit.remote.pool import SshPool

    from cockpit.config import Config
    from cockpit.remote.settings import node_settings

    pool = SshPool(node_settings(getattr(app, "config", None) or Config()))
    try:
        return await job_processes(pool, job.job_id, job.nodes)
    finally:
        await pool.close()


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

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back"), Binding("r", "reload", "Reload")]
    DEFAULT_CSS = "JobProcsScreen #procs-title { background: $panel; text-style: bold; height: 1; }"

    def __init__(self, job: Any, loader: Loader) -> None:
        super().__init__()
        self.job, self.loader = job, loader
        self.procs: dict[str, list] = {}
        self.errors: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="procs-title")
        with VerticalScroll():
            yield Static("", id="procs")
        yield Footer()

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


def _job_in_view(app: Any) -> Any:
    from cockpit.tui.screens.actions import current_targets

    kind, targets = current_targets(app)
    snap = app.snapshot
    if kind != "job" or not targets or snap is None:
        return None
    return next((j for j in snap.jobs if str(j.job_id) == targets[0]), None)


def open_procs(app: Any) -> None:
    """Push the process list for the job in view (detail screen or cursor row)."""
    job = _job_in_view(app)
    if job is None:
        app.notify("select a job to list its processes", severity="warning")
        return
    if not job.nodes:
        app.notify(f"job {job.display_id} runs on no node yet: no processes", severity="warning")
        return
    loader = getattr(app, "job_procs_loader", None)
    if loader is None:
        if getattr(app.backend, "runner", None) is None:
            app.notify(f"{getattr(app.backend, 'name', 'this backend')} has no nodes to ask for processes", severity="warning")
            return
        loader = lambda j: ssh_loader(app, j)  # noqa: E731
    app.push_screen(JobProcsScreen(job, loader))


def install(app: Any) -> None:
    """Key ``P`` and a palette entry (called from the actions extension's install)."""
    app.action_cockpit_procs = lambda: open_procs(app)
    app.bind("P", "cockpit_procs", description="Procs", show=False)
    app.add_command("Job: processes", "List the selected job's processes on its nodes (P)", lambda: open_procs(app))
