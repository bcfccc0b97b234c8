"""The CLI backend: squeue/sinfo/scontrol through a Runner (local or SSH).

Which command gives what depends on the Slurm version, so we ask for the
richest source and fall back by capability, not by version number:

* nodes: ``scontrol show node --json`` (23.02+: per-node GPU indexes in
  ``gres_used``), else ``sinfo --json`` (22.05: a flat node list, same fields);
* jobs: ``squeue --json`` (all versions; ``gres_detail`` gives GPU indexes);
* partitions: ``scontrol show partition`` text (22.05 has no partition JSON,
  24.11's lacks the Default flag);
* topology: ``scontrol show topology`` (text in every version).

Each fetch is one controller RPC per resource kind. The raw outputs go through
``on_output`` so ``cockpit record`` can save exactly what was read.

Big outputs (100k jobs are >100 MB of JSON) are parsed in a worker process
(:mod:`cockpit.backends.parseproc`) that answers with deltas, so the UI process
neither holds the GIL for seconds nor rebuilds unchanged jobs; once an output
was big and the Runner is local, the worker runs that command itself. Small
outputs are parsed here, as before; unchanged text outputs (partitions,
topology) are not parsed again. ``stream_jobs``/``stream_nodes`` (used by the
poller when present) yield partial results during a first big load so the
first screen appears before the last job is parsed. If the worker fails the
backend parses in-process and says so in ``warnings``; it never crashes.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from cockpit.backends import slurm_json, slurm_text
from cockpit.backends._deltafeed import DeltaFeed, settled
from cockpit.backends.base import Capabilities
from cockpit.runner import CommandResult
from cockpit.backends.slurm_delta import store_for
from cockpit.backends.slurm_json_common import slurm_errors
from cockpit.backends.slurm_json_nodes import join_gpu_use
from cockpit.backends.parseproc import ParseWorker, WorkerFailed
from cockpit.errors import BackendError, CommandFailed, ParseError
from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology
from cockpit.models.unread import is_unread

# Recorded file name -> argv. The names are the stable layout of a record directory.
COMMANDS: dict[str, tuple[str, ...]] = {
    "version.txt": ("sinfo", "--version"),
    # --states=all: 24.11's squeue --json applies squeue's default state filter and
    # hides the jobs that ended within MinJobAge, which 22.05's lists (and slurmrestd's
    # /jobs on both); the views show them the same on every version.
    "squeue.json": ("squeue", "--all", "--states=all", "--json"),
    "scontrol-nodes.json": ("scontrol", "show", "node", "--json"),
    "sinfo.json": ("sinfo", "--json"),
    "scontrol-partitions.txt": ("scontrol", "show", "partition"),
    "topology.txt": ("scontrol", "show", "topology"),
    "sdiag.txt": ("sdiag",),  # controller health (cockpit check scheduler); not part of a snapshot
}

# Outputs at least this big are parsed in the worker process (~3k jobs in the
# 24.11 shape); below it a process round trip costs more than it saves.
WORKER_THRESHOLD = 4 << 20
TEXT_THREAD_SIZE = 64 << 10  # text outputs this big are parsed in a thread (partitions of ~5k nodes)
MAX_WORKER_FAILURES = 3  # then parse in-process for the rest of the session
_SOURCES = {"squeue.json": ("jobs", "", "squeue --json"),
            "scontrol-nodes.json": ("nodes", "scontrol", "scontrol show node --json"),
            "sinfo.json": ("nodes", "sinfo", "sinfo --json")}

_NO_JSON_HINTS = ("unrecognized option", "invalid option", "unknown option")
_NO_TOPOLOGY_HINTS = ("topology plugin", "no topology", "not configured", "topology/none")


class Unsupported(CommandFailed):
    """This Slurm (or this recording) has no such command or option."""


def _is_unsupported(err: CommandFailed) -> bool:
    if isinstance(err, Unsupported):
        return True
    text = err.stderr.lower()
    return any(h in text for h in _NO_JSON_HINTS)


class SlurmCliBackend:
    name = "slurm-cli"

    def __init__(self, runner, bin_dir: str = "", timeout: float = 30.0, parse_worker: bool | None = None) -> None:
        self.runner = runner
        self.bin_dir = bin_dir
        self.timeout = timeout
        self.description = f"slurm-cli via {getattr(runner, 'description', 'local')}"
        self.on_output: Callable[[str, bytes], None] | None = None
        self._version: str | None = None
        self._node_source: str | None = None  # decided on first fetch
        self.warnings: list[str] = []
        self.unread: dict[str, tuple[str, ...]] = {}  # kind -> records its last parse left out
        self._stderr: dict[str, str] = {}
        # None: the worker parses outputs of at least worker_threshold bytes; True/False: always/never
        self.parse_worker = parse_worker
        self.worker_threshold = WORKER_THRESHOLD
        self.workers: dict[str, ParseWorker] = {}
        self._stores = {"jobs": store_for("jobs"), "nodes": store_for("nodes")}
        self._synced = {"jobs": False, "nodes": False}  # the worker's state matches our store
        self._worker_failures = 0
        # Last output size per command: once one is big and the Runner is local, the
        # worker runs that command itself and the output never enters this process.
        self._sizes: dict[str, int] = {}
        self._parsed_text: dict[str, tuple[Any, Any, tuple[str, ...]]] = {}  # key -> (output, parsed, warnings)
        self._nodes_first: asyncio.Event | None = None  # set once a first nodes load ended
        self._nodes_sized: asyncio.Event | None = None  # set once that load chose where it is parsed
        self._went_big = False  # some output reached worker_threshold: a big site
        self._offers: Any = None
        self._caps: Capabilities | None = None

    # -- what acts and probes for this backend ---------------------------------
    cannot_act = ""

    def action_executor(self, config: Any) -> Any:
        """The gate's executor: the Slurm commands through this backend's Runner."""
        if self.runner is None:
            return None
        from cockpit.backends.slurm_exec import SlurmExecutor

        return SlurmExecutor(self.runner, bin_dir=self.bin_dir)

    def probe_runner(self, config: Any) -> Any:
        """Read-only probes: SSH to the nodes ([ssh] settings), srun, or this Runner."""
        from cockpit.remote.probes import NodeProbeRunner, NoProbes

        if self.runner is None:
            return NoProbes(f"{self.name} has no nodes to ask")
        from cockpit.config import Config
        from cockpit.remote.settings import node_settings

        return NodeProbeRunner(node_settings(config or Config()), self.runner, self.bin_dir)

    async def job_state(self, job_id: int | str) -> tuple[str, str]:
        """(state, reason) of one job from squeue; ("GONE", "") once Slurm forgot it.

        Raises CommandFailed for squeue's other errors."""
        if self.runner is None:
            raise BackendError(f"{self.name} cannot ask Slurm about job {job_id}")
        argv = [self._prog("squeue"), "-h", "-j", str(job_id), "--states=all", "-o", "%T|%r"]
        res = await self.runner.run(argv, timeout=self.timeout)
        text = res.text().strip()
        if not res.ok:
            if "Invalid job id" in res.err_text():
                return "GONE", ""
            raise CommandFailed(argv, res.returncode, res.err_text())
        if not text:
            return "GONE", ""
        state, _, reason = text.splitlines()[0].partition("|")
        return state.strip(), reason.strip()

    async def job_excluded_nodes(self, job_id: int | str) -> str:
        """The job's own ExcNodeList from ``squeue --json`` (``excluded_nodes`` in every
        version; JSON, so a job name cannot imitate the field). Raises CockpitError when
        it cannot be read."""
        import json

        if self.runner is None:
            return ""
        argv = [self._prog("squeue"), "--all", "--json", "--jobs", str(job_id)]
        res = await self.runner.run(argv, timeout=max(self.timeout, 60))
        if res.returncode != 0:
            raise CommandFailed(argv, res.returncode, res.err_text())
        try:
            records = json.loads(res.stdout).get("jobs") or []
        except (ValueError, AttributeError):
            raise ParseError("squeue --json", "cannot read the job's ExcNodeList: not JSON") from None
        for rec in records:
            if isinstance(rec, dict) and str(rec.get("job_id")) == str(job_id):
                value = rec.get("excluded_nodes")
                return value if isinstance(value, str) else ""
        return ""

    async def job_output_paths(self, job_id: int | str) -> dict[str, tuple[str, ...]]:
        """What ``scontrol show job -o ID`` says of a job's output: every value after
        `` StdOut=``, `` StdErr=``, `` StdIn=`` and `` WorkDir=`` in the job's one line.
        Squeue's JSON on Slurm 22.05 says "" or "/dev/null" for a job submitted without
        ``-o``; scontrol names the file. A job name, comment or mail user may hold
        ``StdOut=...`` text too, so every occurrence comes back, for the caller to
        believe only what it can check (cockpit.core.joblog.trusted_output). {} for a
        job Slurm forgot. Raises CommandFailed for scontrol's other errors."""
        import re

        if self.runner is None:
            raise BackendError(f"{self.name} cannot ask Slurm about job {job_id}")
        argv = [self._prog("scontrol"), "show", "job", "-o", str(job_id)]
        res = await self.runner.run(argv, timeout=self.timeout)
        if not res.ok:
            if "Invalid job id" in res.err_text():
                return {}
            raise CommandFailed(argv, res.returncode, res.err_text())
        line = next((ln for ln in res.text().splitlines() if ln.startswith(f"JobId={job_id} ")), "")
        out: dict[str, tuple[str, ...]] = {}
        for key in ("StdOut", "StdErr", "StdIn", "WorkDir"):
            out[key] = tuple(re.findall(rf"(?:^| ){key}=(\S*)", line))
        return out

    # -- optional capabilities: accounting (slurmdbd) and the scheduler's views ------
    def offers(self) -> Any:
        """sacct/sacctmgr/sshare/assoc_mgr and sprio/reservations/squeue --start
        (cockpit.backends.accounting.SlurmOffers): this backend's accounting and
        scheduling capabilities, asking ``scontrol show config`` once."""
        if self._offers is None:
            from cockpit.backends.accounting import SlurmOffers

            self._offers = SlurmOffers(self.runner, self.bin_dir, self.timeout, self.name)
        return self._offers

    def capabilities(self) -> Capabilities:
        """Streaming loads, accounting, scheduling, job inspection, the gate's executor
        and probes: all through this backend's Runner (a replay has none to run)."""
        if self._caps is None:
            offers = self.offers()
            self._caps = Capabilities(streaming=self, accounting=offers, scheduling=offers, inspection=self,
                                      output_paths=self, executor=self, probes=self, cannot_act=self.cannot_act,
                                      scheduler_stats=self, unread=self)
        return self._caps

    def _prog(self, name: str) -> str:
        import os

        return os.path.join(self.bin_dir, name) if self.bin_dir else name

    # -- plumbing -----------------------------------------------------------
    def _argv(self, key: str) -> list[str]:
        argv = list(COMMANDS[key])
        if self.bin_dir:
            argv[0] = os.path.join(self.bin_dir, argv[0])
        return argv

    async def _fetch(self, key: str) -> bytes:
        """Run the command recorded under ``key``; raise CommandFailed on non-zero exit."""
        argv = self._argv(key)
        del self.warnings[:-100]  # the poller calls fetch_* forever; keep this bounded
        res = await self.runner.run(argv, timeout=self.timeout)
        if res.returncode != 0:
            raise CommandFailed(argv, res.returncode, res.err_text())
        if self.on_output is not None:
            self.on_output(key, res.stdout)
        self._stderr[key] = res.err_text()
        return res.stdout

    def _empty_because_of_error(self, key: str, raw: bytes | None, parsed, errs=None) -> None:
        """Slurm's JSON commands exit 0 with an empty list and an ``errors`` entry
        when the controller is unreachable: that is a failure, not an empty cluster.
        Raises BackendError naming Slurm's words."""
        if parsed:
            return
        if errs is None:
            try:
                errs = slurm_errors(json.loads(raw or b""))
            except (ValueError, TypeError, AttributeError):
                return
        if errs:
            said = self._stderr.get(key, "").strip().splitlines()
            detail = said[-1] if said else errs[0]
            raise BackendError(f"{COMMANDS[key][0]}: {detail}")

    # -- Backend protocol ---------------------------------------------------
    async def version(self) -> str:
        if self._version is None:
            out = (await self._fetch("version.txt")).decode("utf-8", "replace")
            self._version = slurm_json.parse_version(out)
        return self._version

    async def fetch_jobs(self) -> tuple[Job, ...]:
        return await _last(self.stream_jobs())

    async def stream_jobs(self) -> AsyncIterator[tuple[tuple[Job, ...], bool]]:
        """Yield ``(jobs, complete)``: partial results while a first big load is
        parsed, then the complete one. Raises like fetch_jobs."""
        async for item in self._read_and_parse("squeue.json"):
            yield item

    async def fetch_nodes(self) -> tuple[Node, ...]:
        return await _last(self.stream_nodes())

    async def stream_nodes(self) -> AsyncIterator[tuple[tuple[Node, ...], bool]]:
        """Like :meth:`stream_jobs`, for nodes (scontrol JSON, else sinfo JSON)."""
        gate = sized = None
        if not self._stores["nodes"].objects:  # a first load: the jobs' first load waits for it
            gate = self._nodes_first = asyncio.Event()
            sized = self._nodes_sized = asyncio.Event()
        try:
            async for item in self._stream_nodes():
                yield item
        finally:
            if gate is not None:
                gate.set()
                sized.set()

    async def _stream_nodes(self) -> AsyncIterator[tuple[tuple[Node, ...], bool]]:
        if self._node_source != "sinfo.json":
            try:
                src = await self._source("scontrol-nodes.json")
            except CommandFailed as err:
                if not _is_unsupported(err):
                    raise
                self._node_source = "sinfo.json"
            else:
                self._node_source = "scontrol-nodes.json"
                async for item in self._parsed("scontrol-nodes.json", src):
                    yield item
                return
        async for item in self._read_and_parse("sinfo.json"):
            yield item

    # -- reading: whole, or streamed to the worker --------------------------------
    async def _read_and_parse(self, key: str) -> AsyncIterator[tuple[tuple[Any, ...], bool]]:
        async for item in self._parsed(key, await self._source(key)):
            yield item

    async def _source(self, key: str) -> Any:
        """``[raw bytes]``, or (for a big output, when the Runner can stream) an async
        iterator of its chunks, so this process never holds the whole output.
        Raises what _fetch raises (for a streamed output: while it is iterated)."""
        stream = getattr(self.runner, "stream", None)
        if self.on_output is not None or not callable(stream) or self.parse_worker is False \
                or self._worker_failures >= MAX_WORKER_FAILURES:
            raw = await self._fetch(key)
            self._sizes[key] = len(raw)
            return [raw]
        src = await self._choose(key)
        if _SOURCES[key][0] == "nodes" and self._nodes_sized is not None:
            self._nodes_sized.set()  # (a failed one: stream_nodes sets it when it ends)
        return src

    async def _choose(self, key: str) -> Any:
        spawn = getattr(self.runner, "spawn_spec", None)
        if callable(spawn):
            known = key in self._sizes
            if not known and _SOURCES[key][0] == "jobs":
                await self._wait_nodes_sized()
            # A big site (the nodes' output alone reached the threshold): the jobs'
            # first load runs in the worker too, so squeue's whole output (689 MB
            # at 500k jobs) never passes through this process's event loop.
            if self._use_worker(self._sizes.get(key, 0)) or (not known and self._went_big):
                del self.warnings[:-100]
                return _RunInWorker(spawn(self._argv(key), self.timeout))
        chunks = self._chunks(key)
        head: list[bytes] = []
        size = 0
        async for part in chunks:
            head.append(part)
            size += len(part)
            if self._use_worker(size):
                self._went_big = True
                return _prepend(head, chunks)
        self._sizes[key] = size
        return [b"".join(head)]

    async def _wait_nodes_sized(self) -> None:
        """A jobs' first load: wait (bounded) until a nodes' first load running beside
        it knows whether its output is big, so the jobs' can follow its choice."""
        await asyncio.sleep(0)  # asked together (the poller's gather): the nodes' load starts first
        sized, gate = self._nodes_sized, self._nodes_first
        if sized is None or sized.is_set() or gate is None or gate.is_set():
            return
        try:  # bounded: a nodes load stuck on its command does not hold the jobs' back for long
            await asyncio.wait_for(sized.wait(), min(10.0, self.timeout / 3))
        except asyncio.TimeoutError:
            pass

    async def _chunks(self, key: str) -> AsyncIterator[bytes]:
        argv = self._argv(key)
        del self.warnings[:-100]
        size = 0
        async for item in self.runner.stream(argv, timeout=self.timeout):
            if isinstance(item, CommandResult):
                if item.returncode != 0:
                    raise CommandFailed(argv, item.returncode, item.err_text())
                self._stderr[key] = item.err_text()
                self._sizes[key] = size
            else:
                size += len(item)
                yield item

    # -- parsing: here or in the worker ---------------------------------------
    def _parse_here(self, key: str, raw: bytes) -> tuple[Any, ...]:
        found: list[str] = []
        if key == "squeue.json":
            out = slurm_json.parse_squeue(raw, warnings=found)
        elif key == "scontrol-nodes.json":
            out = slurm_json.parse_scontrol_nodes(raw, warnings=found)
        else:
            out = slurm_json.parse_sinfo(raw, warnings=found)[0]
        self.note_warnings(_SOURCES[key][0], found)
        return out

    def note_warnings(self, kind: str, found: Any) -> None:
        """Warnings of one parse of ``kind``; the records it could not read replace
        that kind's in ``unread``, which the poller puts in every snapshot's errors
        until a parse reads them (the TUI counts them in its header)."""
        found = tuple(found)
        self.warnings.extend(found)
        self.unread[kind] = tuple(w for w in found if is_unread(w))

    def _use_worker(self, size: int) -> bool:
        if self._worker_failures >= MAX_WORKER_FAILURES or self.parse_worker is False:
            return False
        return bool(self.parse_worker) or size >= self.worker_threshold

    async def _parsed(self, key: str, holder: Any) -> AsyncIterator[tuple[tuple[Any, ...], bool]]:
        """Parse the output in ``holder`` (``[bytes]``, emptied once the worker has
        them, or a stream of chunks for the worker) and yield (objects, complete)."""
        kind = _SOURCES[key][0]
        streamed = not isinstance(holder, list)
        if streamed or self._use_worker(len(holder[0])):  # streamed: chunks, or _RunInWorker
            try:
                async for item in self._parse_in_worker(key, holder):
                    yield item
                return
            except WorkerFailed as exc:
                self._worker_failed(kind, exc)
        raw = holder[0] if not streamed and holder else await self._fetch(key)
        if not streamed:
            holder.clear()
        store = await settled(self._stores[kind])
        if len(raw) >= self.worker_threshold:  # a fallback: keep the event loop free
            objs = await asyncio.to_thread(self._parse_and_store, key, raw)
        else:
            objs = self._parse_and_store(key, raw)
        self._empty_because_of_error(key, raw, objs)
        self._synced[kind] = False
        yield store.values(), True

    def _parse_and_store(self, key: str, raw: bytes) -> tuple[Any, ...]:
        objs = self._parse_here(key, raw)
        self._stores[_SOURCES[key][0]].replace(objs)
        return objs

    def _worker_failed(self, kind: str, exc: WorkerFailed) -> None:
        self._worker_failures += 1
        self._synced[kind] = False
        worker = self.workers.get(kind)
        if worker is not None:
            worker.kill()
            for k in [k for k, w in self.workers.items() if w is worker]:
                del self.workers[k]  # the other kind lost its state in the same process
                self._synced[k] = False
        self.warnings.append(f"{exc}; parsing {kind} in the main process")

    async def _parse_in_worker(self, key: str, holder: Any) -> AsyncIterator[tuple[tuple[Any, ...], bool]]:
        kind, fmt, source = _SOURCES[key]
        run = holder.spec if isinstance(holder, _RunInWorker) else None

        def ran(stderr: str, size: int) -> None:
            self._stderr[key] = stderr
            self._sizes[key] = size

        worker = self.workers.get(kind)
        if worker is None:
            # One process for jobs and nodes: requests are served one after the other,
            # and a second Python with its own peak cost ~60 MB at 10k nodes.
            worker = self.workers[kind] = next(iter(self.workers.values()), None) or ParseWorker()
        feed = DeltaFeed(await settled(self._stores[kind]))
        gate = self._nodes_first
        if kind == "jobs" and feed.progressive and gate is not None and not gate.is_set():
            # One worker serves both, one request after the other: 100k jobs take it
            # for seconds, 10k nodes for a fraction of one. Nodes first, so the pulse,
            # nodes and GPU views do not wait for the last job.
            try:  # bounded: squeue's own timeout runs meanwhile
                await asyncio.wait_for(gate.wait(), min(10.0, self.timeout / 3))
            except asyncio.TimeoutError:
                pass
        reset = not self._synced[kind]
        self._synced[kind] = False
        try:
            async for delta in worker.parse(kind, fmt, source, None if run else holder, reset=reset,
                                            run=run, on_ran=ran):
                if feed.take(delta):
                    yield await feed.partial(), False
        except BaseException:  # a ParseError, or the command failed after sending part of its output
            feed.abandon()
            raise
        objs = await feed.complete()
        self._synced[kind] = True
        done = feed.last  # the worker ends every answer with a Delta marked done
        self.note_warnings(kind, done.warnings)
        self._empty_because_of_error(key, None, objs, list(done.slurm_errors))
        yield objs, True

    async def fetch_partitions(self) -> tuple[Partition, ...]:
        # Text on every version: 22.05 has no partition JSON, and 24.11's omits
        # the Default flag (see tests/data/slurm-24.11/scontrol-show-partition.json).
        raw = await self._fetch("scontrol-partitions.txt")
        return await self._parse_text_cached("scontrol-partitions.txt", raw, slurm_text.parse_scontrol_partitions,
                                             warns=True)

    async def fetch_sched_stats(self):
        """slurmctld's statistics (``sdiag``). Raises CommandFailed, ParseError."""
        from cockpit.backends.slurm_sdiag import parse_sdiag_text

        return parse_sdiag_text((await self._fetch("sdiag.txt")).decode("utf-8", "replace"))

    async def fetch_topology(self) -> Topology:
        try:
            text = (await self._fetch("topology.txt")).decode("utf-8", "replace")
        except CommandFailed as err:
            if isinstance(err, Unsupported) or any(h in err.stderr.lower() for h in _NO_TOPOLOGY_HINTS):
                return Topology()
            raise
        return await self._parse_text_cached("topology.txt", text, slurm_text.parse_topology)

    async def _parse_text_cached(self, key: str, raw: Any, parse: Callable[..., Any], warns: bool = False) -> Any:
        """Parse a text output unless it is the same as last time (the usual case:
        partitions and topology rarely change, and at 10k nodes expanding their
        hostlists costs ~80 ms that keys would wait for). Big ones in a thread.
        ``warns``: ``parse`` takes a warnings list (records it could not read),
        kept with the cached result and said again on every fetch."""
        cached = self._parsed_text.get(key)
        if cached is not None and cached[0] == raw:
            self.note_warnings(key, cached[2])
            return cached[1]
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        found: list[str] = []
        call = (lambda t: parse(t, warnings=found)) if warns else parse
        result = await asyncio.to_thread(call, text) if len(text) >= TEXT_THREAD_SIZE else call(text)
        self._parsed_text[key] = (raw, result, tuple(found))
        self.note_warnings(key, found)
        return result

    async def snapshot(self) -> ClusterSnapshot:
        """Fetch everything; a failing part becomes an entry in ``errors``.

        Raises BackendError only when nothing at all could be read (so the CLI
        can exit non-zero with the cause)."""
        started = time.time()
        self.warnings.clear()
        parts = await asyncio.gather(
            self.version(),
            self.fetch_nodes(),
            self.fetch_partitions(),
            self.fetch_jobs(),
            self.fetch_topology(),
            return_exceptions=True,
        )
        errors: list[str] = []
        out = []
        for label, value, empty in zip(
            ("version", "nodes", "partitions", "jobs", "topology"),
            parts,
            ("", (), (), (), Topology()),
        ):
            if isinstance(value, BaseException):
                if not isinstance(value, (BackendError, ParseError)):
                    raise value
                errors.append(f"{label}: {value}")
                value = empty
            out.append(value)
        version, nodes, partitions, jobs, topology = out
        nodes = join_gpu_use(nodes, jobs)  # untyped GPUs in use: which ones, from the jobs (22.05)
        if isinstance(parts[1], BaseException) and isinstance(parts[3], BaseException):
            # Neither nodes nor jobs: there is nothing to show. Name the first cause.
            # squeue/sinfo --json only say "Unspecified error"; scontrol names the cause.
            cause = next((e for e in errors if "controller" in e.lower()), errors[0])
            raise BackendError(f"cannot read the cluster: {cause}") from parts[1]
        return ClusterSnapshot(
            nodes=nodes,
            partitions=partitions,
            jobs=jobs,
            topology=topology,
            fetched_at=started,
            source=self.description,
            slurm_version=version,
            errors=tuple(errors) + tuple(dict.fromkeys(self.warnings)),
        )

    async def close(self) -> None:
        """Stop the parse workers (if any were started)."""
        workers, self.workers = self.workers, {}
        for worker in {id(w): w for w in workers.values()}.values():
            await worker.close()


class _RunInWorker:
    """A source the parse worker runs itself: ``spec`` is ``(argv, env, timeout)``."""

    def __init__(self, spec: tuple) -> None:
        self.spec = spec


async def _prepend(head: list[bytes], rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    while head:
        yield head.pop(0)
    async for part in rest:
        yield part


async def _last(stream: AsyncIterator[tuple[Any, bool]]) -> Any:
    """The complete result of a stream_* iterator."""
    result: Any = ()
    async for result, _complete in stream:
        pass
    return result
