"""The plugin facade: the only cockpit module a plugin imports.

A plugin is an object exposed through the ``cockpit.plugins`` entry-point group
(:class:`Plugin`). It contributes:

* **checks**: named, runnable from the TUI and headless (``cockpit check NAME``),
  each returning a :class:`CheckResult` whose severity maps to the
  monitoring-plugin exit codes 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN;
* **screens** (name -> ``"pkg.module:Class"``, imported only when opened),
  palette **commands** (title -> screen, check or opener), app-wide **keys**
  (:class:`KeySpec`) and **openers** (:class:`OpenerSpec`: what the selection must
  hold, a form, the check it runs, the screen shown): declarations the TUI registers when it loads the entry
  point, so headless paths never import Textual;
* **config keys** under ``[plugins.NAME]`` (:class:`ConfigKey`), so config
  validation can name a bad key.

What a check may do is exactly what its :class:`CheckContext` offers, each a
typed capability built by cockpit for the session's backend:

* ``cluster``: read the cluster (nodes, jobs, one job, partitions, topology);
* ``probes``: run **read-only** commands on nodes (SSH or srun fan-out, or the
  demo's simulated nodes); a command that would change state is refused;
* ``jobs``: submit a batch job, follow it, read its output, cancel it: the
  submission and the cancel are actions of the gate (:class:`Placement` and
  :func:`sbatch_header` write a script's #SBATCH lines, values validated);
* ``actions``: plan an action and hand the plan to the gate, which shows the
  exact argv, asks (TUI dialog, or ``--yes`` headless), refuses in read-only
  mode, audits one line per target and reads the target back.

No capability hands out a Runner, an SSH pool or a subprocess: a plugin has no
way to change the cluster except through the gate.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol

from cockpit.core.actions import (
    JOB_ACTIONS,
    NODE_ACTIONS,
    ActionSpec,
    ConfirmationNeeded,
    Declined,
    Outcome,
    Plan,
    Step,
    TargetResult,
    check_job_id,
    expand_nodes,
)
from cockpit.core.audit import read_audit
from cockpit.core.joblog import JobLogError, path_for, sanitize
from cockpit.core.jobprocs import JobProcess, node_processes
from cockpit.core.sbatch import TERMINAL_STATES, JobOutcome, Placement, sbatch_header, sbatch_value
from cockpit.core.slurmtext import (  # saved Slurm text and controller health, for --slurm-file and check scheduler
    METRICS_INDEX,
    Capture,
    LogScan,
    SchedJudged,
    SchedStats,
    judge_scheduler,
    pending_by_reason,
    read_capture,
    read_sched_stats,
    scan_log,
)
from cockpit.errors import (
    BackendError,
    CockpitError,
    CommandFailed,
    CommandTimeout,
    ConfigError,
    ParseError,
    ReadOnlyError,
    UsageError,
)
from cockpit.hostlist import collapse, expand
from cockpit.models import ClusterSnapshot, Job, JobGpus, Node, Partition, Topology, gpus_by_node, record_replace
from cockpit.models.actions import IB_SYSFS_DUMP, ProbeOutput
from cockpit.paths import config_home, data_home
from cockpit.plugins.specs import (
    FACTS_NAMESPACE,
    Choice,
    FormField,
    FormSpec,
    OpenerSpec,
    OpenRefused,
    OpenRequest,
    ScreenOffers,
)
from cockpit.runner import CommandResult
from cockpit.telemetry.nvsmi import GpuTelemetry, parse_query_gpu, query_argv

# The catalogued actions a plan may name (see ActionGate.plan).
ACTION_NAMES: tuple[str, ...] = (*JOB_ACTIONS, *NODE_ACTIONS)

# -------------------------------------------------------------- results


class Severity(IntEnum):
    OK = 0
    WARN = 1
    CRIT = 2
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Finding:
    severity: Severity
    title: str  # one line, e.g. "TP group 3 crosses node01/node02"
    rule: str = ""  # the rule behind it, e.g. "tp-within-nvlink-domain"
    detail: str = ""
    evidence: tuple[str, ...] = ()
    fix: str | None = None  # a concrete remedy, shown and in JSON

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity.name,
            "title": self.title,
            "rule": self.rule,
            "detail": self.detail,
            "evidence": list(self.evidence),
            "fix": self.fix,
        }


# The one verdict rule of every check and runbook (docs/verdicts.md):
# CRIT > WARN > UNKNOWN > OK. A step that cannot apply (a post-mortem has no node
# to probe) is NOT_APPLICABLE: it adds no finding, so it never raises the verdict.
# UNKNOWN means nothing could be judged; it outranks OK because an input that was
# not read must never let the verdict read OK.
VERDICT_ORDER: tuple[Severity, ...] = (Severity.OK, Severity.UNKNOWN, Severity.WARN, Severity.CRIT)
NOT_APPLICABLE = "n/a"  # the status of a step (or probe) that cannot apply here


def worst(findings: Sequence[Finding], default: Severity = Severity.OK) -> Severity:
    """The severity of a set of findings by VERDICT_ORDER (``default`` when there are none)."""
    rank = {s: i for i, s in enumerate(VERDICT_ORDER)}
    sev = default
    for f in findings:
        if rank[f.severity] > rank[sev]:
            sev = f.severity
    return sev


def verdict(findings: Sequence[Finding]) -> Severity:
    """worst() of the findings, UNKNOWN when there are none: nothing was judged."""
    return worst(findings) if findings else Severity.UNKNOWN


@dataclass(frozen=True, slots=True)
class CheckResult:
    check: str
    severity: Severity
    summary: str
    findings: tuple[Finding, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)  # JSON-able details

    @property
    def exit_code(self) -> int:
        return int(self.severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.severity.name,
            "exit_code": self.exit_code,
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "data": dict(self.data),
        }


# -------------------------------------------------------------- capabilities


class ClusterReader(Protocol):
    """What the session's backend says about the cluster (read only)."""

    description: str

    async def nodes(self) -> tuple[Node, ...]: ...

    async def jobs(self) -> tuple[Job, ...]: ...

    async def job(self, job_id: int | str) -> Job | None:
        """One job by id, or None when Slurm no longer knows it."""
        ...

    async def job_excluded_nodes(self, job_id: int | str) -> str:
        """The job's own ExcNodeList (``""`` when none). Raises CockpitError when it cannot be read."""
        ...

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        """(state, reason); ("GONE", "") once the job has left Slurm's memory."""
        ...

    async def job_output(self, job: Job, *, stderr: bool = False) -> str:
        """The path the job writes its stdout (stderr) to, as Slurm resolves it: a
        "/dev/null" from ``squeue --json`` (Slurm 22.05, ``sbatch`` without ``-o``) is
        checked with ``scontrol show job``. Raises JobLogError for a job that writes
        nowhere or whose path cannot be trusted."""
        ...

    async def partitions(self) -> tuple[Partition, ...]: ...

    async def topology(self) -> Topology: ...

    async def scheduler_stats(self, metrics_url: str | None = None) -> SchedStats:
        """slurmctld's statistics: ``sdiag`` through the backend's runner, or Slurm 25.11+'s
        ``/metrics/scheduler`` at ``metrics_url``. Raises CockpitError (BackendError,
        CommandFailed, ParseError) when they cannot be read."""
        ...


class NodeProbes(Protocol):
    """Read-only commands on compute nodes and on the Slurm host.

    ``available`` is False where there are no nodes to ask (a replay); then
    every call answers with ``why_not``. A command that would change state
    (scancel, scontrol update, nvidia-smi -r, kill ...) raises UsageError before
    anything runs."""

    description: str
    available: bool
    why_not: str

    async def run(self, node: str, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        """One command on one node. Raises CockpitError when the node cannot be reached."""
        ...

    async def on_nodes(self, nodes: Sequence[str], argv: Sequence[str], *, via: str = "auto",
                       timeout: float | None = None) -> dict[str, ProbeOutput]:
        """The command on each node (``via``: auto, ssh, srun, local); never raises for one node."""
        ...

    async def on_slurm_host(self, argv: Sequence[str], *, timeout: float | None = None) -> ProbeOutput:
        """A read-only command where Slurm's commands run (the login node)."""
        ...

    async def close(self) -> None:
        """Close connections opened for probes (cockpit calls it, not the plugin)."""
        ...


class ActionGate(Protocol):
    """The one gate for every state change (see module docstring)."""

    read_only: bool
    audit_path: str | None

    def plan(self, name: str, targets: Sequence[str], **params: Any) -> Plan:
        """A plan for a catalogued action. Raises UsageError naming the bad value."""
        ...

    def refuse_if_read_only(self, what: str, targets: Sequence[str] = ()) -> None:
        """Raise ReadOnlyError (the refusal audited) before a run of several actions starts."""
        ...

    def custom_plan(self, name: str, title: str, target: str, steps: Sequence[Sequence[str]],
                    kind: str = "job") -> Plan:
        """A plan of several Slurm commands for one target (e.g. requeue excluding a node).
        Raises UsageError for a step that is not a Slurm admin command."""
        ...

    async def execute(self, plan: Plan, *, dry_run: bool = False, note: str = "") -> Outcome:
        """Confirm, audit, run, read back; ``note`` goes on the audit line (why: "validated by ...").
        Raises ReadOnlyError, ConfirmationNeeded, Declined, ConfigError."""
        ...


class SlurmJobs(Protocol):
    """Batch jobs a plugin submits (NCCL tests, pre-flight checks) and follows."""

    async def submit(self, script: str, *, where: str, output_dir: str | None = None) -> int:
        """Submit ``script`` through the gate (``mkdir -p output_dir`` first when given);
        returns the job id. Raises ReadOnlyError, ConfirmationNeeded, Declined, CommandFailed."""
        ...

    async def state(self, job_id: int) -> tuple[str, str]:
        """(state, reason); ("GONE", "") once the job has left squeue."""
        ...

    async def read_output(self, path: str) -> str:
        """The text of a job's output file. Raises CommandFailed when it cannot be read."""
        ...

    async def cancel(self, job_id: int, why: str) -> None:
        """Cancel a job this context submitted (cleanup after a timeout or an abort):
        through the gate, audited, confirmed by the submission itself. Never raises."""
        ...


class GpuSeries(Protocol):
    description: str

    async def node_series(self, node: str, seconds: float = 3600.0) -> dict[str, dict[int, list[tuple[float, float]]]]:
        ...


@dataclass
class CheckContext:
    """What a check may use. Built by cockpit (CLI or TUI), never by plugins."""

    cluster: ClusterReader
    probes: NodeProbes
    jobs: SlurmJobs
    actions: ActionGate
    config: Mapping[str, Any]  # this plugin's [plugins.NAME] table, defaults applied
    read_only: bool = False
    simulated: bool = False  # the demo: everything shown says SIMULATED
    progress: Callable[[str], None] = lambda _msg: None
    # The site's dcgm-exporter series in Prometheus, where [telemetry] prometheus_url is set (else None):
    # ``await ctx.gpu_series.node_series(node, 3600)`` -> {series name: {GPU index: [(t, value)]}},
    # e.g. DCGM_FI_DEV_XID_ERRORS (the LAST Xid, never a count), temperatures, power, throttle
    # reasons, NVLink and PCIe counters (cockpit/telemetry/dcgm.py RUNBOOK_NAMES). Raises
    # BackendError when Prometheus cannot answer. Evidence beside dmesg for gpu-xid,
    # thermal-power and nvlink.
    gpu_series: GpuSeries | None = None


class Check(Protocol):
    name: str  # as typed after "cockpit check"
    description: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare headless flags (argparse). Keep names stable: scripts use them."""
        ...

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        """Run the check. Raise CockpitError subclasses for bad input (exit 3/2)."""
        ...


# -------------------------------------------------------------- contributions


@dataclass(frozen=True, slots=True)
class ConfigKey:
    type: type | tuple[type, ...]
    default: Any
    doc: str


@dataclass(frozen=True, slots=True)
class KeySpec:
    """An app-wide key that opens a plugin screen for what is under the cursor."""

    key: str
    id: str  # stable id, so a keymap can rebind it ("plugin.layout")
    description: str  # the footer's word
    help: str  # the line in the keys screen
    opener: str  # what the key opens: one of the plugin's openers (OpenerSpec), screens or checks
    footer: bool = False  # shown in the footer (80 columns hold one plugin key; ``?`` lists all)


@dataclass(frozen=True)
class Plugin:
    name: str
    description: str
    checks: tuple[Any, ...] = ()  # Check objects
    screens: Mapping[str, str] = field(default_factory=dict)  # name -> "module:Class"
    commands: Mapping[str, str] = field(default_factory=dict)  # palette title -> screen/check/opener
    config: Mapping[str, ConfigKey] = field(default_factory=dict)
    # Actions the plugin can perform; listed so read-only mode can refuse them by name.
    actions: tuple[str, ...] = ()
    keys: tuple[KeySpec, ...] = ()
    # What its keys, palette entries and ``:`` commands open (cockpit/plugins/specs.py).
    openers: tuple[OpenerSpec, ...] = ()


__all__ = [
    "FACTS_NAMESPACE", "Choice", "FormField", "FormSpec", "OpenerSpec", "OpenRefused", "OpenRequest", "ScreenOffers",
    "ACTION_NAMES", "NOT_APPLICABLE", "VERDICT_ORDER", "ActionGate", "ActionSpec", "BackendError", "Check", "CheckContext", "CheckResult", "ClusterReader",
    "ClusterSnapshot", "CockpitError", "CommandFailed", "CommandResult", "CommandTimeout",
    "ConfigError", "ConfigKey", "ConfirmationNeeded", "Declined", "Finding", "GpuTelemetry", "Job",
    "JobGpus", "JobLogError", "JobOutcome", "JobProcess", "KeySpec", "Node", "NodeProbes", "Outcome",
    "Partition", "ParseError", "Placement", "Plan", "Plugin", "ProbeOutput", "ReadOnlyError", "Severity",
    "SlurmJobs", "Step", "TERMINAL_STATES", "TargetResult", "Topology", "UsageError", "check_job_id",
    "collapse", "config_home", "data_home", "expand", "expand_nodes", "gpus_by_node", "node_processes",
    "parse_query_gpu", "path_for", "query_argv", "read_audit", "record_replace", "sanitize", "sbatch_header", "sbatch_value",
    "verdict", "worst",
    "Capture", "LogScan", "METRICS_INDEX", "SchedJudged", "SchedStats", "judge_scheduler", "pending_by_reason",
    "read_capture", "read_sched_stats", "scan_log",
]
