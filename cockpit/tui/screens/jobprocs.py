"""A job's processes per node (key ``P`` on a job, in its detail or the jobs view).

The list comes from :func:`cockpit.core.jobprocs.job_processes` (``scontrol
listpids`` on each node, ps state, GPU index, the task's rank) through the
loader the screen is given: the App's, which asks the backend's probe runner
(SSH on a real cluster, the simulated nodes in the demo). The screen never talks
to a node itself; ``r`` asks again.

One line per process in a table whose header stays put (a 74-process job at
80x24 wrapped each process to ~13 lines and scrolled the header away), ``/``
filters the lines, and the straggler rank a runbook named is highlighted, with
the cursor on it. Process command lines are cluster data: shown as Text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from cockpit.errors import CockpitError
from cockpit.models import Job
from cockpit.text import clean
from cockpit.tui.widgets.crumbs import Breadcrumb

Loader = Callable[[Job], Awaitable[tuple[dict[str, list], dict[str, str]]]]
STATE_STYLE = {"D": "bold yellow", "Z": "bold red", "T": "yellow", "R": "green"}
COLUMNS = ("node", "pid", "step", "rank", "state", "elapsed", "GPU", "command")
STRAGGLER = "bold white on red"
NARROWEST_COMMAND = 20  # the command column keeps this many cells however narrow the terminal


def proc_rows(procs: dict[str, list], errors: dict[str, str], straggler: tuple[str, str] = ("", "")
              ) -> list[tuple[str, list[str], bool]]:
    """(row key, cells as plain text, is the straggler) per process; a node without
    processes or with an error gets one row."""
    from cockpit.tui.rows import duration

    node_s, rank_s = straggler
    out = []
    for node in sorted(set(procs) | set(errors)):
        if node in errors:
            out.append((f"{node}:error", [clean(node, 30), "", "", "", "error", "", "", clean(errors[node], 200)], False))
            continue
        if not procs[node]:
            out.append((f"{node}:none", [clean(node, 30), "", "", "", "", "", "", "no processes of this job"], False))
        for p in procs[node]:
            rank = clean(getattr(p, "rank", ""), 8)
            hit = bool(rank_s) and node == node_s and rank_s in (rank, str(p.pid))
            out.append((f"{node}:{p.pid}", [clean(node, 30), str(p.pid), clean(p.step, 12), rank, clean(p.state, 8),
                                            duration(p.elapsed_s), "-" if p.gpu_index is None else str(p.gpu_index),
                                            clean(p.command, 300)], hit))
    return out


class JobProcsScreen(Screen):
    """Processes of one job on each of its nodes; ``/`` filters, ``r`` reloads, escape goes back."""

    BINDINGS = [Binding("escape,q", "back", "Back", id="procs.back"),
                Binding("r", "reload", "Reload", id="procs.reload"),
                Binding("slash", "filter", "Filter", id="procs.filter")]
    DEFAULT_CSS = """
    JobProcsScreen #procs-title { background: $panel; text-style: bold; height: 1; }
    JobProcsScreen DataTable { height: 1fr; }
    JobProcsScreen #procs-filter { height: 1; border: none; padding: 0 1; display: none; background: $boost; }
    JobProcsScreen #procs-filter.-open { display: block; }
    """

    def __init__(self, job: Job, loader: Loader, straggler: tuple[str, str] = ("", "")) -> None:
        """``straggler``: (node, rank) a runbook named for this job, highlighted."""
        super().__init__()
        self.job, self.loader, self.straggler = job, loader, straggler
        self.procs: dict[str, list] = {}
        self.errors: dict[str, str] = {}
        self.query_text = ""

    crumb = "processes"

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", id="procs-title")
        yield DataTable(id="procs", cursor_type="row", zebra_stripes=False)
        yield Input(placeholder="filter: node, pid, rank, state or command words (enter keeps it, esc clears)",
                    id="procs-filter")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*COLUMNS)
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
        self.fill()

    def rows(self) -> list[tuple[str, list[str], bool]]:
        """The rows shown: those whose cells hold every word of the filter."""
        words = self.query_text.lower().split()
        return [r for r in proc_rows(self.procs, self.errors, self.straggler)
                if all(any(w in cell.lower() for cell in r[1]) for w in words)]

    def fill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        width = max(NARROWEST_COMMAND, (self.size.width or 80) - 60)  # the other columns take ~60 cells
        hit_row = None
        for i, (key, cells, hit) in enumerate(rows := self.rows()):
            style, cmd = STRAGGLER if hit else "", cells[-1]
            cmd = cmd[:width - 1] + "…" if len(cmd) > width else cmd  # one line: the cut says so
            shown = [Text(c, style=style) for c in cells[:-1]] + [Text(cmd, style=style)]
            shown[4].stylize(STATE_STYLE.get(cells[4][:1], "") if not hit else "")
            table.add_row(*shown, key=key)
            hit_row = i if hit and hit_row is None else hit_row
        if hit_row is not None:
            table.move_cursor(row=hit_row)
        count = sum(len(p) for p in self.procs.values())
        failed = f", {len(self.errors)} node(s) failed" if self.errors else ""
        shown_n = f", {len(rows)} shown (/{self.query_text})" if self.query_text else ""
        node, rank = self.straggler
        # the straggler first: at 80 columns the end of the line is cut
        strag = f" straggler rank {clean(rank, 12)} on {clean(node, 30)} highlighted;" if hit_row is not None else ""
        self.query_one("#procs-title", Static).update(
            Text(f" job {self.job.display_id}:{strag} {count} process(es) on {len(self.job.nodes)} node(s){failed}"
                 f"{shown_n}", no_wrap=True, overflow="ellipsis"))

    def action_filter(self) -> None:
        line = self.query_one("#procs-filter", Input)
        line.add_class("-open")
        line.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value.strip()
        self.fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("-open")
        self.query_one(DataTable).focus()

    def action_back(self) -> None:
        line = self.query_one("#procs-filter", Input)
        if line.has_class("-open") or self.query_text:
            line.value, self.query_text = "", ""
            line.remove_class("-open")
            self.query_one(DataTable).focus()
            self.fill()
            return
        self.app.pop_screen()
