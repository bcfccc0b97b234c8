"""The one poller of the app: fetches each resource kind on its own interval.

No Textual here. The TUI runs :meth:`Poller.run` in one worker and receives
every new :class:`~cockpit.models.ClusterSnapshot` through ``on_update``.

Rules it keeps (tested in tests/unit/test_poller.py with a fake clock):

* one fetch per kind at a time; a poll never overlaps the previous one;
* adaptive: the interval of a kind is at least ``ADAPT_FACTOR`` x its last
  fetch's duration, so a slow controller is asked less often;
* pause/resume (resume refreshes at once);
* a backend may offer ``stream_<kind>()``, an async iterator of ``(data,
  complete)``: partial data (a first big load arriving in chunks) is published
  at once, so the first screen does not wait for the last job;
* on failure the last data stays, the status turns stale with the cause and the
  time of the last success, and the kind is retried with exponential backoff
  (capped) until it succeeds, which clears the stale state by itself;
* node kinds (:class:`NodeKind`: GPU telemetry) are read from the nodes, not from
  Slurm: each on its own interval, only for the nodes wanted now (those on screen)
  or asked for (:meth:`Poller.ask`), in a task of the same event loop (no thread
  of their own), never overlapping themselves and never holding up the Slurm kinds.
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit import heap
from cockpit.backends.base import RESOURCE_KINDS, Backend, fetcher, streamer
from cockpit.models import ClusterSnapshot, Topology

ADAPT_FACTOR = 5.0
MAX_BACKOFF = 120.0
MIN_SLEEP = 0.05
DEFAULT_INTERVALS = {"nodes": 5.0, "jobs": 5.0, "partitions": 30.0, "topology": 300.0}
IDLE_RECHECK = 1.0  # a node kind with no node wanted looks again this soon (a view just opened)


@dataclass(frozen=True, slots=True)
class KindStatus:
    """What the poller knows about one resource kind."""

    last_ok: float | None = None  # clock time of the last successful fetch
    last_duration: float = 0.0
    failures: int = 0  # consecutive
    error: str = ""  # cause of the last failure, "" after a success
    next_due: float = 0.0


@dataclass(frozen=True, slots=True)
class PollStatus:
    """Immutable view of the poller for the header and the stale banner."""

    kinds: Mapping[str, KindStatus] = field(default_factory=dict)
    paused: bool = False
    now: float = 0.0

    @property
    def stale(self) -> bool:
        return any(k.failures for k in self.kinds.values())

    @property
    def cause(self) -> str:
        return "; ".join(f"{n}: {k.error}" for n, k in self.kinds.items() if k.failures)

    @property
    def data_time(self) -> float | None:
        """Time of the oldest successful fetch among nodes and jobs (what the screen shows)."""
        times = [k.last_ok for n, k in self.kinds.items() if n in ("nodes", "jobs")]
        if not times or any(t is None for t in times):
            return None
        return min(times)  # type: ignore[type-var]

    def age(self) -> float | None:
        t = self.data_time
        return None if t is None else max(0.0, self.now - t)

    @property
    def next_retry(self) -> float | None:
        due = [k.next_due for k in self.kinds.values() if k.failures]
        return min(due) if due else None


UpdateCallback = Callable[[ClusterSnapshot, PollStatus], Any]


@dataclass(frozen=True)
class NodeKind:
    """A resource kind read from the nodes themselves (GPU telemetry), not from Slurm.

    ``wanted()`` names the nodes to read now (those on screen); the poller adds the
    ones asked for with :meth:`Poller.ask`. ``fetch(nodes)`` reads them (one node's
    failure belongs in its result: an exception counts as the whole kind failing,
    retried with backoff) and ``deliver(nodes, result)`` hands the result on (sync or
    async). ``interval`` seconds between reads, raised to ADAPT_FACTOR x the last
    read's duration as for the Slurm kinds."""

    fetch: Callable[[tuple[str, ...]], Awaitable[Any]]
    wanted: Callable[[], Iterable[str]]
    deliver: Callable[[tuple[str, ...], Any], Any]
    interval: float


def settle_heap() -> None:
    """Keep the cyclic GC's walks to what is new, at each poll.

    At 100k jobs the app holds millions of objects; a collection that walked them all
    took ~0.3 s, and every key waited. Snapshot data is acyclic, mostly untracked, and
    freed by reference counting. The first call freezes the program itself for good
    (cockpit.heap.freeze_program: modules, classes, the app and its screens, ~73k
    tracked objects); from then on each poll collects the two younger generations
    (what the seconds since the last poll made: its cyclic garbage is freed, what
    survives moves to the oldest generation, which no young collection walks), and
    automatic full collections are off.

    Cyclic garbage that reached the oldest generation (a Textual worker that ran across
    a poll and ended, a closed screen, Textual's render caches) stays until a thaw: a
    full collection, which walks what the program made since it was frozen and still
    holds (~13-26k objects at 500k jobs: 12.6 ms, bench_tui; it was ~98k and 37-107 ms
    while it walked the program too). It runs as often as that costs at most
    THAW_SHARE of the time, but not more often than every THAW_EVERY_MIN seconds and
    not less often than every THAW_EVERY_MAX. A due thaw waits for a quiet moment,
    THAW_QUIET seconds after the last key or mouse event (note_input), but not longer
    than THAW_DEFER_MAX past its time.
    """
    global _next_thaw
    if not heap.program_frozen():
        heap.freeze_program(YOUNG_THRESHOLD)
        return
    now = time.monotonic()
    if now >= _next_thaw and (now - _last_input >= THAW_QUIET or now >= _next_thaw + THAW_DEFER_MAX):
        start = time.perf_counter()
        gc.collect(2)
        cost = time.perf_counter() - start
        _next_thaw = now + min(THAW_EVERY_MAX, max(THAW_EVERY_MIN, cost / THAW_SHARE))
    else:
        gc.collect(1)


# Allocations between two collections of the youngest generation (Python's default: 700).
# Each collection walks every container made since the last one, and a refresh at 500k
# jobs makes several with 500k entries (the store's values, the table's order, its
# rows dict); walking one touches every entry's object (cache misses): at 700, 44
# young collections a refresh took 356 ms of the UI thread (longest 131 ms;
# bench/bench_tui.py --young-threshold compares). Only cyclic garbage waits longer:
# what reference counting frees is freed at once.
YOUNG_THRESHOLD = 20_000
THAW_SHARE = 0.001  # of the time a thaw and full collection may take
THAW_EVERY_MIN = 60.0  # seconds: the soonest next thaw
THAW_EVERY_MAX = 3600.0  # seconds: the latest
THAW_QUIET = 3.0  # seconds without input before a due thaw runs
THAW_DEFER_MAX = 300.0  # seconds: the longest a due thaw waits for a quiet moment
_next_thaw = time.monotonic() + THAW_EVERY_MIN
_last_input = -math.inf


def note_input() -> None:
    """Someone pressed a key or moved the mouse: a due thaw waits (settle_heap)."""
    global _last_input
    _last_input = time.monotonic()


def reset_heap_settling() -> None:
    """Start settle_heap's schedule afresh (after a thaw done elsewhere: the tests'),
    as if nobody had pressed a key."""
    global _next_thaw, _last_input
    _next_thaw = time.monotonic() + THAW_EVERY_MIN
    _last_input = -math.inf


class Poller:
    """Fetches from ``backend`` and calls ``on_update(snapshot, status)`` after each poll.

    ``clock`` gives the time (default ``time.time``) and ``sleep`` waits (default
    ``asyncio.sleep``); tests replace both.
    """

    def __init__(
        self,
        backend: Backend,
        on_update: UpdateCallback,
        intervals: Mapping[str, float] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        timer: Callable[[], float] = time.perf_counter,
        node_kinds: Mapping[str, NodeKind] | None = None,
    ) -> None:
        self.backend = backend
        self._caps = backend.capabilities()  # declared once: streams, simulated
        self.on_update = on_update
        self.intervals = {**DEFAULT_INTERVALS, **{k: float(v) for k, v in (intervals or {}).items() if k in RESOURCE_KINDS}}
        self.clock, self._sleep, self._timer = clock, sleep, timer
        self._status = {k: KindStatus() for k in RESOURCE_KINDS}
        self.node_kinds: dict[str, NodeKind] = dict(node_kinds or {})
        self._node_status = {k: KindStatus() for k in self.node_kinds}
        self._asked: dict[str, set[str]] = {k: set() for k in self.node_kinds}
        self._node_tasks: dict[str, asyncio.Future] = {}
        self._data: dict[str, Any] = {"nodes": (), "jobs": (), "partitions": (), "topology": Topology()}
        self._loading: set[str] = set()  # kinds whose data so far is part of a first load (published as it comes)
        self._paused = False
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()  # a poll never overlaps the previous one
        self._version = ""
        self.polls = 0  # number of completed polls (for tests and the bench)

    # -- control --------------------------------------------------------
    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        self._paused = True
        self._wake.set()

    def resume(self) -> None:
        """Resume and refresh every kind at once."""
        self._paused = False
        self.refresh_now()

    def refresh_now(self) -> None:
        """Make every kind due now (the ``r`` key), node kinds included."""
        self._status = {k: replace(s, next_due=0.0) for k, s in self._status.items()}
        self._node_status = {k: replace(s, next_due=min(s.next_due, 0.0)) for k, s in self._node_status.items()}
        self._wake.set()

    def ask(self, kind: str, nodes: Iterable[str] = ()) -> None:
        """Read node kind ``kind`` now (or as soon as the read in flight ends), for
        ``nodes`` once besides the nodes wanted. Raises KeyError for an unknown kind."""
        self._asked[kind].update(map(str, nodes))
        self._node_status[kind] = replace(self._node_status[kind], next_due=0.0)
        self._wake.set()

    def node_status(self, kind: str) -> KindStatus:
        """What the poller knows about node kind ``kind`` (KeyError when unknown)."""
        return self._node_status[kind]

    def node_busy(self, kind: str) -> bool:
        """True while node kind ``kind`` is being read."""
        return kind in self._node_tasks

    def node_interval(self, kind: str) -> float:
        return max(self.node_kinds[kind].interval, ADAPT_FACTOR * self._node_status[kind].last_duration)

    def status(self) -> PollStatus:
        return PollStatus(dict(self._status), self._paused, self.clock())

    def interval(self, kind: str) -> float:
        """Effective interval: the configured one, raised to 5x the last fetch's duration."""
        return max(self.intervals[kind], ADAPT_FACTOR * self._status[kind].last_duration)

    # -- polling --------------------------------------------------------
    def due(self, now: float) -> list[str]:
        return [k for k, s in self._status.items() if s.next_due <= now]

    async def poll_once(self) -> ClusterSnapshot | None:
        """Fetch every due kind (concurrently, each at most once) and publish.

        Returns the new snapshot, or None when paused or nothing was due.
        Backend errors never escape: they become the stale state.
        """
        async with self._lock:
            return await self._poll_locked()

    async def _poll_locked(self) -> ClusterSnapshot | None:
        now = self.clock()
        kinds = [] if self._paused else self.due(now)
        if not kinds:
            return None
        if not self._version:
            try:
                self._version = await self.backend.version()
            except Exception:  # noqa: BLE001 - the fetches below report the cause
                pass
        await asyncio.gather(*(self._fetch(k) for k in kinds))
        settle_heap()
        snap = self.snapshot()
        self.polls += 1
        result = self.on_update(snap, self.status())
        if asyncio.iscoroutine(result):
            await result
        return snap

    async def _fetch(self, kind: str) -> None:
        stream = streamer(self._caps, kind)
        start = self._timer()
        before = self._data[kind]
        try:
            if stream is not None:
                data = await self._consume(kind, stream())
            else:
                data = await fetcher(self.backend, kind)()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure becomes "stale", never a crash
            self._data[kind] = before  # not a partial load that failed half-way
            self._failed(kind, exc)
            return
        duration = self._timer() - start
        self._data[kind] = data
        st = replace(self._status[kind], last_ok=self.clock(), last_duration=duration, failures=0, error="")
        self._status[kind] = st
        self._status[kind] = replace(st, next_due=self.clock() + self.interval(kind))

    async def _consume(self, kind: str, items: Any) -> Any:
        """The complete result of a stream; partial ones are published on the way."""
        data: Any = self._data[kind]
        try:
            async for data, complete in items:
                if not complete:
                    self._data[kind] = data
                    self._loading.add(kind)
                    settle_heap()
                    result = self.on_update(self.snapshot(), self.status())
                    if asyncio.iscoroutine(result):
                        await result
        finally:
            self._loading.discard(kind)
        return data

    def _failed(self, kind: str, exc: BaseException) -> None:
        old = self._status[kind]
        failures = old.failures + 1
        base = min(self.intervals[kind], 5.0)  # retry soon at first, however long the interval
        delay = min(base * 2 ** (failures - 1), MAX_BACKOFF)
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        self._status[kind] = replace(old, failures=failures, error=cause, next_due=self.clock() + delay)

    def snapshot(self) -> ClusterSnapshot:
        """The latest data of every kind as one immutable snapshot."""
        st = self.status()
        errors = tuple(f"{n}: {k.error}" for n, k in st.kinds.items() if k.failures)
        # Records the backend's last parses left out (one warning each): shown, never dropped.
        if self._caps.unread is not None:
            errors += tuple(dict.fromkeys(w for ws in self._caps.unread.unread.values() for w in ws))
        return ClusterSnapshot(
            nodes=tuple(self._data["nodes"]),
            partitions=tuple(self._data["partitions"]),
            jobs=tuple(self._data["jobs"]),
            topology=self._data["topology"],
            fetched_at=st.data_time or 0.0,
            source=self.backend.description,
            slurm_version=self._version,
            errors=errors,
            simulated=self._caps.simulated,
            loading=tuple(sorted(self._loading)),
        )

    def next_wake(self, *, cluster_busy: bool = False) -> float:
        """Seconds until the next kind is due (never below MIN_SLEEP). Kinds being
        fetched are left out: their end wakes the loop."""
        now = self.clock()
        due = [] if cluster_busy else [s.next_due for s in self._status.values()]
        due += [s.next_due for k, s in self._node_status.items() if k not in self._node_tasks]
        return max(MIN_SLEEP, min(due, default=now + 3600.0) - now)

    # -- node kinds (GPU telemetry) -------------------------------------
    def start_node_kinds(self) -> list[asyncio.Future]:
        """Start reading every node kind that is due and not in flight; returns their tasks."""
        started = []
        now = self.clock()
        for name in self.node_kinds:
            st = self._node_status[name]
            if self._paused or name in self._node_tasks or st.next_due > now:
                continue
            nodes = self._nodes_for(name)
            if not nodes:
                recheck = min(IDLE_RECHECK, self.node_interval(name))
                self._node_status[name] = replace(st, next_due=now + recheck)
                continue
            task = asyncio.ensure_future(self._read_nodes(name, nodes))
            self._node_tasks[name] = task
            task.add_done_callback(lambda _t, n=name: self._node_done(n))
            started.append(task)
        return started

    async def poll_nodes_once(self) -> None:
        """Read every due node kind and wait for the reads (tests; :meth:`run` does not wait)."""
        tasks = self.start_node_kinds()
        if tasks:
            await asyncio.gather(*tasks)

    def _nodes_for(self, name: str) -> tuple[str, ...]:
        try:
            wanted = set(map(str, self.node_kinds[name].wanted()))
        except Exception as exc:  # noqa: BLE001 - a broken wanted() is this kind failing, not the poller
            self._node_failed(name, exc)
            return ()
        nodes, self._asked[name] = wanted | self._asked[name], set()
        return tuple(sorted(nodes))

    async def _read_nodes(self, name: str, nodes: tuple[str, ...]) -> None:
        kind = self.node_kinds[name]
        start = self._timer()
        try:
            result = await kind.fetch(nodes)
            duration = self._timer() - start
            delivered = kind.deliver(nodes, result)
            if asyncio.iscoroutine(delivered):
                await delivered
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - shown as this kind's error, retried with backoff
            self._node_failed(name, exc)
            return
        st = replace(self._node_status[name], last_ok=self.clock(), last_duration=duration, failures=0, error="")
        self._node_status[name] = st
        # Nodes asked for meanwhile are read at once; the others after the interval.
        due = 0.0 if self._asked[name] else self.clock() + self.node_interval(name)
        self._node_status[name] = replace(st, next_due=due)

    def _node_failed(self, name: str, exc: BaseException) -> None:
        old = self._node_status[name]
        failures = old.failures + 1
        delay = min(min(self.node_kinds[name].interval, 5.0) * 2 ** (failures - 1), MAX_BACKOFF)
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        self._node_status[name] = replace(old, failures=failures, error=cause, next_due=self.clock() + delay)

    def _node_done(self, name: str) -> None:
        self._node_tasks.pop(name, None)
        self._wake.set()

    async def close(self) -> None:
        """Cancel the node reads in flight and wait for them to end."""
        tasks = list(self._node_tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)

    # -- the loop ---------------------------------------------------------
    async def run(self) -> None:
        """Poll forever (until cancelled). Sleeps until the next kind is due, pause or a
        refresh request. The Slurm kinds' poll and each node kind run as tasks of this
        loop, so a slow read of the nodes never delays the next squeue, nor one the other."""
        cluster: asyncio.Future | None = None
        try:
            while True:
                self._wake.clear()
                if cluster is not None and cluster.done():
                    cluster, done = None, cluster
                    done.result()  # a failing on_update surfaces here, ending the loop as before
                if cluster is None and not self._paused and self.due(self.clock()):
                    cluster = asyncio.ensure_future(self.poll_once())
                    cluster.add_done_callback(lambda _t: self._wake.set())
                self.start_node_kinds()
                wait = 3600.0 if self._paused else self.next_wake(cluster_busy=cluster is not None)
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=wait) if wait > MIN_SLEEP else await self._sleep(wait)
                except asyncio.TimeoutError:
                    pass
        finally:
            if cluster is not None:
                cluster.cancel()
            await self.close()
