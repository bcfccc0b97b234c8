"""Collect GPU telemetry from nodes over SSH: the function the TUI and
``cockpit gpus`` call.

    collector = TelemetryCollector(SshSettings.from_config(cfg))
    data = await collector.telemetry_for(["node01", "node02"])
    # {("node01", 0): GpuTelemetry(...), ...}; collector.errors: {node: "one line"}

Connections stay open between polls (one per node, window-limited), so a
poll of the nodes in view costs one channel per node, not one handshake.
Poll only the nodes in view or asked for, on [refresh] telemetry's interval.
"""

from __future__ import annotations

from collections.abc import Iterable

from cockpit.errors import ParseError
from cockpit.remote.fanout import HostResult, fanout
from cockpit.remote.pool import SshPool
from cockpit.remote.settings import SshSettings
from cockpit.telemetry.nvsmi import GpuTelemetry, parse_query_gpu, query_argv

Telemetry = dict[tuple[str, int], GpuTelemetry]


class TelemetryCollector:
    """Polls nvidia-smi on nodes through a pool it keeps between polls."""

    def __init__(self, settings: SshSettings, *, pool: SshPool | None = None, binary: str = "nvidia-smi") -> None:
        self.settings = settings
        self.pool = pool or SshPool(settings)
        self._own_pool = pool is None
        self.binary = binary
        self.errors: dict[str, str] = {}  # node -> why it has no telemetry (last poll)

    async def telemetry_for(self, nodes: Iterable[str], progress=None) -> Telemetry:
        """{(node, gpu_index): GpuTelemetry} for the nodes that answered.

        Never raises for a node: a dead node, a missing nvidia-smi or output
        that cannot be parsed lands in ``self.errors[node]`` instead.
        """
        results = await fanout(self.pool, nodes, query_argv(self.binary), keep_connections=True, progress=progress)
        out: Telemetry = {}
        self.errors = {}
        for node, res in results.items():
            try:
                for gpu in _parse(res):
                    out[(node, gpu.index)] = gpu
            except ParseError as exc:
                self.errors[node] = str(exc)
            except _NodeFailed as exc:
                self.errors[node] = str(exc)
        return out

    async def close(self) -> None:
        if self._own_pool:
            await self.pool.close()


class _NodeFailed(Exception):
    pass


def _parse(res: HostResult) -> tuple[GpuTelemetry, ...]:
    if res.error is not None:
        raise _NodeFailed(res.error)
    if res.returncode != 0:
        first = (res.stderr or res.stdout).decode("utf-8", "replace").strip().splitlines()
        why = first[0] if first else f"exit status {res.returncode}"
        raise _NodeFailed(f"{res.host}: nvidia-smi failed (exit {res.returncode}): {why}")
    return parse_query_gpu(res.stdout.decode("utf-8", "replace"), source=f"nvidia-smi on {res.host}")


async def telemetry_for(nodes: Iterable[str], *, config=None, settings: SshSettings | None = None) -> Telemetry:
    """One-shot form: a fresh pool, one poll, closed again. Prefer a
    TelemetryCollector for repeated polls (it keeps connections)."""
    if settings is None:
        if config is None:
            from cockpit.config import load_config

            config = load_config()
        settings = SshSettings.from_config(config)
    collector = TelemetryCollector(settings)
    try:
        return await collector.telemetry_for(nodes)
    finally:
        await collector.close()
