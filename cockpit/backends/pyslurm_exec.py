"""The gate's executor for the pyslurm backend: pyslurm where it has the call,
the Slurm commands where it has not.

A step goes through pyslurm only when it is exactly the catalogue's action for
its target (its argv is what :mod:`cockpit.models.actions` builds, so the plan
the operator confirmed means the same thing either way) and the generation's
adapter does that action: cancel, signal, hold, release, requeue(hold), drain,
resume, undrain, down, on plain job ids. Everything else (time limit, nice,
top, reboot, a submission, array tasks ``123_4`` and het components ``123+1``,
a plugin's own steps) runs as the Slurm command the plan shows, through the CLI
backend's executor. Either way the result says which path it took, and the
target is read back before it counts as done.
"""

from __future__ import annotations

from typing import Any

from cockpit.backends.pyslurm_compat import ADAPTERS
from cockpit.backends.pyslurm_worker import Failed, WorkerFailed
from cockpit.errors import CockpitError, ParseError
from cockpit.models.actions import ACTIONS, ActionSpec, Params, Step, TargetResult


class PyslurmExecutor:
    """``execute(spec, step, params) -> TargetResult`` like SlurmExecutor."""

    def __init__(self, worker: Any, cli: Any, pyslurm_version: str, generation: str) -> None:
        self.worker, self.cli = worker, cli
        self.version = pyslurm_version
        self.generation = generation
        self.calls = dict(ADAPTERS[generation].ACTIONS) if generation in ADAPTERS else {}
        self.description = (f"pyslurm {pyslurm_version} ({', '.join(self.calls)}); "
                            f"other actions as Slurm commands ({getattr(cli, 'description', 'slurm')})")

    def route(self, spec: ActionSpec, step: Step) -> str:
        """"" when pyslurm does this step, else why the Slurm command runs instead."""
        catalogue = ACTIONS.get(spec.name)
        if catalogue is not spec:  # a plugin's own plan (build_custom_plan), a submission
            return f"{spec.name} is not one of pyslurm's calls"
        if spec.name not in self.calls:
            return f"pyslurm {self.version} has no call for {spec.name}"
        if spec.kind == "job" and not step.target.isdecimal():
            return f"pyslurm takes plain job ids, not {step.target}"
        return ""

    async def execute(self, spec: ActionSpec, step: Step, params: Params) -> TargetResult:
        """Run one step; never raises for Slurm's, pyslurm's or the worker's failures."""
        why = self.route(spec, step)
        if not why and tuple(spec.build(step.target, params)) != step.argv:
            why = "the step is not the catalogue's command for its target"
        if why:
            return await self._as_command(spec, step, params, why)
        call = step.target
        try:
            status, detail, call = await self.worker.call("act", spec.name, step.target, params.to_dict())
        except (Failed, ParseError, WorkerFailed) as exc:
            return TargetResult(step.target, ("pyslurm", f"{spec.name} {call}"), "failed", str(exc))
        except CockpitError as exc:
            return TargetResult(step.target, ("pyslurm", f"{spec.name} {call}"), "failed", str(exc))
        return TargetResult(step.target, ("pyslurm", call), status, detail)

    async def _as_command(self, spec: ActionSpec, step: Step, params: Params, why: str) -> TargetResult:
        if self.cli is None:
            return TargetResult(step.target, step.argv, "failed", f"{why}, and no Slurm commands to run it with")
        res = await self.cli.execute(spec, step, params)
        note = f"(as a Slurm command: {why})"
        detail = f"{res.detail} {note}" if res.detail else note
        return TargetResult(res.target, res.argv, res.status, detail, res.returncode, res.value)
