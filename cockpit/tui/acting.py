"""The operator's actions in the TUI, owned by the App (keys ``a``, ``f``, ``P``).

``a``: menu -> parameters -> confirmation with the exact argv -> execute ->
per-target results, for the marked rows (else the cursor row; on a detail
screen, that job or node). Everything runs through the App's gate
(cockpit.core.actions), so read-only mode, the audit log and the per-target
results are the same as headless.

``f`` follows a job's output and ``P`` lists its processes, both through the
backend's probe runner: SSH on a real cluster, the simulated nodes in the demo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cockpit.core.actions import ACTIONS, Outcome, Params, build_plan
from cockpit.core.joblog import JobOutput, open_job_output
from cockpit.errors import CockpitError
from cockpit.models import Job
from cockpit.tui.screens.actions import ActionMenu, ActionResults, ConfirmAction, ParamsForm
from cockpit.tui.selection import current_targets, job_in_view

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


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

    def start(self, kind: str, targets: tuple[str, ...], name: str | None = None) -> None:
        self.app.run_worker(self.flow(kind, targets, name), name="action", group="action", exclusive=True)

    async def flow(self, kind: str, targets: tuple[str, ...], name: str | None = None,
                   params: dict[str, Any] | None = None) -> Outcome | None:
        """Menu -> parameters -> confirmation -> execute -> results. Runs in a worker."""
        app = self.app
        try:
            gate = app.gate()
        except CockpitError as exc:  # an unusable audit log path
            app.notify(str(exc), severity="error", timeout=10)
            return None
        if gate.executor is None:
            app.notify(f"{app.backend_name}: {gate.cannot_act}", severity="error")
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
        if not await app.push_screen_wait(ConfirmAction(plan, gate.description)):
            return None
        try:
            outcome = await gate.execute(plan, confirmed=True)  # the dialog above asked
        except CockpitError as exc:
            app.notify(str(exc), severity="error", timeout=8)
            return None
        app.action_refresh_now()
        await app.push_screen_wait(ActionResults(outcome))
        return outcome

    # ------------------------------------------------------------ f: follow output
    def follow_output(self) -> None:
        from cockpit.tui.screens.joblog import JobLogScreen

        job = job_in_view(self.app)
        if job is None:
            self.app.notify("select a job to follow its output", severity="warning")
            return
        via = "from the simulated node" if self.app.simulated else "over SSH"
        self.app.push_screen(JobLogScreen(job, self.job_output, via=via))

    def job_output(self, job: Job, stderr: bool) -> JobOutput:
        """The job's stdout/stderr: here, or on its batch host through the probe runner.

        A simulated cluster's files are never looked for on this machine; a backend
        without probes (a replay, a test) reads here only. Raises JobLogError."""
        probes = self.app.probes
        if probes is None or not probes.available:
            return open_job_output(job, stderr=stderr, where="local")
        where = "node" if self.app.simulated else "auto"
        return open_job_output(job, stderr=stderr, where=where, remote_session=bool(self.app.config.general.host),
                               pool=probes)

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
        probes = self.app.probes
        if probes is None or not probes.available:
            why = probes.why_not if probes is not None else f"{self.app.backend_name} has no nodes to ask"
            self.app.notify(f"no processes to list: {why}", severity="warning")
            return
        self.app.push_screen(JobProcsScreen(job, self.processes))

    async def processes(self, job: Job) -> tuple[dict[str, list], dict[str, str]]:
        """({node: processes}, {node: error}) through the probe runner."""
        from cockpit.core.jobprocs import job_processes

        return await job_processes(self.app.probes, job.job_id, job.nodes)
