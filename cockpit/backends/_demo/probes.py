"""The demo's probe runner: read-only commands answered by the simulated nodes.

Nothing runs on this machine. A command the simulation does not know is
answered as a failed probe that says so, never by a real program."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cockpit.errors import CockpitError
from cockpit.models.actions import ProbeOutput
from cockpit.remote.probes import refuse_mutating
from cockpit.runner import CommandResult


class DemoProbes:
    available = True
    why_not = ""
    description = "demo (simulated nodes)"

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def answer(self, node: str, argv: list[str]) -> CommandResult:
        """The simulated node's answer (stdout, stderr, exit status) to ``argv``."""
        return CommandResult(tuple(argv), 127, b"", f"demo: {argv[0]}: not simulated\n".encode())

    async def run(self, node: str, argv: Sequence[str], *, timeout: float | None = None,
                  stdin: bytes | None = None) -> CommandResult:
        words = refuse_mutating(argv)
        if node and node not in {n.name for n in await self.backend.fetch_nodes()}:
            raise CockpitError(f"ssh {node}: no such node in the demo cluster")
        return self.answer(node, words)

    async def on_nodes(self, nodes: Sequence[str], argv: Sequence[str], *, via: str = "auto",
                       timeout: float | None = None) -> dict[str, ProbeOutput]:
        words = refuse_mutating(argv)
        out = {}
        for n in nodes:
            try:
                r = await self.run(n, words)
            except CockpitError as exc:
                out[n] = ProbeOutput(n, False, "", str(exc))
                continue
            out[n] = ProbeOutput(n, r.ok, r.text(), "" if r.ok else (r.err_text().strip() or f"exit {r.returncode}"))
        return out

    async def on_slurm_host(self, argv: Sequence[str], *, timeout: float | None = None) -> ProbeOutput:
        r = self.answer("", refuse_mutating(argv))
        return ProbeOutput("", r.ok, r.text(), "" if r.ok else (r.err_text().strip() or f"exit {r.returncode}"))

    async def close(self) -> None:
        return None
