"""The pyslurm backend: Slurm's C API through pyslurm, mapped into cockpit.models.

pyslurm keeps a branch per Slurm release and must match the cluster's Slurm
major.minor, so :func:`probe` decides whether it may be used at all: pyslurm
imports (in the worker), cockpit has an adapter for its generation
(:mod:`cockpit.backends.pyslurm_compat`: 22.5, 24.11, 25.11), and the
controller's version, read through pyslurm itself, has the same major.minor.

Every pyslurm call runs in the pyslurm worker process
(:mod:`cockpit.backends.pyslurm_worker`; a thread only where that process
cannot start, with a warning): pyslurm holds the GIL while libslurm waits for
slurmctld, which in this process would stall the keys. Jobs and nodes arrive as
deltas and are kept in stores as the CLI backend keeps them.

What pyslurm has no call for comes from the CLI backend (local commands: pyslurm
only talks to the Slurm of this machine): the topology, the probes, a job's
ExcNodeList, and the actions listed in :mod:`cockpit.backends.pyslurm_exec`.

If pyslurm stops matching at run time (a Slurm upgrade under a running
cockpit: the controller's version differs, libslurm no longer loads, the
protocol version is refused), the backend switches to the CLI backend for the
rest of the session and says so in ``description`` (the header) and in the
snapshot's warnings, rather than failing.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from cockpit.backends._deltafeed import DeltaFeed, settled
from cockpit.backends.base import Capabilities, streamer
from cockpit.backends.pyslurm_map import major_minor
from cockpit.backends.pyslurm_worker import Failed, PyslurmWorker, ThreadWorker, WorkerFailed
from cockpit.backends.slurm_delta import store_for
from cockpit.errors import BackendError, CockpitError, ParseError
from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology
from cockpit.models.unread import is_unread

SOURCE = "pyslurm"
MAX_WORKER_FAILURES = 3  # then the calls run in a thread of this process
_SWITCH_CAUSES = ("mismatch", "unusable")


@dataclass(frozen=True)
class Probe:
    """What :func:`probe` found; ``why`` is one sentence."""

    usable: bool
    why: str
    pyslurm: str = ""  # pyslurm's version, "" when it did not load
    generation: str = ""  # the adapter's generation ("22.05", "24.11", "25.11")
    slurm: str = ""  # the controller's version as pyslurm read it
    worker: Any = None  # the worker that answered (handed to the backend)


def installed_version() -> str:
    """pyslurm's version from its package metadata, without importing it ("" if absent)."""
    try:
        from importlib.metadata import version

        return version("pyslurm")
    except Exception:  # noqa: BLE001 - not installed, or broken metadata
        return ""


async def probe(cli_backend: Any = None, remote: bool = False, worker: Any = None) -> Probe:
    """May pyslurm be used here? Never raises: every failure becomes ``why``.

    ``cli_backend`` is not asked: the controller's version comes from pyslurm
    itself, not from the client commands. ``worker``: where to ask (default: a new worker process; the caller owns it
    when the probe says usable, and it is closed here otherwise)."""
    if remote:
        return Probe(False, "pyslurm only works on a host of the cluster, and cockpit reaches this one over SSH")
    if worker is None and not installed_version():
        return Probe(False, "pyslurm is not installed")
    worker = worker if worker is not None else PyslurmWorker()
    result = await _ask(worker)
    if not result.usable:
        await worker.close()
    return result


async def _ask(worker: Any) -> Probe:
    try:
        info = await worker.call("info")
    except Failed as exc:
        return Probe(False, str(exc))
    except (WorkerFailed, CockpitError) as exc:
        return Probe(False, f"pyslurm could not be asked: {exc}")
    have, gen = info["pyslurm"], info["generation"]
    try:
        slurm = await worker.call("version")
    except Failed as exc:
        if exc.cause == "mismatch":
            return Probe(False, str(exc), have, gen)
        return Probe(False, f"the controller's version is unknown ({exc}), so pyslurm {have} cannot be matched",
                     have, gen)
    except (WorkerFailed, CockpitError) as exc:
        return Probe(False, f"pyslurm could not be asked: {exc}", have, gen)
    return Probe(True, f"pyslurm {have} matches Slurm {slurm} (the controller's version, read through pyslurm; "
                       f"adapter {gen})", have, gen, slurm, worker)


class PyslurmBackend:
    """Backend protocol through pyslurm (local only; see :func:`probe`)."""

    name = "pyslurm"

    def __init__(self, cli: Any = None, worker: Any = None, probed: Probe | None = None) -> None:
        """``cli``: a SlurmCliBackend (local) for what pyslurm has no call for, and
        to switch to; ``worker``: a PyslurmWorker or ThreadWorker (default: a new
        worker process); ``probed``: the probe that chose this backend."""
        self._cli = cli
        self.probed = probed
        self.worker = worker if worker is not None else (probed.worker if probed and probed.worker else PyslurmWorker())
        self.warnings: list[str] = []
        self.unread: dict[str, tuple[str, ...]] = {}  # kind -> records its last load left out
        self.switched = ""  # why the CLI backend answers instead, once pyslurm stopped matching
        self._worker_failures = 0
        self._stores = {"jobs": store_for("jobs"), "nodes": store_for("nodes")}
        self._synced = {"jobs": False, "nodes": False}  # the worker's differ matches our store
        self._caps: Capabilities | None = None

    @property
    def description(self) -> str:
        if self.switched:
            return f"slurm-cli on localhost (switched from pyslurm: {self.switched})"
        version = self.probed.pyslurm if self.probed else ""
        return f"pyslurm {version} on localhost".replace("  ", " ")

    # -- the calls -------------------------------------------------------------
    def _switch(self, why: str) -> None:
        if not self.switched:
            self.switched = why  # snapshot() and the description say so from now on
            self.worker.kill()

    def _worker_failed(self, exc: WorkerFailed) -> None:
        self._worker_failures += 1
        self._synced = {k: False for k in self._synced}
        if self._worker_failures >= MAX_WORKER_FAILURES and not isinstance(self.worker, ThreadWorker):
            self.worker.kill()
            self.worker = ThreadWorker()
            self.warnings.append(f"{exc}; pyslurm now runs in a thread of this process (keys may stall)")

    def _failed(self, exc: Failed) -> None:
        """A pyslurm call failed: switch on a mismatch, else one line naming the cause."""
        if exc.cause in _SWITCH_CAUSES:
            self._switch(str(exc))
            return
        raise BackendError(str(exc)) from None

    async def _call(self, op: str, *args: Any) -> Any:
        try:
            return await self.worker.call(op, *args)
        except Failed as exc:
            self._failed(exc)
        except WorkerFailed as exc:
            self._worker_failed(exc)
            raise BackendError(str(exc)) from None
        return None  # switched: the caller asks the CLI backend

    def cli(self) -> Any:
        # pyslurm talks to the Slurm of this machine, so its Slurm commands are local too.
        if self._cli is None:
            from cockpit.backends.slurm_cli import SlurmCliBackend
            from cockpit.runner import LocalRunner

            self._cli = SlurmCliBackend(LocalRunner())
        return self._cli

    # -- Backend protocol ------------------------------------------------------
    async def version(self) -> str:
        if not self.switched:
            version = await self._call("version")
            if not self.switched:
                return version
        return await self.cli().version()

    async def fetch_jobs(self) -> tuple[Job, ...]:
        return await _last(self.stream_jobs())

    async def fetch_nodes(self) -> tuple[Node, ...]:
        return await _last(self.stream_nodes())

    async def stream_jobs(self) -> AsyncIterator[tuple[tuple[Job, ...], bool]]:
        """Yield ``(jobs, complete)``: partial results during a first big load, then
        the complete one. Raises BackendError / ParseError."""
        async for item in self._stream("jobs"):
            yield item

    async def stream_nodes(self) -> AsyncIterator[tuple[tuple[Node, ...], bool]]:
        async for item in self._stream("nodes"):
            yield item

    async def _stream(self, kind: str) -> AsyncIterator[tuple[tuple[Any, ...], bool]]:
        if not self.switched:
            try:
                async for item in self._deltas(kind):
                    yield item
                return
            except Failed as exc:
                self._failed(exc)
        async for item in streamer(self.cli().capabilities(), kind)():
            yield item

    async def _deltas(self, kind: str) -> AsyncIterator[tuple[tuple[Any, ...], bool]]:
        feed = DeltaFeed(await settled(self._stores[kind]))
        reset = not self._synced[kind]
        self._synced[kind] = False
        try:
            async for delta in self.worker.deltas(kind, reset):
                if feed.take(delta):
                    yield await feed.partial(), False
        except WorkerFailed as exc:
            feed.abandon()
            self._worker_failed(exc)
            raise BackendError(str(exc)) from None
        except BaseException:
            feed.abandon()
            raise
        objs = await feed.complete()
        self._synced[kind] = True
        if feed.last is not None:
            del self.warnings[:-100]  # a long TUI session never calls snapshot(), which clears them
            self.warnings.extend(feed.last.warnings)
            # records left out by this load, for the poller's snapshots (as the CLI backend's)
            self.unread[kind] = tuple(w for w in feed.last.warnings if is_unread(w))
        yield objs, True

    async def fetch_partitions(self) -> tuple[Partition, ...]:
        if not self.switched:
            parts = await self._call("partitions")
            if not self.switched:
                return parts
        return await self.cli().fetch_partitions()

    async def fetch_topology(self) -> Topology:
        return await self.cli().fetch_topology()  # pyslurm has no topology API

    # -- acting and probing ----------------------------------------------------
    cannot_act = ""

    def action_executor(self, config: Any) -> Any:
        """pyslurm for what it has a call for, Slurm commands on this machine for the rest."""
        cli_exec = self.cli().action_executor(config)
        if self.switched or self.probed is None:
            return cli_exec
        from cockpit.backends.pyslurm_exec import PyslurmExecutor

        return PyslurmExecutor(self.worker, cli_exec, self.probed.pyslurm, self.probed.generation)

    def probe_runner(self, config: Any) -> Any:
        return self.cli().probe_runner(config)

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        """(state, reason) of one job; ("GONE", "") once Slurm forgot it. Raises BackendError."""
        if not self.switched and str(job_id).isdecimal():
            state = await self._call("job_state", int(job_id))
            if not self.switched:
                return tuple(state)  # type: ignore[return-value]
        return await self.cli().job_state(job_id)

    async def job_excluded_nodes(self, job_id: int | str) -> str:
        return await self.cli().job_excluded_nodes(job_id)

    def capabilities(self) -> Capabilities:
        """pyslurm streams, acts and inspects jobs itself; accounting, the scheduler's
        views, output paths and probes are its CLI twin's (pyslurm has no calls for them)."""
        if self._caps is None:
            twin = self.cli().capabilities()
            self._caps = Capabilities(streaming=self, accounting=twin.accounting, scheduling=twin.scheduling,
                                      inspection=self, output_paths=twin.output_paths, executor=self,
                                      probes=self, scheduler_stats=twin.scheduler_stats, unread=self)
        return self._caps

    async def snapshot(self) -> ClusterSnapshot:
        """Everything at once; a failing part goes into ``errors``. Raises
        BackendError when neither nodes nor jobs could be read."""
        started = time.time()
        self.warnings.clear()
        errors: list[str] = []

        async def part(label: str, coro: Any, empty: Any) -> Any:
            try:
                return await coro
            except (BackendError, ParseError) as exc:
                errors.append(f"{label}: {exc}")
                return empty

        version = await part("version", self.version(), "")
        jobs = await part("jobs", self.fetch_jobs(), None)
        nodes = await part("nodes", self.fetch_nodes(), None)
        if jobs is None and nodes is None:
            raise BackendError(f"cannot read the cluster: {errors[-1]}")
        partitions = await part("partitions", self.fetch_partitions(), ())
        topology = await part("topology", self.fetch_topology(), Topology())
        if self.switched:
            self.warnings[:0] = [f"switched to the slurm-cli backend: {self.switched}"]
            self.warnings.extend(self.cli().warnings)
        return ClusterSnapshot(
            nodes=nodes or (),
            partitions=partitions,
            jobs=jobs or (),
            topology=topology,
            fetched_at=started,
            source=self.description,
            slurm_version=version,
            errors=tuple(errors) + tuple(dict.fromkeys(self.warnings)),
        )

    async def close(self) -> None:
        await self.worker.close()
        if self._cli is not None:
            await self._cli.close()


async def _last(stream: AsyncIterator[tuple[Any, bool]]) -> Any:
    """The complete result of a stream_* iterator."""
    result: Any = ()
    async for result, _complete in stream:
        pass
    return result


__all__ = ["Probe", "PyslurmBackend", "SOURCE", "major_minor", "probe"]
