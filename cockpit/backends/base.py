"""Protocols every data source implements, and the capabilities it declares.

A Backend answers "what does the cluster look like now" (the core Protocol
below). Everything else it can do, it declares once in a frozen
:class:`Capabilities`, one typed Protocol per capability: streaming loads,
accounting (slurmdbd), the scheduler's views (why-pending), job inspection,
the gate's executor and the probe runner. Callers ask the capability
(``backend.capabilities().accounting``), never ``getattr(backend, ...)``: a
capability that is None is one the backend does not have, and the UI offers
nothing that needs it. k9s checks a resource's verbs the same way before it
offers a key; Harlequin's adapters implement typed interfaces.

The Runner seam (argv in, CommandResult out) lives in :mod:`cockpit.runner`:
the CLI backend runs its commands through one, a local subprocess or an SSH
channel. Nothing falls back to the local machine.

Backends are found through the ``cockpit.backends`` entry points
(:mod:`cockpit.backends.registry`), so a third-party backend installs like a plugin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology

# The resource kinds a backend fetches; the poller refreshes each on its own interval.
RESOURCE_KINDS = ("nodes", "jobs", "partitions", "topology")


@runtime_checkable
class SnapshotStreaming(Protocol):
    """Loads that arrive in parts: each item is (the records so far, complete?), so the
    first screen shows before a 100k-job load has ended."""

    def stream_nodes(self) -> AsyncIterator[tuple[tuple[Node, ...], bool]]: ...

    def stream_jobs(self) -> AsyncIterator[tuple[tuple[Job, ...], bool]]: ...


@runtime_checkable
class AccountingOffer(Protocol):
    """slurmdbd's views (sacct, sacctmgr, sshare, assoc_mgr)."""

    accounting_why: str  # why accounting() gave None, in one line

    async def accounting(self) -> Any:
        """The accounting reader, or None where the cluster has no slurmdbd
        (``accounting_why`` says so). Raises BackendError when Slurm cannot be asked."""
        ...


@runtime_checkable
class SchedulingOffer(Protocol):
    """sprio, reservations, one job's detail, ``squeue --start``: why a job waits."""

    async def scheduling(self) -> Any:
        """The scheduling reader, or None. Raises BackendError when Slurm cannot be asked."""
        ...


@runtime_checkable
class JobInspection(Protocol):
    """Questions about one job that the snapshot does not answer."""

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        """(state, reason); ("GONE", "") once Slurm forgot the job."""
        ...

    async def job_excluded_nodes(self, job_id: int | str) -> str: ...


@runtime_checkable
class JobOutputPaths(Protocol):
    """Where a job writes, as ``scontrol show job`` says (squeue says /dev/null on 22.05)."""

    async def job_output_paths(self, job_id: int | str) -> dict[str, tuple[str, ...]]: ...


@runtime_checkable
class JobLookup(Protocol):
    """One job without fetching the whole queue."""

    async def fetch_job(self, job_id: int | str) -> Job | None: ...


@runtime_checkable
class ExecutorOffer(Protocol):
    """What runs the gate's steps (cockpit.core.actions) for this backend; None where
    it cannot act (``Capabilities.cannot_act`` says why)."""

    def action_executor(self, config: object) -> Any | None: ...


@runtime_checkable
class SchedulerStats(Protocol):
    """slurmctld's own statistics (sdiag): scheduler health."""

    async def fetch_sched_stats(self) -> Any: ...


@runtime_checkable
class UnreadRecords(Protocol):
    """Records the last load of each kind could not read, one warning each (never dropped
    in silence): the poller puts them in every snapshot's errors."""

    unread: dict[str, tuple[str, ...]]


@runtime_checkable
class ProbeRunnerOffer(Protocol):
    """Read-only commands on the backend's nodes (nvidia-smi, dmesg, py-spy)."""

    def probe_runner(self, config: object) -> Any: ...


@dataclass(frozen=True)
class Capabilities:
    """What one backend can do beyond the core Protocol; None: it cannot."""

    streaming: SnapshotStreaming | None = None
    accounting: AccountingOffer | None = None
    scheduling: SchedulingOffer | None = None
    inspection: JobInspection | None = None
    output_paths: JobOutputPaths | None = None
    lookup: JobLookup | None = None
    executor: ExecutorOffer | None = None
    probes: ProbeRunnerOffer | None = None
    scheduler_stats: SchedulerStats | None = None
    unread: UnreadRecords | None = None
    simulated: bool = False  # every record is made up (the demo): SIMULATED on every screen
    cannot_act: str = ""  # why the executor is missing or gives None, in one line

    @classmethod
    def by_type(cls, obj: object, *, simulated: bool = False) -> Capabilities:
        """The capabilities ``obj`` implements, each checked against its Protocol: for
        a backend that does everything itself (and for test doubles)."""
        def have(proto: type) -> Any:
            return obj if isinstance(obj, proto) else None

        return cls(streaming=have(SnapshotStreaming), accounting=have(AccountingOffer),
                   scheduling=have(SchedulingOffer), inspection=have(JobInspection),
                   output_paths=have(JobOutputPaths), lookup=have(JobLookup),
                   executor=have(ExecutorOffer), probes=have(ProbeRunnerOffer),
                   scheduler_stats=have(SchedulerStats), unread=have(UnreadRecords), simulated=simulated,
                   cannot_act=str(getattr(obj, "cannot_act", "")))


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

    def capabilities(self) -> Capabilities:
        """What else this backend can do, declared once (the same object every call)."""
        ...


def fetcher(backend: Backend, kind: str) -> Any:
    """The core fetch of one resource kind (``fetch_nodes`` for "nodes")."""
    return {"nodes": backend.fetch_nodes, "jobs": backend.fetch_jobs,
            "partitions": backend.fetch_partitions, "topology": backend.fetch_topology}[kind]


def streamer(caps: Capabilities, kind: str) -> Any:
    """The streaming load of ``kind`` where the backend streams it, else None."""
    s = caps.streaming
    if s is None:
        return None
    return {"nodes": s.stream_nodes, "jobs": s.stream_jobs}.get(kind)
