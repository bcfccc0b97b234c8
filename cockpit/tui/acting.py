"""The operator's actions in the TUI, owned by the App (keys ``a``, ``f``, ``P``).

``a``: menu -> parameters -> confirmation with the exact argv and what each
target is -> execute -> per-target results, for the marked rows (else the cursor
row; on a detail screen, that job or node). Everything runs through the App's
gate (cockpit.core.actions), so read-only mode, the audit log and the per-target
results are the same as headless. Rows that were marked for an action are
unmarked once it is done; the ones it failed on stay marked.

``f`` follows a job's output and ``P`` lists its processes, both through the
backend's probe runner: SSH on a real cluster, the simulated nodes in the demo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from cockpit.core.actions import ACTIONS, Outcome, Params, Plan, build_plan
from cockpit.core.joblog import JobOutput, open_job_output, resolve_path
from cockpit.errors import CockpitError
from cockpit.models import ClusterSnapshot, Job
from cockpit.plugins.specs import ScreenOffers
from cockpit.text import clean
from cockpit.tui.rows import duration
from cockpit.tui.screens.actions import ActionMenu, ActionResults, ConfirmAction, ParamsForm
from cockpit.tui.selection import current_targets, job_in_view
from cockpit.tui.services import services_for

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp

DETAIL_LINES = 12  # targets described in the confirmation; the rest are counted


def plan_details(app: CockpitApp, plan: Plan, snap: ClusterSnapshot | None) -> list[Text]:
    """What each target of ``plan`` is in ``snap`` (its cluster's), for the confirmation: a
    job's user, name, GPUs and time; a node's state and the jobs still running on it."""
    if snap is None or plan.spec.kind not in ("job", "node"):
        return []
    now = app.clock()
    lines: list[Text] = []
    if plan.spec.kind == "job":
        jobs = {str(j.job_id): j for j in snap.jobs if str(j.job_id) in set(plan.targets)}
        for t in plan.targets[:DETAIL_LINES]:
            j = jobs.get(t)
            if j is None:
                lines.append(Text(f"{t}  (not in the last snapshot)"))
                continue
            ran = f", running {duration(now - j.start_time)}" if j.state == "RUNNING" and j.start_time else ""
            lines.append(Text(f"{j.display_id}  {clean(j.user, 16)}  {clean(j.name, 40)}  {j.gpu_count} GPU(s)  "
                              f"{j.state.lower()}{ran}"))
    else:
        wanted = set(plan.targets)
        on: dict[str, list[Job]] = {}
        for j in snap.jobs:
            if j.state == "RUNNING":
                for n in j.nodes:
                    if n in wanted:
                        on.setdefault(n, []).append(j)
        nodes = {n.name: n for n in snap.nodes if n.name in wanted}
        keeps = plan.spec.name in ("drain", "reboot")
        for t in plan.targets[:DETAIL_LINES]:
            node, running = nodes.get(t), on.get(t, [])
            line = Text(f"{t}  {node.display_state if node else '?'}")
            if running:
                verb = "keep running (a drain lets them finish)" if keeps else "are running"
                line.append(f"  {len(running)} job(s) {verb}: ", style="bold" if keeps else "")
                line.append(", ".join(f"{j.display_id} {clean(j.user, 12)} {clean(j.name, 24)}" for j in running[:3]))
                if len(running) > 3:
                    line.append(f" and {len(running) - 3} more")
            else:
                line.append("  no running jobs")
            lines.append(line)
    if len(plan.targets) > DETAIL_LINES:
        lines.append(Text(f"… and {len(plan.targets) - DETAIL_LINES} more"))
    return lines


def confirm_dialog(app: CockpitApp, plan: Plan, where: str | None = None, services: Any = None) -> ConfirmAction:
    """THE confirmation of every state change, whatever asked (``a``, the audit viewer's
    follow-up, a runbook step, a plugin): the exact argv, what each target is in the
    cluster acted on (``services``, else the screen in front's: a job's user, name and
    GPUs; the jobs a drain leaves running) and, when a screen in front acts for a step of
    its own (a runbook), which step it is (its ScreenOffers' ``confirm_origin()``)."""
    services = services or services_for(app)
    screen = app.screen
    origin = screen.confirm_origin() if isinstance(screen, ScreenOffers) else ""
    return ConfirmAction(plan, services.gate_description if where is None else where,
                         plan_details(app, plan, services.snapshot), origin=str(origin))


class ActionFlows:
    """What ``a``, ``f`` and ``P`` do, and the palette's action entries."""

    def __init__(self, app: CockpitApp) -> None:
        self.app = app

    # ------------------------------------------------------------ a: act
    def open_menu(self) -> None:
        kind, targets = current_targets(self.app)
        if not targets:
            self.app.notify("select a job or node first (space marks several)", severity="warning")
            return
        self.start(kind, targets)

    def run_named(self, name: str) -> None:
        """One catalogued action (a palette entry) for the selection."""
        spec = ACTIONS[name]
        kind, targets = current_targets(self.app)
        if kind != spec.kind or not targets:
            self.app.notify(f"select {spec.kind}s first for: {spec.title}", severity="warning")
            return
        self.start(kind, targets, name)

    def start(self, kind: str, targets: tuple[str, ...], name: str | None = None,
              params: dict[str, Any] | None = None, *, services: Any = None) -> None:
        """``services``: the cluster acted on; else the screen in front's (a detail opened
        for cluster A acts on A's job even while B is in the main views)."""
        table = self.app.main.active_table() if self.app.screen is self.app.main else None
        marked = table if table is not None and table.marked_keys() else None
        services = services or services_for(self.app)
        self.app.run_worker(self.flow(kind, targets, name, params, marked=marked, services=services),
                            name="action", group="action", exclusive=True)

    async def flow(self, kind: str, targets: tuple[str, ...], name: str | None = None,
                   params: dict[str, Any] | None = None, *, marked: Any = None, services: Any = None) -> Outcome | None:
        """Menu -> parameters -> confirmation -> execute -> results. Runs in a worker.
        ``marked``: the table whose marked rows are the targets (unmarked once done);
        ``services``: the cluster whose gate acts (the screen in front's unless given)."""
        app = self.app
        services = services or services_for(app)
        try:
            gate = services.gate()
        except CockpitError as exc:  # an unusable audit log path
            app.notify(str(exc), severity="error", timeout=10)
            return None
        if gate.executor is None:
            app.notify(f"{services.backend_name}: {gate.cannot_act}", severity="error")
            return None
        name = name or await app.push_screen_wait(ActionMenu(kind, targets))
        if not name:
            return None
        spec = ACTIONS[name]
        if params is None:
            params = {}
            if spec.needs_reason or name in ("signal", "timelimit", "nice"):
                params = await app.push_screen_wait(ParamsForm(name))
                if params is None:
                    return None
        try:
            plan = build_plan(name, targets, Params(**params))
            gate.refuse_if_read_only(name, plan.targets)
        except CockpitError as exc:
            app.notify(str(exc), severity="error", timeout=8)
            return None
        if not await app.push_screen_wait(confirm_dialog(app, plan, gate.description, services)):
            return None
        try:
            outcome = await gate.execute(plan, confirmed=True)  # the dialog above asked
        except CockpitError as exc:
            app.notify(str(exc), severity="error", timeout=8)
            return None
        app.action_refresh_now()
        note = self._unmark(marked, outcome)
        await app.push_screen_wait(ActionResults(outcome, note))
        return outcome

    @staticmethod
    def _unmark(table: Any, outcome: Outcome) -> str:
        """Unmark the targets the action was done on; say which stay marked."""
        if table is None:
            return ""
        done = {r.target for r in outcome.results if r.ok}
        table.unmark([k for k in table.marked_keys() if str(k).split(":", 1)[0] in done])
        left = len(table.marked_keys())
        return f"{left} row(s) it was not done on stay marked (u unmarks all)" if left else "marks cleared"

    # ------------------------------------------------------------ f: follow output
    def follow_output(self) -> None:
        from cockpit.tui.screens.joblog import JobLogScreen

        job = job_in_view(self.app)
        if job is None:
            self.app.notify("select a job to follow its output", severity="warning")
            return
        services = services_for(self.app)  # the job's cluster: a detail's own, else the one in front
        via = "from the simulated node" if services.simulated else "over SSH"
        self.app.push_screen(JobLogScreen(job, lambda job, stderr: self.job_output(job, stderr, services), via=via))

    async def job_output(self, job: Job, stderr: bool, services: Any = None) -> JobOutput:
        """The job's stdout/stderr: here, or on its batch host through the probe runner.

        The path is resolved first (Slurm's default where squeue names none; a
        "/dev/null" checked with scontrol). A simulated cluster's files are never
        looked for on this machine; a backend without probes (a replay, a test)
        reads here only. ``services``: the job's cluster (the one in front unless given).
        Raises JobLogError."""
        services = services or self.app.services
        path = None if job.state == "PENDING" else await resolve_path(job, services.backend, stderr=stderr)
        probes = services.probes
        if probes is None or not probes.available:
            return open_job_output(job, stderr=stderr, where="local", path=path)
        where = "node" if services.simulated else "auto"
        return open_job_output(job, stderr=stderr, where=where, remote_session=bool(services.config.general.host),
                               pool=probes, path=path)

    # ------------------------------------------------------------ P: processes
    def job_processes(self) -> None:
        from cockpit.tui.screens.jobprocs import JobProcsScreen

        job = job_in_view(self.app)
        if job is None:
            self.app.notify("select a job to list its processes", severity="warning")
            return
        if not job.nodes:
            self.app.notify(f"job {job.display_id} runs on no node yet: no processes", severity="warning")
            return
        services = services_for(self.app)  # the job's cluster: a detail's own, else the one in front
        probes = services.probes
        if probes is None or not probes.available:
            why = probes.why_not if probes is not None else f"{services.backend_name} has no nodes to ask"
            self.app.notify(f"no processes to list: {why}", severity="warning")
            return
        hint = services.facts.hints_for(job.job_id)  # what a runbook found: the straggler, highlighted
        straggler = (str(hint.get("straggler_node", "")), str(hint.get("straggler_rank", "")))

        async def processes(job: Job) -> tuple[dict[str, list], dict[str, str]]:
            """({node: processes}, {node: error}) through its cluster's probe runner."""
            from cockpit.core.jobprocs import job_processes

            return await job_processes(probes, job.job_id, job.nodes)

        self.app.push_screen(JobProcsScreen(job, processes, straggler))
