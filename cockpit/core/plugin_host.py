"""The capabilities of a plugin's CheckContext, built on the session's backend and gate.

Every capability comes from the backend in use: the CLI backend reads Slurm
through its Runner and probes nodes over SSH/srun; the demo answers from its
simulated cluster; a replay has nodes to read but none to ask. Nothing falls
back to a command on the local machine. The plugin sees only the typed
capabilities of :mod:`cockpit.plugins.api`; none of them hands out a Runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cockpit.core.actions import Actions, Outcome, Plan, build_custom_plan, build_plan, build_submit_plan
from cockpit.core.joblog import resolve_path
from cockpit.errors import BackendError, CockpitError, CommandFailed
from cockpit.models import Job, Node, Partition, Topology


class BackendCluster:
    """ClusterReader over a Backend."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._caps = backend.capabilities()
        self.description = backend.description

    async def nodes(self) -> tuple[Node, ...]:
        return await self._backend.fetch_nodes()

    async def jobs(self) -> tuple[Job, ...]:
        return await self._backend.fetch_jobs()

    async def job(self, job_id: int | str) -> Job | None:
        if self._caps.lookup is not None:
            return await self._caps.lookup.fetch_job(job_id)
        want = str(job_id)
        return next((j for j in await self._backend.fetch_jobs()
                     if str(j.job_id) == want or j.display_id == want), None)

    async def job_excluded_nodes(self, job_id: int | str) -> str:
        read = self._caps.inspection
        return await read.job_excluded_nodes(job_id) if read is not None else ""

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        read = self._caps.inspection
        if read is not None:
            return await read.job_state(job_id)
        job = await self.job(job_id)
        return ("GONE", "") if job is None else (job.state, job.reason)

    async def job_output(self, job: Job, *, stderr: bool = False) -> str:
        """The job's stdout (stderr) path as Slurm resolves it (scontrol for squeue's
        "/dev/null"). Raises JobLogError for a job that writes nowhere readable."""
        return await resolve_path(job, self._backend, stderr=stderr)

    async def partitions(self) -> tuple[Partition, ...]:
        return await self._backend.fetch_partitions()

    async def scheduler_stats(self, metrics_url: str | None = None):
        """sdiag through the backend's runner, or Slurm 25.11+'s /metrics/scheduler at ``metrics_url``."""
        if metrics_url:
            from cockpit.backends.slurm_metrics import fetch_scheduler_metrics

            return await fetch_scheduler_metrics(metrics_url)
        read = self._caps.scheduler_stats  # pyslurm: its CLI twin's sdiag, as `cockpit record` does
        if read is None:
            raise BackendError(f"the {self._backend.name} backend cannot read slurmctld's statistics")
        return await read.fetch_sched_stats()

    async def topology(self) -> Topology:
        return await self._backend.fetch_topology()


class PluginGate:
    """The gate as a plugin sees it: plan, then execute with confirmation.

    It holds the session's :class:`Actions` but offers no way past the
    confirmation: a plugin cannot say "already confirmed"."""

    def __init__(self, actions: Actions) -> None:
        self._actions = actions

    @property
    def read_only(self) -> bool:
        return self._actions.read_only

    @property
    def audit_path(self) -> str | None:
        audit = self._actions.audit
        return str(audit.path) if audit is not None else None

    def plan(self, name: str, targets: Sequence[str], **params: Any) -> Plan:
        return self._actions.plan(name, targets, **params)

    def refuse_if_read_only(self, what: str, targets: Sequence[str] = ()) -> None:
        self._actions.refuse_if_read_only(what, targets)

    def custom_plan(self, name: str, title: str, target: str, steps: Sequence[Sequence[str]],
                    kind: str = "job") -> Plan:
        return build_custom_plan(name, title, target, steps, kind)

    async def execute(self, plan: Plan, *, dry_run: bool = False, note: str = "") -> Outcome:
        return await self._actions.execute(plan, dry_run=dry_run, note=note)


class GatedJobs:
    """SlurmJobs: submissions and cleanup cancels through the gate."""

    def __init__(self, actions: Actions, cluster: BackendCluster, probes: Any) -> None:
        self._actions = actions
        self._cluster = cluster
        self._probes = probes
        self._mine: set[int] = set()

    async def submit(self, script: str, *, where: str, output_dir: str | None = None) -> int:
        plan = build_submit_plan(script, where, output_dir)
        outcome = await self._actions.execute(plan)
        last = outcome.results[-1] if outcome.results else None
        if not outcome.ok or last is None:
            bad = outcome.failed[0] if outcome.failed else last
            detail = bad.detail if bad is not None else "nothing ran"
            raise CommandFailed(list(bad.argv) if bad is not None else ["sbatch"], bad.returncode if bad else 1, detail)
        if not last.value.isdecimal():
            raise CommandFailed(list(last.argv), 0, f"sbatch answered no job id: {last.detail[:80]!r}")
        job_id = int(last.value)
        self._mine.add(job_id)
        return job_id

    async def state(self, job_id: int) -> tuple[str, str]:
        return await self._cluster.job_state(job_id)

    async def read_output(self, path: str) -> str:
        out = await self._probes.on_slurm_host(["cat", "--", path], timeout=60)
        if not out.ok:
            raise CommandFailed(["cat", path], 1, out.error)
        return out.text

    async def cancel(self, job_id: int, why: str) -> None:
        if job_id not in self._mine:
            return  # only jobs this context submitted: the submission's confirmation covers them
        try:
            await self._actions.execute(build_plan("cancel", [str(job_id)]), confirmed=True, note=why)
        except CockpitError:
            pass  # already audited by the gate (refusal or failure); the caller reports its own error
