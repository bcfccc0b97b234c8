"""What a probe gets (RunContext) and gives back (ProbeResult), and how it
reaches nodes: over SSH (the fan-out pool in CheckContext.fanout), as a Slurm
job step (srun through the Runner), or locally (the Runner itself)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cockpit.errors import CockpitError
from cockpit.plugins.api import CheckContext, Finding, Severity


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


@dataclass(frozen=True, slots=True)
class NodeOutput:
    node: str
    ok: bool
    text: str
    error: str = ""


def _via(rc: RunContext, via: str) -> str:
    if via != "auto":
        return via
    return "ssh" if rc.ctx.fanout is not None else "local"


async def run_on_nodes(rc: RunContext, nodes: Sequence[str], argv: Sequence[str], via: str = "auto",
                       timeout: float | None = None) -> dict[str, NodeOutput]:
    """Run argv on each node; never raises for one node's failure (it becomes ok=False)."""
    how = _via(rc, via)
    out: dict[str, NodeOutput] = {}
    if how == "ssh":
        if rc.ctx.fanout is None:
            return {n: NodeOutput(n, False, "", "no SSH fan-out available") for n in nodes}
        from cockpit.remote.fanout import fanout

        res = await fanout(rc.ctx.fanout, nodes, list(argv), timeout=timeout, keep_connections=True)
    elif how == "srun":
        from cockpit.remote.srun import srun_fanout

        try:
            res = await srun_fanout(rc.ctx.runner, nodes, list(argv), timeout=timeout)
        except CockpitError as exc:
            return {n: NodeOutput(n, False, "", str(exc)) for n in nodes}
    else:
        if rc.ctx.runner is None:
            return {n: NodeOutput(n, False, "", "no runner for local commands") for n in nodes}
        for n in nodes:
            try:
                r = await rc.ctx.runner.run(list(argv))
                out[n] = NodeOutput(n, r.returncode == 0, r.text(), "" if r.returncode == 0 else (r.err_text().strip() or f"exit {r.returncode}"))
            except CockpitError as exc:
                out[n] = NodeOutput(n, False, "", str(exc))
        return out
    for n, r in res.items():
        text = r.stdout.decode("utf-8", "replace")
        err = r.error or ("" if r.returncode == 0 else (r.stderr.decode("utf-8", "replace").strip() or f"exit {r.returncode}"))
        out[n] = NodeOutput(n, r.ok, text, err)
    return out


async def run_on_node(rc: RunContext, node: str, argv: Sequence[str], via: str = "auto",
                      timeout: float | None = None) -> NodeOutput:
    return (await run_on_nodes(rc, [node], argv, via, timeout))[node]
