"""The demo's probe runner: read-only commands answered by the simulated nodes.

Nothing runs on this machine. A command the simulation does not know is
answered as a failed probe that says so, never by a real program; a command
that would change state is refused before anything is looked at, as the real
probe runner refuses it. The runner also serves where an SSH pool is expected
(``run(node, argv)``, ``settings.fanout_window``, ``discard``, ``close``), so
telemetry, job processes and remote file tails read the simulated nodes too."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from cockpit.backends._demo.nodes import NodeAnswers
from cockpit.errors import BackendError, CockpitError
from cockpit.models.actions import ProbeOutput
from cockpit.remote.probes import refuse_mutating
from cockpit.runner import CommandResult


class DemoProbes:
    available = True
    why_not = ""
    description = "demo (simulated nodes)"

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.settings = SimpleNamespace(fanout_window=64, command_timeout=30.0)  # what fan-out reads of a pool
        self._nodes = NodeAnswers(backend)

    def answer(self, node: str, argv: Sequence[str]) -> CommandResult:
        """The simulated node's answer (stdout, stderr, exit status) to ``argv``;
        ``node`` "" is the host where Slurm's commands run."""
        return self._nodes.answer(node, [str(a) for a in argv])

    def _reach(self, node: str) -> None:
        """Raises CockpitError as SSH would for a node that is not there or does not answer."""
        if not node:
            return
        sim_node = self.backend._sim.nodes.get(node)
        if sim_node is None:
            raise CockpitError(f"ssh {node}: no such node in the demo cluster")
        if sim_node.down or sim_node.not_responding:
            raise BackendError(f"ssh {node}: connect to host {node} port 22: No route to host (simulated)")

    async def run(self, node: str, argv: Sequence[str], *, timeout: float | None = None,
                  stdin: bytes | None = None) -> CommandResult:
        """One read-only command on ``node``. Raises UsageError for one that changes
        state, CockpitError for a node that cannot be reached."""
        words = refuse_mutating(argv)
        self._reach(node)
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

    async def discard(self, host: str) -> None:
        return None

    async def close(self) -> None:
        return None
