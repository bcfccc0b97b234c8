"""Run a runbook: steps in order, ``when`` conditions, ``next`` jumps, findings,
and proposed actions that go through the actions layer (cockpit.core.actions).

Modes: ``propose`` (the default: build the exact argv, act on nothing),
``dry-run`` (the actions layer records a dry run) and ``act`` (``--yes``:
execute; read-only mode refuses, and the refusal is reported on the step).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cockpit.plugins.api import (
    ACTION_NAMES,
    NOT_APPLICABLE,
    CockpitError,
    ConfirmationNeeded,
    Declined,
    Finding,
    ReadOnlyError,
    Severity,
    check_job_id,
    expand_nodes,
    verdict,
)

from . import probes_dcgm, probes_gpu, probes_job, probes_node, probes_slurm
from .context import NotApplicable, ProbeResult, RunContext
from .model import Runbook, StepSpec

PROBES: dict[str, Callable[..., Any]] = {
    "job_progress": probes_job.job_progress,
    "watchdog_logs": probes_job.watchdog_logs,
    "pyspy_stacks": probes_job.pyspy_stacks,
    "folklore": probes_job.folklore,
    "kernel_xid": probes_node.kernel_xid,
    "slurm_reason": probes_node.slurm_reason,
    "gpu_health": probes_gpu.gpu_health,
    "nvlink_status": probes_gpu.nvlink_status,
    "dcgm_series": probes_dcgm.dcgm_series,
    "ib_ports": probes_node.ib_ports,
    "pcie_aer": probes_node.pcie_aer,
    "slurm_records": probes_slurm.slurm_records,
}
# requeue-exclude is the runbooks' own: requeuehold, ExcNodeList, release (see _requeue_exclude).
PLUGIN_ACTIONS = ("requeue-exclude",)
SUMMARY_CRITS = 3  # CRIT titles the one-line summary names


def action_names() -> tuple[str, ...]:
    return (*ACTION_NAMES, *PLUGIN_ACTIONS)


@dataclass
class StepOutcome:
    id: str
    title: str
    status: str  # ran, skipped, n/a, failed, proposed, done, dry-run, refused, declined, action-failed
    why: str = ""
    findings: list[Finding] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    argv: list[list[str]] = field(default_factory=list)  # the exact commands of an action
    results: list[dict[str, Any]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # "<file>: <format detected>" of each file read

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "status": self.status, "why": self.why,
                "findings": [f.to_dict() for f in self.findings], "evidence": self.evidence,
                "inputs": self.sources, "argv": self.argv, "results": self.results}


@dataclass
class RunReport:
    runbook: str
    target: str
    steps: list[StepOutcome]
    findings: list[Finding]
    facts: dict[str, Any]

    @property
    def severity(self) -> Severity:
        """The verdict rule (cockpit.plugins.api.verdict): CRIT > WARN > UNKNOWN > OK;
        n/a steps add no finding; no finding at all is UNKNOWN."""
        return verdict(self.findings)

    @property
    def exit_code(self) -> int:
        return int(self.severity)

    @property
    def inputs(self) -> list[str]:
        """Every file read, with the format detected, once."""
        return list(dict.fromkeys(src for s in self.steps for src in s.sources))

    def summary(self) -> str:
        """Counts, then every CRIT finding's title (two GPUs' CRITs are two facts, not one:
        up to SUMMARY_CRITS, then how many more), else the first WARN's."""
        counts = {s: sum(1 for f in self.findings if f.severity == s) for s in Severity}
        crit = list(dict.fromkeys(f.title for f in self.findings if f.severity == Severity.CRIT))
        warn = [f.title for f in self.findings if f.severity == Severity.WARN]
        head = f"{counts[Severity.CRIT]} CRIT, {counts[Severity.WARN]} WARN"
        if not self.findings:
            head = "nothing could be judged"
        na = sum(1 for s in self.steps if s.status == NOT_APPLICABLE)
        if na:
            head += f", {na} step(s) n/a"
        named = crit[:SUMMARY_CRITS] + ([f"{len(crit) - SUMMARY_CRITS} more CRIT"] if len(crit) > SUMMARY_CRITS else [])
        named = named or warn[:1]
        return f"{self.runbook} {self.target}: {head}" + "".join(f"; {t}" for t in named)

    def to_dict(self) -> dict[str, Any]:
        return {"runbook": self.runbook, "target": self.target, "status": self.severity.name,
                "exit_code": self.exit_code, "summary": self.summary(), "inputs": self.inputs,
                "steps": [s.to_dict() for s in self.steps],
                "findings": [f.to_dict() for f in self.findings],
                "facts": {k: v for k, v in self.facts.items() if isinstance(v, (str, int, float, list, type(None)))}}


def condition_holds(cond: str, findings: list[Finding], facts: Mapping[str, Any]) -> bool:
    """``finding:CODE`` (CODE or CODE.* found, severity above OK), ``!finding:CODE``, ``fact:NAME``."""
    neg = cond.startswith("!")
    kind, _, name = cond.lstrip("!").partition(":")
    if kind == "fact":
        hit = facts.get(name) not in (None, "", [])
    else:
        hit = any((f.rule == name or f.rule.startswith(name + ".")) and f.severity != Severity.OK for f in findings)
    return hit != neg


class _Vars(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def render(template: Any, facts: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
    """Fill ``{name}`` from facts and ``{config.key}`` from the plugin config. Raises KeyError."""
    if not isinstance(template, str):
        return template
    values = _Vars({k: v for k, v in facts.items()})
    values.update({f"config.{k}": v for k, v in config.items()})
    names = [f[1] for f in string.Formatter().parse(template) if f[1]]
    out = template
    for name in names:
        out = out.replace("{" + name + "}", str(values[name]))
    return out


def _requeue_exclude_plan(rc: RunContext, job: str, nodes: str, already: str = ""):
    """requeuehold, then ExcNodeList while the job is pending, then release.

    Slurm refuses ExcNodeList on a running job ("Job is no longer pending
    execution", seen on 22.05), and a plain requeue could start the job again
    on the bad node before the update lands; holding it closes that window.
    ExcNodeList replaces the job's list: ``already`` (what the job excluded
    itself, e.g. sbatch --exclude) is kept first."""
    job = check_job_id(job)
    excl = ",".join(dict.fromkeys(expand_nodes([already]) if already else []) | dict.fromkeys(expand_nodes([nodes])))
    steps = (("scontrol", "requeuehold", job),
             ("scontrol", "update", f"JobId={job}", f"ExcNodeList={excl}"),
             ("scontrol", "release", job))
    return rc.ctx.actions.custom_plan("runbooks.requeue-exclude", "Requeue job excluding nodes", job, steps)


async def _plan(rc: RunContext, step: StepSpec):
    params = {k: render(v, rc.facts, rc.config) for k, v in step.params.items()}
    target = str(params.pop("target", rc.facts.get("job") or rc.job_id or rc.node or ""))
    if not target:
        raise KeyError("target")
    if step.action == "requeue-exclude":
        exclude = str(params.pop("exclude"))
        # The job's own ExcNodeList; when it cannot be read nothing is requeued, rather
        # than a user's exclusions silently dropped (CockpitError ends the step).
        return _requeue_exclude_plan(rc, target, exclude, await rc.ctx.cluster.job_excluded_nodes(check_job_id(target)))
    return rc.ctx.actions.plan(step.action, [target], **params)


async def _act(rc: RunContext, step: StepSpec, out: StepOutcome, mode: str) -> None:
    if rc.files_only and not rc.node:
        # A post-mortem on files alone names no node: an action would target a file path.
        out.status, out.why = NOT_APPLICABLE, "post-mortem: no node named; give --node NODE to propose it"
        return
    try:
        plan = await _plan(rc, step)
    except KeyError as exc:
        out.status, out.why = "skipped", f"nothing to act on: no {exc.args[0]}"
        return
    except CockpitError as exc:
        out.status, out.why = "failed", str(exc)
        return
    out.argv = [list(s.argv) for s in plan.steps]
    if mode == "propose":
        out.status, out.why = "proposed", "run again with --yes to do it"
        return
    try:
        outcome = await rc.ctx.actions.execute(plan, dry_run=(mode == "dry-run"))
    except ReadOnlyError as exc:
        out.status, out.why = "refused", str(exc)
        return
    except ConfirmationNeeded:
        out.status, out.why = "proposed", "run again with --yes to do it"
        return
    except Declined as exc:  # the operator said no: nothing ran, which is not a failure
        out.status, out.why = "declined", str(exc)
        return
    except CockpitError as exc:
        out.status, out.why = "action-failed", str(exc)
        return
    out.results = [r.to_dict() for r in outcome.results]
    out.status = "dry-run" if mode == "dry-run" else ("done" if outcome.ok else "action-failed")
    out.why = "; ".join(r.detail for r in outcome.failed)[:500]


def _override(res: ProbeResult, step: StepSpec) -> list[Finding]:
    from dataclasses import replace

    out = []
    for f in res.findings:
        sev = step.severity.get(f.rule)
        out.append(replace(f, severity=Severity[sev]) if sev else f)
    return out


async def run_runbook(book: Runbook, rc: RunContext, mode: str = "propose",
                      on_step: Callable[[StepOutcome], None] | None = None,
                      on_start: Callable[[StepSpec], None] | None = None) -> RunReport:
    """Run every step; never raises for a probe's or an action's failure (the
    step says why). ``mode``: propose, dry-run or act. ``on_start``: called with a
    step whose conditions hold, before it runs (the screen shows it before its
    action asks for confirmation)."""
    ids = [s.id for s in book.steps]
    outcomes: list[StepOutcome] = []
    i, budget = 0, 4 * len(book.steps)  # a "next" that jumps back must not loop for ever
    while i < len(book.steps) and budget > 0:
        budget -= 1
        step = book.steps[i]
        i += 1
        out = StepOutcome(step.id, step.title, "ran")
        failed = [c for c in step.when if not condition_holds(c, rc.findings, rc.facts)]
        if failed:
            out.status, out.why = "skipped", f"condition not met: {failed[0]}"
        else:
            if on_start is not None:
                on_start(step)
            rc.say(f"[{step.id}] {step.title}")
            if step.probe:
                await _probe(rc, step, out)
            if step.action and out.status == "ran":
                await _act(rc, step, out, mode)
            if step.next:
                i = len(ids) if step.next == "end" else ids.index(step.next)
        outcomes.append(out)
        if on_step is not None:
            on_step(out)
    seen = {o.id for o in outcomes}
    for step in book.steps:  # jumped over by a "next": say so, keep the book's order
        if step.id not in seen:
            outcomes.append(StepOutcome(step.id, step.title, "skipped", "not reached: an earlier step jumped past it"))
    outcomes.sort(key=lambda o: ids.index(o.id))
    target = f"job {rc.job_id}" if rc.job_id else f"node {rc.node}" if rc.node else "files"
    return RunReport(book.name, target, outcomes, rc.findings, rc.facts)


async def _probe(rc: RunContext, step: StepSpec, out: StepOutcome) -> None:
    args = {k: render(v, rc.facts, rc.config) for k, v in step.args.items()}
    if step.via != "auto":
        args.setdefault("via", step.via)
    try:
        res = await PROBES[step.probe](rc, args)
    except NotApplicable as exc:
        out.status, out.why = NOT_APPLICABLE, str(exc)
        return
    except CockpitError as exc:
        res = ProbeResult()
        res.add("UNKNOWN", "probe.failed", f"{step.probe}: {exc}")
        out.status = "failed"
    except KeyError as exc:
        res = ProbeResult()
        res.add("UNKNOWN", "probe.failed", f"{step.probe}: no value for {exc.args[0]}")
        out.status = "failed"
    except Exception as exc:  # a probe's bug must not end the runbook: the step says what broke
        res = ProbeResult()
        res.add("UNKNOWN", "probe.failed", f"{step.probe} crashed: {type(exc).__name__}: {exc}")
        out.status = "failed"
    out.findings = _override(res, step)
    out.evidence = res.evidence
    out.sources = res.sources
    rc.findings.extend(out.findings)
    rc.facts.update(res.facts)
    for line in res.sources + res.evidence:
        rc.say("  " + re.sub(r"\s+", " ", line)[:300])
