"""Read-only probes on real nodes: SSH fan-out, srun steps, or the Slurm host.

:class:`NodeProbeRunner` is what the CLI backend brings as its probe runner
(``probe_runner``). It refuses any command that would change state
(:func:`cockpit.models.actions.mutating_reason`) before anything runs: those
are actions, and go through the gate. The SSH pool is opened on first use and
closed with :meth:`close`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cockpit.errors import CockpitError, UsageError
from cockpit.models.actions import ProbeOutput, mutating_reason
from cockpit.remote.fanout import HostResult
from cockpit.runner import CommandResult


def refuse_mutating(argv: Sequence[str]) -> list[str]:
    """``argv`` as a list; raises UsageError naming the program when it would change state."""
    why = mutating_reason(argv)
    if why:
        raise UsageError(f"a probe runs read-only commands only: {why} ({' '.join(map(str, argv[:3]))})")
    return [str(a) for a in argv]


def answer_of(node: str, r: HostResult | CommandResult) -> ProbeOutput:
    text = r.stdout.decode("utf-8", "replace")
    err = getattr(r, "error", None) or ("" if r.returncode == 0 else
                                        (r.stderr.decode("utf-8", "replace").strip() or f"exit {r.returncode}"))
    return ProbeOutput(node, r.returncode == 0 and not getattr(r, "error", None), text, err)


class NodeProbeRunner:
    """Probes through SSH to the nodes (``[ssh]`` settings), srun, or the Slurm Runner."""

    available = True
    why_not = ""

    def __init__(self, settings: Any, slurm_runner: Any, bin_dir: str = "") -> None:
        self._settings = settings
        self._runner = slurm_runner
        self._bin_dir = bin_dir
        self._pool: Any = None
        self.description = "ssh to the nodes"

    def pool(self) -> Any:
        """The SSH pool to the nodes, opened on first use."""
        if self._pool is None:
            from cockpit.remote.pool import SshPool

            self._pool = SshPool(self._settings)
        return self._pool

    async def run(self, node: str, argv: Sequence[str], *, timeout: float | None = None,
                  stdin: bytes | None = None) -> CommandResult:
        """One read-only command on ``node`` over SSH. Raises CockpitError (unreachable) or UsageError."""
        return await self.pool().run(node, refuse_mutating(argv), timeout=timeout, stdin=stdin)

    async def on_nodes(self, nodes: Sequence[str], argv: Sequence[str], *, via: str = "auto",
                       timeout: float | None = None) -> dict[str, ProbeOutput]:
        """Never raises for one node's failure: its answer says why (UsageError for a mutating argv)."""
        words = refuse_mutating(argv)
        how = "ssh" if via == "auto" else via
        if how == "ssh":
            from cockpit.remote.fanout import fanout

            res = await fanout(self.pool(), nodes, words, timeout=timeout, keep_connections=True)
            return {n: answer_of(n, r) for n, r in res.items()}
        if how == "srun":
            from cockpit.remote.srun import srun_fanout

            try:
                res = await srun_fanout(self._runner, nodes, words, timeout=timeout)
            except CockpitError as exc:
                return {n: ProbeOutput(n, False, "", str(exc)) for n in nodes}
            return {n: answer_of(n, r) for n, r in res.items()}
        if how != "local":
            raise UsageError(f"bad probe transport {via!r} (auto, ssh, srun, local)")
        # "local": where Slurm's commands run, for nodes that share its filesystem.
        out = {}
        for n in nodes:
            out[n] = await self._here(n, words, timeout)
        return out

    async def on_slurm_host(self, argv: Sequence[str], *, timeout: float | None = None) -> ProbeOutput:
        return await self._here("", refuse_mutating(argv), timeout)

    async def _here(self, label: str, words: list[str], timeout: float | None) -> ProbeOutput:
        if words and words[0] in ("scontrol", "squeue", "sinfo") and self._bin_dir:
            import os

            words = [os.path.join(self._bin_dir, words[0]), *words[1:]]
        try:
            return answer_of(label, await self._runner.run(words, timeout=timeout))
        except CockpitError as exc:
            return ProbeOutput(label, False, "", str(exc))

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


class NoProbes:
    """For a backend with no nodes to ask (a replay): every probe says why."""

    available = False

    def __init__(self, why: str) -> None:
        self.why_not = why
        self.description = f"no probes: {why}"

    async def run(self, node: str, argv: Sequence[str], *, timeout: float | None = None,
                  stdin: bytes | None = None) -> CommandResult:
        refuse_mutating(argv)
        raise UsageError(f"{node}: {self.why_not}")

    async def on_nodes(self, nodes: Sequence[str], argv: Sequence[str], *, via: str = "auto",
                       timeout: float | None = None) -> dict[str, ProbeOutput]:
        refuse_mutating(argv)
        return {n: ProbeOutput(n, False, "", self.why_not) for n in nodes}

    async def on_slurm_host(self, argv: Sequence[str], *, timeout: float | None = None) -> ProbeOutput:
        refuse_mutating(argv)
        return ProbeOutput("", False, "", self.why_not)

    async def close(self) -> None:
        return None
