"""Why is this job pending? (``w`` on a pending job.)

At once, from the snapshot: Slurm's reason in plain language, what the job
asks for and how many GPUs of its partitions are free now. Then, where the
backend can ask Slurm more (the CLI backend: sprio, the limits and their usage,
reservations, the dependency, the largest free block), the explanation of
cockpit.core.whypending, read in a worker. Cluster strings are shown as Text.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from cockpit.errors import CockpitError
from cockpit.models import ClusterSnapshot, Job
from cockpit.plugins.specs import ScreenOffers
from cockpit.text import clean
from cockpit.tui.rows import limit_text
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.services import ClusterBound, ClusterServices, host_of

# Slurm's pending reasons (squeue(1) "JOB REASON CODES"), said plainly, with what unblocks them.
REASONS = {
    "Priority": "other jobs in its partition have a higher priority; it starts after them, or earlier "
                "if backfill finds it a gap that fits its time limit",
    "Resources": "it is next in line, but not enough of what it asks for (nodes, GPUs, memory) is free yet",
    "QOSMaxGRESPerUser": "its user already holds the most GPUs (GRES) the QOS allows per user; it starts when "
                         "one of the user's jobs ends",
    "QOSMaxGPUPerUser": "its user already holds the most GPUs the QOS allows per user; it starts when one of "
                        "the user's jobs ends",
    "QOSMaxJobsPerUserLimit": "its user already runs the most jobs the QOS allows",
    "QOSGrpGRES": "the QOS as a whole already holds its GPU limit",
    "AssocGrpGRES": "its account (association) already holds its GPU limit",
    "AssocMaxJobsLimit": "its account (association) already runs the most jobs it may",
    "AssocGrpGRESMinutes": "its account used up its GPU-minutes budget",
    "ReqNodeNotAvail": "a node it needs is not available (down, drained or reserved): the nodes named after "
                       "UnavailableNodes; it waits until they come back, or for others if it did not ask by name",
    "Dependency": "it waits for another job (its --dependency) to reach the state it asks for",
    "DependencyNeverSatisfied": "the job it depends on ended in a way that can never satisfy the dependency: "
                                "it will wait forever (cancel it, or change the dependency)",
    "BeginTime": "it was asked not to start before a time (--begin)",
    "JobHeldUser": "its user held it (scontrol hold): it starts only once released",
    "JobHeldAdmin": "an operator held it: it starts only once released (scontrol release)",
    "ReservationDeleted": "it asked for a reservation that was deleted: it can never start as it is "
                          "(update its reservation or cancel it)",
    "Reservation": "it waits for its reservation to begin",
    "PartitionTimeLimit": "its time limit is longer than the partition allows: it will never start "
                          "(lower its time limit)",
    "PartitionNodeLimit": "it asks for more nodes than the partition allows per job",
    "PartitionDown": "its partition is down",
    "PartitionInactive": "its partition is inactive",
    "JobArrayTaskLimit": "the array's %N limit: at most N of its tasks run at once",
    "BadConstraints": "no node has the features it asks for (--constraint): it can never start as it is",
    "Licenses": "the licenses it asks for are in use",
    "NodeDown": "a node it needs is down",
    "launch failed requeued held": "its launch failed, so Slurm requeued and held it: release it once fixed",
    "None": "the scheduler has not looked at it yet (it was just submitted)",
}


def explain(reason: str) -> str:
    """Slurm's pending reason in plain words ('' for one cockpit does not know)."""
    head = reason.split(",", 1)[0].strip()
    return REASONS.get(head) or REASONS.get(reason.strip(), "")


def free_gpus(job: Job, snap: ClusterSnapshot) -> tuple[int, int]:
    """(free GPUs, nodes with at least the job's GPUs per node free) in its partitions now."""
    parts = set(job.partition.split(","))
    free, fit = 0, 0
    for node in snap.nodes:
        if node.is_unavailable or not parts & set(node.partitions):
            continue
        idle = node.gpu_total - node.gpu_alloc
        free += idle
        fit += idle >= max(job.gpus_per_node, 1)
    return free, fit


def glance(job: Job, snap: ClusterSnapshot | None) -> Text:
    reason = job.reason or "None"
    t = Text()
    t.append("Slurm's reason: ", style="bold")
    t.append(clean(reason, 200) + "\n")
    words = explain(reason)
    t.append("  " + (words or "a reason cockpit has no words for: see squeue(1), JOB REASON CODES") + "\n",
             style="" if words else "dim")
    t.append("It asks for: ", style="bold")
    gpn = job.gpus_per_node
    t.append(f"{max(job.node_count, 1)} node(s)" + (f" x {gpn} GPU(s) ({clean(job.gpu_type or 'any type', 20)})"
                                                     if gpn else ", no GPUs")
             + f", partition {clean(job.partition, 40)}, time limit {limit_text(job.time_limit)}\n")
    if snap is not None and gpn:
        free, fit = free_gpus(job, snap)
        t.append("Free now in its partitions: ", style="bold")
        t.append(f"{free} GPU(s); {fit} node(s) have {gpn} free, it needs {max(job.node_count, 1)}\n")
    return t


class WhyPendingScreen(ClusterBound, ScreenOffers, Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="whypending.back")]
    DEFAULT_CSS = "WhyPendingScreen #wp-title { background: $panel; text-style: bold; height: 1; }"
    crumb = "why pending"

    def __init__(self, job: Job, *, services: ClusterServices) -> None:
        """``services``: the job's cluster (cockpit/tui/services.py)."""
        super().__init__()
        self.bind_services(services)
        self.job = job

    def targets(self) -> tuple[str, tuple[str, ...]]:
        return "job", (str(self.job.job_id),)

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static(Text(f" job {self.job.display_id} {clean(self.job.name, 60)} ({clean(self.job.user, 20)}): "
                          "why is it pending?"), id="wp-title")
        with VerticalScroll():
            yield Static(glance(self.job, self.services.snapshot), id="wp-glance")
            yield Static(Text("asking Slurm for the details (priority, limits, reservations)…", style="dim"),
                         id="wp-detail")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self._details()

    @work(exclusive=True, group="whypending")
    async def _details(self) -> None:
        from cockpit.core.whypending import why_pending

        out = self.query_one("#wp-detail", Static)
        try:
            ident = self.job.display_id if "[" not in self.job.display_id else str(self.job.job_id)  # 123_[4-9]
            w = await why_pending(self.services.backend, ident, host_of(self).clock())
        except CockpitError as exc:
            out.update(Text(f"No more detail: {clean(exc, 300)}", style="dim"))
            return
        out.update(detail_text(w))


def detail_text(w: Any) -> Text:
    t = Text()
    t.append("Slurm, asked in detail: ", style="bold")
    t.append(clean(w.summary, 300) + "\n")
    t.append(f"  asks: {clean(w.asks, 300)}\n")
    if w.ahead is not None:
        t.append(f"  {w.ahead} pending job(s) of higher priority in its partition\n")
    for f in (*w.limits, *w.reservations, *w.dependencies):
        t.append(f"  {clean(f.text, 300)}\n", style="bold" if getattr(f, "blocks", False) else "")
    for b in w.free_blocks[:5]:
        t.append(f"  {b.kind} {clean(b.name, 40)}: {b.free_gpus} GPU(s) free, {b.nodes_that_fit} node(s) fit\n")
    for note in w.notes:
        t.append(f"  ({clean(note, 300)})\n", style="dim")
    return t
