"""Join GPU telemetry to Slurm's GPU index -> job mapping.

Slurm knows which job holds GPU 3 on node07; the node knows whether GPU 3 is
busy. Together: "job 123 (alice) GPU 3: 0% util for 20 min". The low-util
age needs history, so :class:`LowUtilTracker` keeps, per (node, GPU, job),
the time utilisation was first seen below the threshold.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from cockpit.models import ClusterSnapshot, Job
from cockpit.telemetry.nvsmi import GpuTelemetry

Key = tuple[str, int]  # (node, GPU index)


def gpu_owners(snapshot: ClusterSnapshot) -> dict[Key, Job]:
    """(node, GPU index) -> the running job that Slurm says holds it."""
    owners: dict[Key, Job] = {}
    for job in snapshot.jobs:
        if job.state != "RUNNING":
            continue
        for g in job.gpus:
            for idx in g.indexes:
                owners[(g.node, idx)] = job
    return owners


class LowUtilTracker:
    """Remembers since when each allocated GPU has been below ``threshold`` % util."""

    def __init__(self, threshold: float = 5.0) -> None:
        self.threshold = threshold
        self._since: dict[tuple[str, int, int], float] = {}

    def update(self, telemetry: Mapping[Key, GpuTelemetry], owners: Mapping[Key, Job], now: float | None = None) -> None:
        """Record one poll. A GPU that is busy again, freed, or now held by
        another job starts over; a GPU with no reading keeps its history."""
        now = time.time() if now is None else now
        live: set[tuple[str, int, int]] = set()
        for key, job in owners.items():
            k = (key[0], key[1], job.job_id)
            live.add(k)
            t = telemetry.get(key)
            if t is None or t.util_gpu is None:
                continue
            if t.util_gpu < self.threshold:
                self._since.setdefault(k, now)
            else:
                self._since.pop(k, None)
        for k in list(self._since):
            if k not in live:
                del self._since[k]

    def since(self, node: str, index: int, job_id: int) -> float | None:
        return self._since.get((node, index, job_id))


@dataclass(frozen=True, slots=True)
class GpuRow:
    """One GPU as the GPU view and ``cockpit gpus`` show it."""

    node: str
    index: int
    job_id: int | None = None
    job_display: str | None = None
    user: str | None = None
    telemetry: GpuTelemetry | None = None
    low_util_since: float | None = None
    node_state: str = ""

    def describe(self, now: float | None = None) -> str:
        """``job 123 (alice) GPU 3: 0% util for 20 min`` (or the idle/unknown form)."""
        t = self.telemetry
        util = "util unknown" if t is None or t.util_gpu is None else f"{t.util_gpu:g}% util"
        if t is not None and t.stale:
            util += " (stale, not live)"
        if self.job_id is not None:
            text = f"job {self.job_display} ({self.user}) GPU {self.index}: {util}"
        else:
            text = f"{self.node} GPU {self.index} (free): {util}"
        if self.low_util_since is not None:
            mins = int(((time.time() if now is None else now) - self.low_util_since) // 60)
            text += f" for {mins} min"
        return text


def join(
    snapshot: ClusterSnapshot,
    telemetry: Mapping[Key, GpuTelemetry],
    tracker: LowUtilTracker | None = None,
    nodes: set[str] | None = None,
) -> list[GpuRow]:
    """Rows for every GPU Slurm lists (and any extra GPU a node reports),
    ordered by node then index. ``nodes`` limits the rows to those nodes."""
    owners = gpu_owners(snapshot)
    keys: set[Key] = set(telemetry)
    states = {}
    for n in snapshot.nodes:
        states[n.name] = n.display_state
        keys.update((n.name, i) for i in range(n.gpu_total))
    rows = []
    for node, idx in sorted(keys):
        if nodes is not None and node not in nodes:
            continue
        job = owners.get((node, idx))
        since = tracker.since(node, idx, job.job_id) if (tracker and job) else None
        rows.append(GpuRow(
            node, idx,
            job.job_id if job else None, job.display_id if job else None, job.user if job else None,
            telemetry.get((node, idx)), since, states.get(node, ""),
        ))
    return rows
