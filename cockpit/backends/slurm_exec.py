"""Executors: run one planned step and say truthfully whether it worked.

:class:`SlurmExecutor` runs the argv through a Runner (local or SSH) and judges
the result in three layers, because Slurm's exit status alone is not enough:

1. a non-zero exit is a failure, reported with Slurm's own stderr verbatim;
2. an ``error:`` line on stderr is a failure even when the exit status is 0;
3. where the action has a visible effect, the target is read back
   (``squeue``/``scontrol show node``) and a target that is not in the
   expected state is a failure ("job had already finished (COMPLETED)").

When there is no evidence either way the result is ``unknown``, never done or
failed: the command timed out or its connection broke after it was sent, or
the read-back could not reach the controller. :meth:`reread` looks again.

A submission (``sbatch --parsable`` with the script on stdin) is done when
sbatch answered a job id and squeue knows that job.
"""

from __future__ import annotations

import os
import re
from typing import Any

from cockpit.models.actions import ActionSpec, Params, Step, TargetResult
from cockpit.errors import CockpitError, CommandNotFound

# Slurm's words when a request was sent but no answer came back: it may have been applied.
_SENT_NO_ANSWER = re.compile(r"Socket timed out on send/recv|Zero Bytes were transmitted or received", re.IGNORECASE)
_ERROR_LINE = re.compile(r"(^|\b)(error|fatal)\b", re.IGNORECASE)
_FINISHED = {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
             "DEADLINE", "PREEMPTED", "SPECIAL_EXIT"}
_HELD = ("JobHeldAdmin", "JobHeldUser")


def _held(prio: str, reason: str) -> bool:
    # 22.05 shows "job requeued in held state" after requeuehold; priority 0 is the hold itself.
    return prio == "0" or reason in _HELD or "held" in reason.lower()


def _minutes(limit: str) -> int | None:
    """Slurm time-limit text -> minutes (seconds rounded up); None for UNLIMITED or other forms."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+)(?::(\d+))?", limit.strip())
    if not m:
        return None
    d, a, b, c = m.groups()
    days = int(d or 0)
    if d is not None:  # D-H, D-H:M, D-H:M:S
        h = int(a) if a is not None else int(b)
        mins = int(b) if a is not None else 0
        secs = int(c or 0)
        return days * 1440 + h * 60 + mins + (1 if secs else 0)
    if a is not None and c is not None:  # H:M:S
        return int(a) * 60 + int(b) + (1 if int(c) else 0)
    if a is not None:  # M:S
        return int(a) + (1 if int(b) else 0)
    return int(b)  # MIN


class SlurmExecutor:
    """Runs steps through a Runner; ``bin_dir`` prefixes Slurm programs if set."""

    def __init__(self, runner: Any, bin_dir: str = "", read_back: bool = True) -> None:
        self.runner = runner
        self.bin_dir = bin_dir
        self.read_back = read_back
        self.description = f"slurm via {getattr(runner, 'description', 'runner')}"

    def _prog(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        if not self.bin_dir:
            return argv
        return (os.path.join(self.bin_dir, argv[0]), *argv[1:])

    async def _run(self, argv: tuple[str, ...]):
        return await self.runner.run(list(self._prog(argv)))

    async def execute(self, spec: ActionSpec, step: Step, params: Params) -> TargetResult:
        """Run one step; never raises for Slurm's or the runner's failures."""
        argv = self._prog(step.argv)
        stdin = step.stdin.encode() if step.stdin is not None else None
        try:
            res = await self.runner.run(list(argv), stdin=stdin) if stdin is not None else await self.runner.run(list(argv))
        except CommandNotFound as exc:  # nothing ran
            return TargetResult(step.target, argv, "failed", str(exc))
        except CockpitError as exc:  # timeout, SSH down: it may have reached slurmctld
            return TargetResult(step.target, argv, "unknown", f"outcome unknown: {exc}")
        err = res.err_text().strip()
        out = res.text().strip()
        if res.returncode != 0 and _SENT_NO_ANSWER.search(err):
            return TargetResult(step.target, argv, "unknown", f"outcome unknown: {err}", res.returncode)
        if res.returncode != 0:
            return TargetResult(step.target, argv, "failed", err or out or f"exit status {res.returncode}", res.returncode)
        if any(_ERROR_LINE.search(line) for line in err.splitlines()):
            return TargetResult(step.target, argv, "failed", err, res.returncode)
        if spec.name == "submit" and step.argv[0] == "sbatch":
            return await self._submitted(step, argv, out, err, res.returncode)
        try:
            problem = await self._verify(spec, step, params) if self.read_back else None
        except CockpitError as exc:
            return TargetResult(step.target, argv, "unknown",
                                f"Slurm accepted it ({err or out or 'exit 0'}), but the read-back failed: {exc}",
                                res.returncode)
        if problem:
            return TargetResult(step.target, argv, "failed", problem, res.returncode)
        return TargetResult(step.target, argv, "done", err or out, res.returncode)

    async def reread(self, spec: ActionSpec, step: Step, params: Params) -> TargetResult | None:
        """Read an ``unknown`` step's target again: done or failed with the evidence,
        or None while the controller still does not answer."""
        argv = self._prog(step.argv)
        if spec.name == "submit" or not self.read_back:
            return None  # a lost job id cannot be found again safely; the operator checks squeue
        try:
            problem = await self._verify(spec, step, params)
        except CockpitError:
            return None
        if problem:
            return TargetResult(step.target, argv, "failed", f"read back after the controller returned: {problem}")
        return TargetResult(step.target, argv, "done", "read back after the controller returned")

    async def _submitted(self, step: Step, argv: tuple[str, ...], out: str, err: str, rc: int) -> TargetResult:
        # --parsable prints "jobid" or "jobid;cluster".
        first = out.split(";")[0].strip()
        if not first.isdecimal():
            return TargetResult(step.target, argv, "failed", f"sbatch answered no job id: {(out or err)[:80]!r}", rc)
        try:
            known = await self._job_fields(first) is not None if self.read_back else True
        except CockpitError as exc:  # sbatch's job id is Slurm's own word that it took the job
            return TargetResult(step.target, argv, "done", f"Submitted batch job {first} (not read back: {exc})", rc, first)
        if not known:
            return TargetResult(step.target, argv, "failed", f"sbatch answered job {first}, but squeue does not know it", rc, first)
        return TargetResult(step.target, argv, "done", f"Submitted batch job {first}", rc, first)

    async def _verify(self, spec: ActionSpec, step: Step, p: Params) -> str | None:
        """Read the target back; a message when it is not as the action promised."""
        if spec.kind == "node":
            return await self._verify_node(spec.name, step.target)
        if spec.kind == "job":
            return await self._verify_job(spec.name, step.target, p)
        return None

    async def _job_fields(self, job: str) -> tuple[str, str, str, str, str] | None:
        # Only Slurm-made columns: a job name could imitate "JobState=" in scontrol's line.
        # -t all: without it 22.05 hides a finished job even when asked for it by id.
        res = await self._run(("squeue", "-h", "-t", "all", "-j", job, "-o", "%T %l %y %Q %r"))
        line = res.text().strip().splitlines()
        if res.returncode != 0 or not line:
            return None
        parts = line[0].split(None, 4) + [""] * 5
        return parts[0], parts[1], parts[2], parts[3], parts[4]

    async def _verify_job(self, action: str, job: str, p: Params) -> str | None:
        if action not in ("cancel", "hold", "release", "requeuehold", "timelimit", "nice"):
            return None
        fields = await self._job_fields(job)
        if fields is None:
            return None
        state, limit, nice, prio, reason = fields
        if action == "cancel":
            if state in _FINISHED:
                return f"job had already finished ({state})"
            if state not in ("CANCELLED", "COMPLETING"):
                return f"job still {state} after scancel"
        elif action in ("hold", "requeuehold") and state == "PENDING" and not _held(prio, reason):
            return f"job not held (reason {reason})"
        elif action == "release" and _held(prio, reason):
            return f"job still held ({reason})"
        elif action == "nice" and nice != str(p.nice):
            return f"nice is {nice}, not {p.nice}"
        elif action == "timelimit" and p.time_limit and p.time_limit[0] not in "+-":
            want = _minutes(p.time_limit)
            if want is not None and _minutes(limit) not in (want, None):
                return f"time limit is {limit}, not {p.time_limit}"
        return None

    async def _verify_node(self, action: str, node: str) -> str | None:
        res = await self._run(("scontrol", "show", "node", "-o", node))
        # The first State= is Slurm's; a hostile Reason= comes later on the line.
        m = re.search(r"(?:^|\s)State=(\S+)", res.text())
        if res.returncode != 0 or not m:
            return None
        return node_state_problem(action, m.group(1))


def node_state_problem(action: str, state: str) -> str | None:
    """Why a node read back after ``action`` is not as promised (None: it is). ``state``
    is Slurm's (``IDLE+DRAIN``, ``down*``). Every executor reads back with this."""
    state = state.upper()
    flags = set(re.split(r"[+*]", state))
    drain = bool({"DRAIN", "DRAINED", "DRAINING"} & flags)
    # Slurm accepted the command, so a node in another state was changed since:
    # say so rather than report another operator's result as ours.
    since = "; it changed after our command (another operator?)"
    if action == "drain" and not drain:
        return f"node not draining (State={state}){since}"
    if action in ("resume", "undrain") and drain:
        return f"node still draining (State={state}){since}"
    if action == "down" and "DOWN" not in flags:
        return f"node not down (State={state}){since}"
    if action == "reboot" and "REBOOT" not in state and not drain:
        return f"no reboot pending (State={state})"
    return None
