"""What a probe gets (RunContext) and gives back (ProbeResult), and how it
reaches nodes: through the CheckContext's read-only probes (over SSH, as a
Slurm job step with srun, where Slurm's commands run, or the demo's nodes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cockpit.plugins.api import CheckContext, Finding, ProbeOutput, Severity


class NotApplicable(Exception):
    """A probe or action that cannot apply to this run: it needs a live node or job
    and the run reads files alone (a post-mortem). The step is reported as n/a and
    adds no finding, so it never raises the verdict."""


@dataclass
class ProbeResult:
    findings: list[Finding] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # lines for the live evidence pane
    facts: dict[str, Any] = field(default_factory=dict)  # variables for later steps
    data: dict[str, Any] = field(default_factory=dict)  # JSON-able details
    sources: list[str] = field(default_factory=list)  # "<path>: <format detected>", once per file read

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
    nvlink_files: tuple[str, ...] = ()  # --nvlink FILE: saved `nvidia-smi nvlink --status`
    pyspy_files: tuple[str, ...] = ()  # --py-spy FILE: saved `py-spy dump` output
    slurm_files: tuple[str, ...] = ()  # --slurm-file FILE: saved seff/sacct/sshare/sdiag/reservations
    facts: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    events: Any = None  # callable(str) for live evidence (TUI); None = quiet

    @property
    def config(self):
        return self.ctx.config

    @property
    def files_only(self) -> bool:
        """A post-mortem: files were given and no job. Nothing connects anywhere;
        --node only names the node the files came from."""
        return not self.job_id and bool(self.kernel_logs or self.job_logs or self.smi_files or self.ib_root
                                        or self.nvlink_files or self.pyspy_files or self.slurm_files)

    def live(self, what: str) -> None:
        """Raise NotApplicable when ``what`` needs a live node but the run reads files alone."""
        if self.files_only:
            raise NotApplicable(f"{what}: needs a live node or job; this run reads files only")

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
    or the demo's simulated nodes); never raises for one node's failure.
    Raises NotApplicable in a run on files alone: nothing connects then."""
    rc.live(str(list(argv)[0]) if argv else "a command")
    return await rc.ctx.probes.on_nodes(list(nodes), list(argv), via=via, timeout=timeout)


async def run_on_node(rc: RunContext, node: str, argv: Sequence[str], via: str = "auto",
                      timeout: float | None = None) -> ProbeOutput:
    return (await run_on_nodes(rc, [node], argv, via, timeout))[node]


async def run_on_slurm_host(rc: RunContext, argv: Sequence[str], timeout: float | None = None) -> ProbeOutput:
    """A read-only command where Slurm's commands run. Raises NotApplicable in a run on files alone."""
    rc.live(str(list(argv)[0]) if argv else "a command")
    return await rc.ctx.probes.on_slurm_host(list(argv), timeout=timeout)
