"""GPU telemetry through the backend's probe runner: one ``nvidia-smi --query-gpu``
per node (``probes.on_nodes``), parsed by :func:`cockpit.telemetry.nvsmi.parse_query_gpu`.

The probe runner decides how the nodes are reached: SSH fan-out for a real
cluster, the simulated nodes for the demo. This is what the TUI's poller reads
for its ``telemetry`` node kind (cockpit.core.poller.NodeKind).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cockpit.errors import CockpitError, ParseError
from cockpit.telemetry.nvsmi import GpuTelemetry, parse_query_gpu, query_argv

Telemetry = dict[tuple[str, int], GpuTelemetry]


@dataclass(frozen=True)
class TelemetryReading:
    """One read of some nodes: their GPUs' telemetry, and why a node has none."""

    readings: Telemetry = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # node -> one line


async def read_telemetry(probes: Any, nodes: Sequence[str], *, binary: str = "nvidia-smi",
                         timeout: float | None = None) -> TelemetryReading:
    """nvidia-smi on each node through ``probes`` (a NodeProbes).

    Never raises for a node: a dead node, a missing nvidia-smi or output that
    cannot be parsed is that node's entry in ``errors``. A probe runner that
    fails as a whole (CockpitError) makes every node say so."""
    nodes = list(nodes)
    try:
        answers = await probes.on_nodes(nodes, query_argv(binary), timeout=timeout)
    except CockpitError as exc:
        return TelemetryReading({}, {n: str(exc) for n in nodes})
    out: Telemetry = {}
    errors: dict[str, str] = {}
    for node in nodes:
        answer = answers.get(node)
        if answer is None:
            errors[node] = f"{node}: no answer from the probe runner"
        elif not answer.ok:
            why = _first_line(answer.error) or "nvidia-smi failed"
            errors[node] = why if node in why else f"{node}: {why}"
        else:
            rows: list[str] = []  # a GPU row that cannot be read costs that GPU only
            try:
                for gpu in parse_query_gpu(answer.text, source=f"nvidia-smi on {node}", warnings=rows):
                    out[(node, gpu.index)] = gpu
            except ParseError as exc:
                errors[node] = str(exc)
            if rows:
                errors[node] = "; ".join(rows)
    return TelemetryReading(out, errors)


def _first_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else ""
