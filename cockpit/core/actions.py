"""The one gate every state change passes: plan, confirm, audit, execute, read back.

The actions themselves are catalogued in :mod:`cockpit.models.actions` (name,
whether it is dangerous, how the exact argv for one target is built).
:func:`build_plan` turns a request into a :class:`Plan` (one argv per target,
validated); :class:`Actions` executes a plan through the backend's executor
(Slurm commands through a Runner, local or SSH, or the demo cluster):

1. refused, and the refusal audited, in read-only mode;
2. refused when the audit log cannot be written (nothing unaudited runs);
3. confirmed by the session's policy: the TUI's dialog showing the argv,
   ``--yes`` headless (without it :class:`ConfirmationNeeded` carries the plan
   back to be printed, exit 2), or the caller's own dialog (``confirmed=True``);
4. executed step by step: an audit line saying the step starts is written
   first (a step whose line cannot be written does not run), then one with
   its result in Slurm's own words;
5. read back by the executor (a target not in the promised state is a failure).
   Without evidence either way (the controller died mid-call) the step is
   ``unknown``: the gate reads it again while the controller comes back
   (``settle``) and audits what it then finds, never done or failed unproven.

Reasons: a drain/down/reboot reason is either free text, used exactly as
typed, or a template label optionally followed by ``": " + detail``
(``"Xid 79: GPU fallen off the bus: GPU 3"``). We add no ``cockpit:`` prefix:
``sinfo -R`` prints only 20 characters of a reason by default, Slurm already
records who set it and when, and the audit log records that cockpit did it.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cockpit.errors import EXIT_FAILED, EXIT_OK, BackendError, CockpitError, ReadOnlyError, UsageError
from cockpit.hostlist import expand
from cockpit.models.actions import (
    ACTIONS,
    JOB_ACTIONS,
    NODE_ACTIONS,
    REASON_TEMPLATES,
    SIGNALS,
    ActionSpec,
    Params,
    Step,
    TargetResult,
)

# Job ids Slurm accepts from an operator: 123, array task 123_4, het component 123+1.
_JOB_ID = re.compile(r"\d{1,10}(_\d{1,10})?(\+\d{1,4})?", re.ASCII)  # ASCII: "٣" is a \d too
# Slurm time limit forms (sbatch(1) --time) plus +/- increments for scontrol update.
_TIME = re.compile(r"[+-]?(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2})", re.ASCII)
# A node name may hold anything Slurm would reject itself, but not what would change
# the meaning of the argv: an option (leading '-'), a keyword (key=value) or blanks.
_BAD_NODE_CHARS = re.compile(r"[=\s\x00-\x1f\x7f]")
# The programs a plugin's multi-step plan may run (Slurm's admin commands).
_CUSTOM_PROGRAMS = frozenset({"scontrol", "scancel"})


def make_reason(template: str | None, detail: str | None) -> str | None:
    """Template label + ': ' + detail, or the detail exactly as typed.

    Raises UsageError for an unknown template key."""
    if template is None:
        return detail
    if template not in REASON_TEMPLATES:
        raise UsageError(f"unknown reason template {template!r} (known: {', '.join(REASON_TEMPLATES)})")
    label = REASON_TEMPLATES[template]
    return f"{label}: {detail}" if detail and detail.strip() else label


@dataclass(frozen=True)
class Plan:
    """What will run: one argv per step, shown before anything runs."""

    spec: ActionSpec
    targets: tuple[str, ...]
    params: Params
    steps: tuple[Step, ...]

    def describe(self) -> list[str]:
        """The argvs as lines a person can read (shell-quoted for display only);
        a step that feeds a script on stdin says so (see :meth:`scripts`)."""
        out = []
        for s in self.steps:
            line = shlex.join(s.argv)
            if s.stdin is not None:
                line += f"  < script on stdin ({len(s.stdin.splitlines())} lines)"
            out.append(line)
        return out

    def scripts(self) -> list[str]:
        """The scripts handed to a step on stdin, exactly as they will be sent."""
        return [s.stdin for s in self.steps if s.stdin is not None]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.spec.name, "title": self.spec.title, "kind": self.spec.kind,
                "targets": list(self.targets), "params": self.params.to_dict(),
                "would_run": [list(s.argv) for s in self.steps],
                **({"scripts": self.scripts()} if self.scripts() else {})}


@dataclass(frozen=True)
class Outcome:
    plan: Plan
    results: tuple[TargetResult, ...]
    dry_run: bool = False
    invocation: str = ""

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def failed(self) -> tuple[TargetResult, ...]:
        return tuple(r for r in self.results if not r.ok)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.ok else EXIT_FAILED

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.plan.spec.name, "kind": self.plan.spec.kind,
                "invocation": self.invocation, "dry_run": self.dry_run, "ok": self.ok,
                "params": self.plan.params.to_dict(),
                "results": [r.to_dict() for r in self.results]}


class ConfirmationNeeded(CockpitError):
    """Headless without ``--yes``: the plan is shown and nothing ran (exit 2)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(f"{plan.spec.title.lower()}: not confirmed (run again with --yes); nothing ran")
        self.plan = plan


class Declined(CockpitError):
    """The operator answered "no" in the confirmation dialog."""


def check_job_id(job: str) -> str:
    """Return ``job`` if it is a Slurm job id; raise UsageError naming it otherwise."""
    if not _JOB_ID.fullmatch(job):
        raise UsageError(f"bad job id {job!r} (expected 123, 123_4 or 123+1)")
    return job


def expand_nodes(hostlists: Iterable[str]) -> tuple[str, ...]:
    """Expand hostlists into unique node names, first seen first.

    Raises UsageError for a hostlist ClusterShell cannot parse or a name that
    would change the argv's meaning (leading '-', '=', blanks, control chars)."""
    out: dict[str, None] = {}
    for hl in hostlists:
        for name in expand(hl):
            if name.startswith("-") or _BAD_NODE_CHARS.search(name):
                raise UsageError(f"bad node name {name!r}")
            out[name] = None
    return tuple(out)


def _check_params(spec: ActionSpec, p: Params) -> Params:
    if spec.needs_reason:
        if not p.reason or not p.reason.strip():
            raise UsageError(f"{spec.name} needs a reason (--reason TEXT or --template NAME)")
    elif spec.kind == "node" and p.reason is not None:
        raise UsageError(f"{spec.name} takes no reason")
    if spec.name == "signal":
        sig = (p.signal or "").upper().removeprefix("SIG")
        if not (sig in SIGNALS or (sig.isascii() and sig.isdecimal() and 0 < int(sig) < 65)):
            raise UsageError(f"bad signal {p.signal!r} (known: {', '.join(SIGNALS)} or a number)")
        if p.full and p.batch:
            raise UsageError("--full and --batch exclude each other")
        p = replace(p, signal=sig)
    if spec.name == "timelimit" and not (p.time_limit and (_TIME.fullmatch(p.time_limit) or p.time_limit.upper() in ("UNLIMITED", "INFINITE"))):
        raise UsageError(f"bad time limit {p.time_limit!r} (Slurm forms: MIN, H:M:S, D-H:M, +MIN, UNLIMITED)")
    if spec.name == "nice" and (p.nice is None or not -2147483645 <= p.nice <= 2147483645):
        raise UsageError(f"bad nice value {p.nice!r}")
    if spec.name == "reboot" and p.nextstate not in ("resume", "down"):
        raise UsageError(f"bad nextstate {p.nextstate!r} (resume or down)")
    return p


def build_plan(name: str, targets: Sequence[str], params: Params | None = None) -> Plan:
    """Validate a request and build one argv per target.

    Node targets may be hostlists (expanded); job targets must be job ids.
    Raises UsageError naming the bad action, target or value."""
    spec = ACTIONS.get(name)
    if spec is None or spec.kind == "batch":
        raise UsageError(f"unknown action {name!r} (known: {', '.join(JOB_ACTIONS + NODE_ACTIONS)})")
    p = _check_params(spec, params or Params())
    if spec.kind == "node":
        names = expand_nodes(targets)
    else:
        names = tuple(dict.fromkeys(check_job_id(str(t).strip()) for t in targets))
    if not names:
        raise UsageError(f"{name}: no {spec.kind}s given")
    steps = tuple(Step(t, tuple(spec.build(t, p))) for t in names)
    return Plan(spec, names, p, steps)


def _plain(what: str, value: str) -> str:
    if not value or re.search(r"[\x00-\x1f\x7f]", value):
        raise UsageError(f"bad {what} {value!r}")
    return value


def build_submit_plan(script: str, where: str, output_dir: str | None = None) -> Plan:
    """``sbatch --parsable`` with ``script`` on stdin, after ``mkdir -p output_dir``.

    ``where`` (a hostlist or "partition gpu") is the plan's target in dialogs and
    the audit log. Raises UsageError for a script without ``#!`` or a bad value."""
    if not script.startswith("#!"):
        raise UsageError("a batch script must start with #! (sbatch refuses it otherwise)")
    spec = ACTIONS["submit"]
    target = _plain("target", where)
    steps = [Step(target, ("mkdir", "-p", "--", _plain("output directory", output_dir)))] if output_dir else []
    steps.append(Step(target, tuple(spec.build(target, Params())), stdin=script))
    return Plan(spec, (target,), Params(), tuple(steps))


def build_custom_plan(name: str, title: str, target: str, steps: Sequence[Sequence[str]],
                      kind: str = "job") -> Plan:
    """A plugin's multi-step action on one target (e.g. requeuehold, ExcNodeList, release).

    Only Slurm's admin commands (scontrol, scancel) may appear; every element is
    one argv element. Raises UsageError otherwise."""
    if kind not in ("job", "node"):
        raise UsageError(f"bad action kind {kind!r}")
    target = check_job_id(target) if kind == "job" else expand_nodes([target])[0]
    out = []
    for argv in steps:
        words = tuple(str(a) for a in argv)
        if not words or words[0] not in _CUSTOM_PROGRAMS:
            raise UsageError(f"{name}: a plugin's plan may run {', '.join(sorted(_CUSTOM_PROGRAMS))} only, not {words[:1]}")
        out.append(Step(target, words))
    spec = ActionSpec(name, kind, title, lambda _t, _p: [], dangerous=True)
    return Plan(spec, (target,), Params(), tuple(out))


Confirm = Callable[[Plan], Awaitable[bool]]


def yes_policy(yes: bool) -> Confirm:
    """Headless confirmation: ``--yes`` says yes; without it the plan is handed back unrun."""

    async def confirm(plan: Plan) -> bool:
        if not yes:
            raise ConfirmationNeeded(plan)
        return True

    return confirm


class Actions:
    """The one gate every action passes: read-only, audit, confirmation, execution.

    ``executor`` runs one Step (the backend's: ``action_executor``), or None
    when the backend cannot act (a replay); ``audit`` is an AuditLog or None
    (tests of pure planning); ``confirm`` is the session's confirmation policy
    (None: nothing runs unconfirmed, :class:`ConfirmationNeeded`)."""

    def __init__(self, executor: Any, *, read_only: bool = False, audit: Any = None,
                 confirm: Confirm | None = None, cannot_act: str = "",
                 settle: Sequence[float] = (1.0, 2.0, 4.0, 8.0, 15.0)) -> None:
        self.executor = executor
        self.read_only = read_only
        self.audit = audit
        self.confirm = confirm
        self.cannot_act = cannot_act or "this backend cannot act on the cluster"
        # Pauses between re-reads of an ``unknown`` step (30 s in all by default).
        self.settle = tuple(settle)

    @property
    def description(self) -> str:
        return getattr(self.executor, "description", "") if self.executor is not None else "none"

    def plan(self, name: str, targets: Sequence[str], **params: Any) -> Plan:
        """build_plan with keyword params; raises UsageError."""
        return build_plan(name, targets, Params(**params))

    def refuse_if_read_only(self, what: str, targets: Sequence[str] = ()) -> None:
        """Raise ReadOnlyError (and audit the refusal) in read-only mode."""
        if not self.read_only:
            return
        if self.audit is not None:
            try:
                self.audit.refusal(what, tuple(targets), "read-only mode")
            except CockpitError:  # an unwritable log must not turn a refusal into another error
                pass
        raise ReadOnlyError(f"read-only mode: refusing to {what} {', '.join(targets) or ''}".rstrip()
                            + " (unset general.read_only / drop --read-only to act)")

    async def _confirmed(self, plan: Plan) -> None:
        if self.confirm is None:
            raise ConfirmationNeeded(plan)
        if not await self.confirm(plan):
            raise Declined(f"{plan.spec.title}: declined by the operator, nothing ran")

    async def execute(self, plan: Plan, *, dry_run: bool = False, confirmed: bool = False,
                      note: str = "") -> Outcome:
        """Run every step of a plan; one audit line per step.

        ``confirmed``: the caller showed this plan and the operator said yes (the
        TUI's own dialog, or the submission that a cleanup cancel belongs to).
        Never raises for a target that fails: its result says why. Raises
        ReadOnlyError (nothing runs), ConfigError (the audit log cannot be
        written, checked before anything runs), BackendError (no executor),
        ConfirmationNeeded / Declined (not confirmed)."""
        invocation = uuid.uuid4().hex[:12]
        if not dry_run:
            self.refuse_if_read_only(plan.spec.name, plan.targets)
            if self.executor is None:
                raise BackendError(f"{plan.spec.title.lower()}: {self.cannot_act}")
        if self.audit is not None:
            self.audit.check_writable()
        if not dry_run and not confirmed:
            await self._confirmed(plan)
        results = []
        for n, step in enumerate(plan.steps):
            if dry_run:
                res = TargetResult(step.target, step.argv, "dry-run")
            else:
                self._audit_start(plan, step, n, invocation, note)
                res = await self.executor.execute(plan.spec, step, plan.params)
                if res.unknown:
                    res = await self._settle(plan, step, res)
            if self.audit is not None:
                self.audit.record(plan, res, invocation=invocation, dry_run=dry_run,
                                  executor=self.description, stdin=step.stdin, note=note, step=n)
            results.append(res)
            if not res.ok and not dry_run and len(plan.targets) == 1 and len(plan.steps) > 1:
                break  # a multi-step plan on one target stops at its first failed step
        return Outcome(plan, tuple(results), dry_run, invocation)

    def _audit_start(self, plan: Plan, step: Step, n: int, invocation: str, note: str) -> None:
        """The line that says a step starts; raises ConfigError (and the step does not
        run) when it cannot be written: a full or read-only filesystem."""
        if self.audit is None:
            return
        try:
            self.audit.started(plan, step, invocation=invocation, executor=self.description, note=note, step=n)
        except CockpitError as exc:
            raise type(exc)(f"{exc}: nothing more was run" + (f" ({n} of {len(plan.steps)} steps had run)" if n else "")) from None

    async def _settle(self, plan: Plan, step: Step, res: TargetResult) -> TargetResult:
        """Re-read an ``unknown`` step's target while the controller comes back."""
        reread = getattr(self.executor, "reread", None)
        if reread is None:
            return res
        for pause in self.settle:
            await asyncio.sleep(pause)
            found = await reread(plan.spec, step, plan.params)
            if found is not None:
                return TargetResult(found.target, res.argv, found.status, f"{res.detail}; {found.detail}",
                                    res.returncode, res.value)
        return res

    async def run(self, name: str, targets: Sequence[str], *, dry_run: bool = False, **params: Any) -> Outcome:
        """Plan and execute in one call (confirmed by the session's policy).

        Raises as :meth:`plan` and :meth:`execute` do."""
        return await self.execute(self.plan(name, targets, **params), dry_run=dry_run)


def actions_for_backend(backend: Any, config: Any, *, read_only: bool, confirm: Confirm | None = None) -> Actions:
    """The gate for a backend: its own executor (``action_executor``), the audit log of
    ``config`` (the demo's own one for a simulated backend: never the site's), the
    read-only flag and a confirmation policy.

    Raises ConfigError when the audit log path is unusable."""
    from cockpit.core.audit import AuditLog

    caps = backend.capabilities()
    executor = caps.executor.action_executor(config) if caps.executor is not None else None
    why = "" if executor is not None else (caps.cannot_act or f"the {backend.name} backend cannot act")
    audit = AuditLog.from_config(config, simulated=caps.simulated)
    return Actions(executor, read_only=bool(read_only), audit=audit,
                   confirm=confirm, cannot_act=why)


def actions_from_session(session: Any, *, yes: bool = False) -> Actions:
    """The headless gate for a Session: ``--yes`` confirms. Raises ConfigError."""
    return actions_for_backend(session.backend, session.config, read_only=bool(session.read_only),
                               confirm=yes_policy(yes))


__all__ = [
    "ACTIONS", "JOB_ACTIONS", "NODE_ACTIONS", "REASON_TEMPLATES", "SIGNALS", "ActionSpec", "Actions",
    "ConfirmationNeeded", "Declined", "Outcome", "Params", "Plan", "Step", "TargetResult",
    "actions_for_backend", "actions_from_session", "build_custom_plan", "build_plan", "build_submit_plan",
    "check_job_id", "expand_nodes", "make_reason", "yes_policy",
]
