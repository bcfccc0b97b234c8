"""Every operator action on jobs and nodes, in one place.

An action is described once (:data:`ACTIONS`): its name, whether it is
dangerous, what it acts on, and how the exact argv for one target is built.
:class:`Actions` turns a request into a :class:`Plan` (one argv per target,
validated), then executes it through an executor (Slurm commands through a
Runner, local or SSH, or the demo cluster), refusing in read-only mode and
appending one audit line per target. The TUI's confirmation dialog and the
headless ``--yes`` gate both show ``Plan.steps`` before anything runs.

Values from the user or the cluster are passed as single argv elements
(``Reason=`` + the reason exactly as typed): no shell ever sees them.

Reasons: a drain/down/reboot reason is either free text, used exactly as
typed, or a template label optionally followed by ``": " + detail``
(``"Xid 79: GPU fallen off the bus: GPU 3"``). We add no ``cockpit:`` prefix:
``sinfo -R`` prints only 20 characters of a reason by default, Slurm already
records who set it and when, and the audit log records that cockpit did it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cockpit.errors import EXIT_FAILED, EXIT_OK, ConfigError, ReadOnlyError, UsageError
from cockpit.hostlist import expand

# Templates for the common reasons an operator drains a node (key -> label).
REASON_TEMPLATES: dict[str, str] = {
    "xid79": "Xid 79: GPU fallen off the bus",
    "xid": "GPU Xid error",
    "ecc": "ECC: uncorrectable GPU memory errors",
    "thermal": "thermal: GPU or node overheating",
    "ib": "IB link: InfiniBand port down or degraded",
    "pcie": "PCIe: link degraded",
    "maint": "maintenance",
}

SIGNALS = ("USR1", "USR2", "TERM", "KILL", "INT", "HUP", "CONT", "STOP", "QUIT", "ABRT")

# Job ids Slurm accepts from an operator: 123, array task 123_4, het component 123+1.
_JOB_ID = re.compile(r"\d{1,10}(_\d{1,10})?(\+\d{1,4})?", re.ASCII)  # ASCII: "٣" is a \d too
# Slurm time limit forms (sbatch(1) --time) plus +/- increments for scontrol update.
_TIME = re.compile(r"[+-]?(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2})", re.ASCII)
# A node name may hold anything Slurm would reject itself, but not what would change
# the meaning of the argv: an option (leading '-'), a keyword (key=value) or blanks.
_BAD_NODE_CHARS = re.compile(r"[=\s\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Params:
    """Everything an action may take besides its targets."""

    reason: str | None = None  # drain / down / reboot
    signal: str | None = None  # signal
    full: bool = False  # signal: also the batch shell and its children (scancel --full)
    batch: bool = False  # signal: only the batch shell (scancel --batch)
    time_limit: str | None = None  # timelimit, Slurm's own syntax
    nice: int | None = None  # nice
    nextstate: str = "resume"  # reboot: resume or down

    def to_dict(self) -> dict[str, Any]:
        """The values that differ from the defaults (0 and "" included when given)."""
        default = Params()
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) != getattr(default, k)}


@dataclass(frozen=True)
class ActionSpec:
    """One action: how to build its argv for a target, and what it needs."""

    name: str
    kind: str  # "job" or "node"
    title: str  # shown in dialogs and help
    build: Callable[[str, Params], list[str]]
    dangerous: bool = True
    needs_reason: bool = False
    demo_method: str = ""  # method of the demo backend doing the same thing


# scancel exits 0 and prints nothing for an unknown or finished job unless it is
# verbose (seen on 22.05): --verbose makes Slurm say why, in its own words.
def _scancel(job: str, _p: Params) -> list[str]:
    return ["scancel", "--verbose", "--", job]


def _scancel_signal(job: str, p: Params) -> list[str]:
    argv = ["scancel", "--verbose", f"--signal={p.signal}"]
    if p.full:
        argv.append("--full")
    if p.batch:
        argv.append("--batch")
    return [*argv, "--", job]


def _node_update(state: str, with_reason: bool):
    def build(node: str, p: Params) -> list[str]:
        argv = ["scontrol", "update", f"NodeName={node}", f"State={state}"]
        return [*argv, f"Reason={p.reason}"] if with_reason else argv

    return build


def _job_cmd(*words: str):
    return lambda job, _p: ["scontrol", *words, job]


_SPECS = (
    ActionSpec("cancel", "job", "Cancel job", _scancel, demo_method="cancel_job"),
    ActionSpec("signal", "job", "Send a signal to job", _scancel_signal, demo_method="signal_job"),
    ActionSpec("requeue", "job", "Requeue job", _job_cmd("requeue"), demo_method="requeue_job"),
    ActionSpec("requeuehold", "job", "Requeue and hold job", _job_cmd("requeuehold"), demo_method="requeue_hold_job"),
    ActionSpec("hold", "job", "Hold job", _job_cmd("hold"), demo_method="hold_job"),
    ActionSpec("release", "job", "Release job", _job_cmd("release"), dangerous=False, demo_method="release_job"),
    ActionSpec(
        "timelimit", "job", "Change time limit",
        lambda j, p: ["scontrol", "update", f"JobId={j}", f"TimeLimit={p.time_limit}"],
        demo_method="set_time_limit",
    ),
    ActionSpec("top", "job", "Move job to the top of its user's queue", _job_cmd("top"), dangerous=False, demo_method="top_job"),
    ActionSpec(
        "nice", "job", "Change job nice value",
        lambda j, p: ["scontrol", "update", f"JobId={j}", f"Nice={p.nice}"],
        dangerous=False, demo_method="nice_job",
    ),
    ActionSpec("drain", "node", "Drain node", _node_update("DRAIN", True), needs_reason=True, demo_method="drain_node"),
    ActionSpec("resume", "node", "Resume node", _node_update("RESUME", False), demo_method="resume_node"),
    ActionSpec("down", "node", "Set node down", _node_update("DOWN", True), needs_reason=True, demo_method="set_node_down"),
    ActionSpec(
        "reboot", "node", "Reboot node when idle (ASAP)",
        lambda n, p: ["scontrol", "reboot", "ASAP", f"nextstate={p.nextstate}", f"reason={p.reason}", n],
        needs_reason=True, demo_method="reboot_node",
    ),
    ActionSpec("undrain", "node", "Undrain node", _node_update("UNDRAIN", False), demo_method="undrain_node"),
)
ACTIONS: dict[str, ActionSpec] = {s.name: s for s in _SPECS}
JOB_ACTIONS = tuple(s.name for s in _SPECS if s.kind == "job")
NODE_ACTIONS = tuple(s.name for s in _SPECS if s.kind == "node")


def make_reason(template: str | None, detail: str | None) -> str | None:
    """Template label + ': ' + detail, or the detail exactly as typed.

    Raises UsageError for an unknown template key."""
    if template is None:
        return detail
    if template not in REASON_TEMPLATES:
        raise UsageError(f"unknown reason template {template!r} (known: {', '.join(REASON_TEMPLATES)})")
    label = REASON_TEMPLATES[template]
    return f"{label}: {detail}" if detail and detail.strip() else label


@dataclass(frozen=True, slots=True)
class Step:
    target: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """What will run: one argv per target, shown before anything runs."""

    spec: ActionSpec
    targets: tuple[str, ...]
    params: Params
    steps: tuple[Step, ...]

    def describe(self) -> list[str]:
        """The argvs as lines a person can read (shell-quoted for display only)."""
        import shlex

        return [shlex.join(s.argv) for s in self.steps]


@dataclass(frozen=True, slots=True)
class TargetResult:
    target: str
    argv: tuple[str, ...]
    status: str  # "done", "failed", "dry-run"
    detail: str = ""  # Slurm's own words (stderr verbatim) or why it failed
    returncode: int | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("done", "dry-run")

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "argv": list(self.argv), "status": self.status,
                "ok": self.ok, "returncode": self.returncode, "detail": self.detail}


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
    if spec is None:
        raise UsageError(f"unknown action {name!r} (known: {', '.join(ACTIONS)})")
    p = _check_params(spec, params or Params())
    if spec.kind == "node":
        names = expand_nodes(targets)
    else:
        names = tuple(dict.fromkeys(check_job_id(str(t).strip()) for t in targets))
    if not names:
        raise UsageError(f"{name}: no {spec.kind}s given")
    steps = tuple(Step(t, tuple(spec.build(t, p))) for t in names)
    return Plan(spec, names, p, steps)


class Actions:
    """The one gate every action passes: read-only, audit, execution.

    ``executor`` runs one Step (see cockpit.core.action_exec); ``audit`` is an
    AuditLog or None (tests of pure planning). Plugins receive this object as
    ``CheckContext.actions`` and must act only through :meth:`run`."""

    def __init__(self, executor: Any, *, read_only: bool = False, audit: Any = None) -> None:
        self.executor = executor
        self.read_only = read_only
        self.audit = audit

    def plan(self, name: str, targets: Sequence[str], **params: Any) -> Plan:
        """build_plan with keyword params; raises UsageError."""
        return build_plan(name, targets, Params(**params))

    def refuse_if_read_only(self, what: str, targets: Sequence[str] = ()) -> None:
        """Raise ReadOnlyError (and audit the refusal) in read-only mode.

        Plugins call this before any action of their own that is not in ACTIONS."""
        if not self.read_only:
            return
        if self.audit is not None:
            try:
                self.audit.refusal(what, tuple(targets), "read-only mode")
            except ConfigError:  # an unwritable log must not turn a refusal into another error
                pass
        raise ReadOnlyError(f"read-only mode: refusing to {what} {', '.join(targets) or ''}".rstrip()
                            + " (unset general.read_only / drop --read-only to act)")

    async def execute(self, plan: Plan, *, dry_run: bool = False) -> Outcome:
        """Run every step of a confirmed plan; one audit line per target.

        Never raises for a target that fails: its result says why. Raises
        ReadOnlyError in read-only mode (nothing runs), ConfigError when the
        audit log cannot be written (checked before anything runs)."""
        invocation = uuid.uuid4().hex[:12]
        if not dry_run:
            self.refuse_if_read_only(plan.spec.name, plan.targets)
        if self.audit is not None:
            self.audit.check_writable()
        results = []
        for step in plan.steps:
            if dry_run:
                res = TargetResult(step.target, step.argv, "dry-run")
            else:
                res = await self.executor.execute(plan.spec, step, plan.params)
            if self.audit is not None:
                self.audit.record(plan, res, invocation=invocation, dry_run=dry_run,
                                  executor=getattr(self.executor, "description", ""))
            results.append(res)
        return Outcome(plan, tuple(results), dry_run, invocation)

    async def run(self, name: str, targets: Sequence[str], *, dry_run: bool = False, **params: Any) -> Outcome:
        """Plan and execute in one call (plugins; the caller has confirmed).

        Raises UsageError, ReadOnlyError, ConfigError as plan/execute do."""
        return await self.execute(self.plan(name, targets, **params), dry_run=dry_run)


def actions_from_session(session: Any) -> Actions:
    """The Actions object for a Session: Slurm through its Runner, or the demo cluster.

    Raises ConfigError when the audit log path is unusable."""
    from cockpit.core.action_exec import DemoExecutor, SlurmExecutor
    from cockpit.core.audit import AuditLog

    cfg = session.config
    if session.runner is None:
        executor: Any = DemoExecutor(session.backend)
    else:
        executor = SlurmExecutor(session.runner, bin_dir=cfg.general.slurm_bin_dir)
    audit = AuditLog.from_config(cfg)
    return Actions(executor, read_only=bool(session.read_only), audit=audit)


# The name cockpit/commands/check.py imports when it builds a plugin's CheckContext.
actions_for_session = actions_from_session

__all__ = [
    "ACTIONS", "JOB_ACTIONS", "NODE_ACTIONS", "REASON_TEMPLATES", "SIGNALS", "ActionSpec", "Actions",
    "Outcome", "Params", "Plan", "Step", "TargetResult", "actions_for_session", "actions_from_session", "build_plan",
    "check_job_id", "expand_nodes", "make_reason",
]
