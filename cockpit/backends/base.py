"""Protocols every data source implements.

A Backend answers "what does the cluster look like now"; optional
capabilities (JobAdmin, NodeAdmin) are separate Protocols so the UI offers
an action only where the backend can do it.

The Runner seam (argv in, CommandResult out) lives in :mod:`cockpit.runner`:
the CLI backend runs its commands through one, a local subprocess or an SSH
channel. Each backend also brings what acts and probes for it
(``action_executor``, ``probe_runner``): nothing falls back to the local machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology

# The resource kinds a backend fetches; the poller refreshes each on its own interval.
RESOURCE_KINDS = ("nodes", "jobs", "partitions", "topology")


@runtime_checkable
class Backend(Protocol):
    """Read-only view of a cluster."""

    name: str
    description: str  # shown in the header: "slurm-cli on localhost", "demo (simulated)"

    async def version(self) -> str:
        """Slurm version string (``22.05.8``); raise BackendError if unknown."""
        ...

    async def fetch_nodes(self) -> tuple[Node, ...]: ...

    async def fetch_jobs(self) -> tuple[Job, ...]: ...

    async def fetch_partitions(self) -> tuple[Partition, ...]: ...

    async def fetch_topology(self) -> Topology: ...

    async def snapshot(self) -> ClusterSnapshot:
        """Everything at once; a failing part goes into ``errors``, the rest stays."""
        ...

    async def close(self) -> None: ...

    # What acts and probes for this backend: ``action_executor(config)`` runs the
    # gate's steps (None, with ``cannot_act`` saying why, where it cannot act);
    # ``probe_runner(config)`` runs read-only commands on its nodes.
    def action_executor(self, config: object) -> object | None: ...

    def probe_runner(self, config: object) -> object: ...
