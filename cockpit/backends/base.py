"""Protocols every data source implements, and the Runner seam.

A Backend answers "what does the cluster look like now"; optional
capabilities (JobAdmin, NodeAdmin) are separate Protocols so the UI offers
an action only where the backend can do it.

Nothing above a Runner may assume a local process: the CLI backend runs its
commands through a Runner, which is a local subprocess today and an SSH
channel later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology

# The resource kinds a backend fetches; the poller refreshes each on its own interval.
RESOURCE_KINDS = ("nodes", "jobs", "partitions", "topology")


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def err_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@runtime_checkable
class Runner(Protocol):
    """Runs one program given as an argv list (never a shell string)."""

    description: str

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, stdin: bytes | None = None
    ) -> CommandResult:
        """Run argv; raise CommandNotFound / CommandTimeout. A non-zero exit is
        returned, not raised: callers decide whether it is an error."""
        ...


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
