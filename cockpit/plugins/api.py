"""The plugin API shared by every plugin (NCCL, layout, runbooks, site plugins).

A plugin is an object exposed through the ``cockpit.plugins`` entry-point group.
It contributes:

* **checks**: named, runnable from the TUI and headless (``cockpit check NAME``),
  each returning a :class:`CheckResult` with findings and a severity that maps
  to the monitoring-plugin exit codes 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN;
* **screens**: import paths (``"pkg.module:ScreenClass"``) that only the TUI
  imports, so headless paths never import Textual;
* **commands** for the command palette (title -> screen name or check name);
* **config keys** under ``[plugins.NAME]``, declared with defaults and docs so
  config validation can name a bad key.

Plugins never call Slurm or SSH directly: they get a :class:`CheckContext`
holding the backend, runners and the actions layer (confirmation, audit,
read-only), so everything they do is testable and refused in read-only mode.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol


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


def worst(findings: Sequence[Finding], default: Severity = Severity.OK) -> Severity:
    """The severity of a set of findings. UNKNOWN ranks below CRIT but above WARN."""
    order = {Severity.OK: 0, Severity.WARN: 1, Severity.UNKNOWN: 2, Severity.CRIT: 3}
    sev = default
    for f in findings:
        if order[f.severity] > order[sev]:
            sev = f.severity
    return sev


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


@dataclass
class CheckContext:
    """What a check may use. Built by cockpit (CLI or TUI), never by plugins."""

    backend: Any  # cockpit.backends.base.Backend
    config: Mapping[str, Any]  # this plugin's [plugins.NAME] table, defaults applied
    runner: Any = None  # cockpit.backends.base.Runner on the Slurm host (local or SSH)
    actions: Any = None  # cockpit.core.actions.Actions (confirm/audit/read-only)
    fanout: Any = None  # callable to run a command on nodes (SSH/srun), when available
    read_only: bool = False
    progress: Callable[[str], None] = lambda _msg: None


class Check(Protocol):
    name: str  # as typed after "cockpit check"
    description: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare headless flags (argparse). Keep names stable: scripts use them."""
        ...

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        """Run the check. Raise CockpitError subclasses for bad input (exit 3/2)."""
        ...


@dataclass(frozen=True, slots=True)
class ConfigKey:
    type: type | tuple[type, ...]
    default: Any
    doc: str


@dataclass(frozen=True)
class Plugin:
    name: str
    description: str
    checks: tuple[Any, ...] = ()  # Check objects
    screens: Mapping[str, str] = field(default_factory=dict)  # name -> "module:Class"
    commands: Mapping[str, str] = field(default_factory=dict)  # palette title -> screen/check
    config: Mapping[str, ConfigKey] = field(default_factory=dict)
    # Actions the plugin can perform; listed so read-only mode can refuse them by name.
    actions: tuple[str, ...] = ()
