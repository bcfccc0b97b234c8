"""What a probe gets (RunContext) and gives back (ProbeResult), and how it
reaches nodes: through the CheckContext's read-only probes (over SSH, as a
Slurm job step with srun, where Slurm's commands run, or the demo's nodes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cockpit.plugins.api import CheckContext, Finding, ProbeOutput, Severity


@dataclass
class ProbeResult:
    findings: list[Finding] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # lines for the live evidence pane
    facts: dict[str, Any] = field(default_factory=dict)  # variables for later steps
    data: dict[str, Any] = field(default_factory=dict)  # JSON-able details

    def add(self, severity: Severity | str, code: str, title: str, detail: str = "",
            evidence: Sequence[str] = (), fix: str | None = None) -> None:
        sev = Severity[severity] if isinstance(severity, str) else severity
        self.findings.append(Finding(sev, title, code, detail, tuple(evidence), fix))


@dataclass
class RunContext:
    ctx: CheckContext
    job_id: str | None = None
    job: Any = None  # cockpit.models.Job once fetched
    node: str | None = None  # --node
    kernel_logs: tuple[str, ...] = ()  # --kernel-log FILE (post-mortem)
    job_logs: tuple[str, ...] = ()  # --job-log FILE (post-mortem)
    smi_files: tuple[str, ...] = ()  # --nvidia-smi FILE (post-mortem)
    ib_root: str | None = None  # --ib-root DIR: a copy of /sys/class/infiniband
    facts: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    events: Any = None  # callable(str) for live evidence (TUI); None = quiet

    @property
    def config(self):
        return self.ctx.config

    @property
    def nodes(self) -> list[str]:
        """Nodes to probe: --node, else the job's nodes."""
        if self.node:
            return [self.node]
        return list(self.job.nodes) if self.job is not None else []

    def say(self, line: str) -> None:
        self.ctx.progress(line)
        if self.events is not None:
            self.events(line)


async def run_on_nodes(rc: RunContext, nodes: Sequence[str], argv: Sequence[str], via: str = "auto",
                       timeout: float | None = None) -> dict[str, ProbeOutput]:
    """Run a read-only argv on each node through the context's probes (SSH, srun,
    or the demo's simulated nodes); never raises for one node's failure."""
    return await rc.ctx.probes.on_nodes(list(nodes), list(argv), via=via, timeout=timeout)


async def run_on_node(rc: RunContext, node: str, argv: Sequence[str], via: str = "auto",
                      timeout: float | None = None) -> ProbeOutput:
    return (await run_on_nodes(rc, [node], argv, via, timeout))[node]
