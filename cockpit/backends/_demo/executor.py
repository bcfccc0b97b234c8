"""The demo cluster's executor: the gate's steps applied to the simulated cluster."""

from __future__ import annotations

from typing import Any

from cockpit.errors import CockpitError, CommandFailed
from cockpit.models.actions import ActionSpec, Params, Step, TargetResult


class DemoExecutor:
    """Applies steps to the demo backend through its admin methods (cancel_job, drain_node ...)."""

    description = "demo (simulated)"

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def supports(self, spec: ActionSpec) -> bool:
        """Whether the demo backend implements this action (the TUI may hide the rest)."""
        return bool(spec.demo_method) and callable(getattr(self.backend, spec.demo_method, None))

    async def execute(self, spec: ActionSpec, step: Step, params: Params) -> TargetResult:
        """Call the demo method; its exceptions become a failed result."""
        if spec.name == "submit" and step.argv[:1] == ("mkdir",):
            return TargetResult(step.target, step.argv, "done", "simulated", 0)
        method = getattr(self.backend, spec.demo_method, None) if spec.demo_method else None
        call = None if callable(method) else self._custom(step.argv)
        if not callable(method) and call is None:
            name = getattr(self.backend, "name", "this backend")
            return TargetResult(step.target, step.argv, "failed", f"{name} cannot {spec.name}")
        kwargs = {k: getattr(params, k) for k in _DEMO_KWARGS.get(spec.name, ())}
        try:
            if call is not None:
                res = call()
            else:
                res = method(step.stdin or "") if spec.name == "submit" else method(step.target, **kwargs)
            if hasattr(res, "__await__"):
                res = await res
        except CommandFailed as exc:  # the demo speaks Slurm's words: keep them verbatim
            return TargetResult(step.target, step.argv, "failed", exc.stderr.strip() or str(exc), exc.returncode)
        except (CockpitError, KeyError, ValueError) as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            return TargetResult(step.target, step.argv, "failed", str(msg), 1)
        if res is False:
            return TargetResult(step.target, step.argv, "failed", "refused by the demo cluster", 1)
        if spec.name == "submit":
            return TargetResult(step.target, step.argv, "done", f"Submitted batch job {res} (simulated)", 0, str(res))
        return TargetResult(step.target, step.argv, "done", res if isinstance(res, str) else "", 0)


    def _custom(self, argv: tuple[str, ...]):
        """A plugin's own step (e.g. the runbooks' requeuehold, ExcNodeList, release) as a
        call of the demo method doing the same; None when the demo has none."""
        b, words = self.backend, list(argv)
        if len(words) == 3 and words[0] == "scontrol" and words[1] in _CUSTOM_JOB:
            method = getattr(b, _CUSTOM_JOB[words[1]], None)
            return (lambda: method(words[2])) if callable(method) else None
        if (len(words) == 4 and words[:2] == ["scontrol", "update"] and words[2].startswith("JobId=")
                and words[3].startswith("ExcNodeList=") and callable(getattr(b, "set_excluded_nodes", None))):
            return lambda: b.set_excluded_nodes(words[2].split("=", 1)[1], words[3].split("=", 1)[1])
        if len(words) >= 2 and words[0] == "scancel" and not any(w.startswith("--signal") for w in words):
            return lambda: b.cancel_job(words[-1])
        return None


_CUSTOM_JOB = {"requeuehold": "requeue_hold_job", "release": "release_job", "hold": "hold_job",
               "requeue": "requeue_job", "top": "top_job"}

# Which Params the demo methods take, by action (positional target first).
_DEMO_KWARGS = {
    "signal": ("signal",),
    "timelimit": ("time_limit",),
    "nice": ("nice",),
    "drain": ("reason",),
    "down": ("reason",),
    "reboot": ("reason", "nextstate"),
}
