"""The poller with a fake clock and a scripted backend: no real waiting."""

from __future__ import annotations

import asyncio

import pytest

from cockpit.core.poller import ADAPT_FACTOR, MAX_BACKOFF, Poller
from cockpit.errors import CommandTimeout
from cockpit.models import Job, Node, Topology


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Scripted:
    """Each fetch pops the next scripted outcome (a value or an exception); durations come from a timer."""

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    name, description = "scripted", "scripted backend"

    def __init__(self, clock: Clock, durations: dict[str, float] | None = None) -> None:
        self.clock = clock
        self.script: dict[str, list] = {"nodes": [], "jobs": [], "partitions": [], "topology": []}
        self.durations = durations or {}
        self.calls: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def version(self):
        return "24.11.1"

    async def _fetch(self, kind, default):
        self.calls.append(kind)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)
            self.clock.t += self.durations.get(kind, 0.0)
            item = self.script[kind].pop(0) if self.script[kind] else default
            if isinstance(item, BaseException):
                raise item
            return item
        finally:
            self.in_flight -= 1

    async def fetch_nodes(self):
        return await self._fetch("nodes", (Node("n1", "idle"),))

    async def fetch_jobs(self):
        return await self._fetch("jobs", (Job(1, state="RUNNING"),))

    async def fetch_partitions(self):
        return await self._fetch("partitions", ())

    async def fetch_topology(self):
        return await self._fetch("topology", Topology())


def make(clock, backend, **intervals):
    updates = []
    p = Poller(backend, lambda s, st: updates.append((s, st)), intervals or None, clock=clock, timer=clock)
    return p, updates


async def test_first_poll_fetches_every_kind_once_and_publishes_a_snapshot():
    clock = Clock()
    be = Scripted(clock)
    p, updates = make(clock, be)
    snap = await p.poll_once()
    assert sorted(be.calls) == ["jobs", "nodes", "partitions", "topology"]
    assert snap.nodes[0].name == "n1" and snap.jobs[0].job_id == 1
    assert snap.slurm_version == "24.11.1" and snap.source == "scripted backend"
    assert len(updates) == 1 and not updates[0][1].stale


async def test_each_kind_has_its_own_interval_and_nothing_is_fetched_early():
    clock = Clock()
    be = Scripted(clock)
    p, _ = make(clock, be, nodes=5, jobs=10, partitions=30, topology=300)
    await p.poll_once()
    be.calls.clear()
    clock.t += 4.9
    assert await p.poll_once() is None and be.calls == []
    clock.t += 0.2
    await p.poll_once()
    assert be.calls == ["nodes"]
    clock.t += 5.0
    be.calls.clear()
    await p.poll_once()
    assert sorted(be.calls) == ["jobs", "nodes"]


async def test_interval_adapts_to_five_times_a_slow_fetch():
    clock = Clock()
    be = Scripted(clock, durations={"jobs": 4.0})
    p, _ = make(clock, be, jobs=5)
    await p.poll_once()
    assert p.interval("jobs") == pytest.approx(ADAPT_FACTOR * 4.0)
    start = clock.t
    be.calls.clear()
    clock.t = start + 19.0
    await p.poll_once()
    assert "jobs" not in be.calls


async def test_fetches_never_overlap_within_a_kind():
    clock = Clock()
    be = Scripted(clock)
    p, _ = make(clock, be)
    await asyncio.gather(p.poll_once(), p.poll_once())
    # the second call waited for the first, then found nothing due
    assert be.calls.count("jobs") == 1 and be.max_in_flight <= 4


async def test_failure_keeps_last_data_goes_stale_backs_off_and_recovers():
    clock = Clock()
    be = Scripted(clock)
    p, updates = make(clock, be, jobs=5, nodes=5)
    await p.poll_once()
    good = updates[-1][0]
    err = CommandTimeout("squeue did not answer within 30 s")
    be.script["jobs"] = [err, err, err]
    delays = []
    for _ in range(3):
        clock.t = p.status().kinds["jobs"].next_due
        before = clock.t
        await p.poll_once()
        st = updates[-1][1]
        assert st.stale and "squeue did not answer" in st.cause
        assert updates[-1][0].jobs == good.jobs  # last data kept
        delays.append(st.kinds["jobs"].next_due - before)
    assert delays[0] < delays[1] < delays[2] <= MAX_BACKOFF
    assert updates[-1][1].age() > 0
    clock.t = p.status().kinds["jobs"].next_due
    await p.poll_once()
    st = updates[-1][1]
    assert not st.stale and st.cause == "" and updates[-1][0].errors == ()


async def test_pause_stops_fetching_and_resume_refreshes_at_once():
    clock = Clock()
    be = Scripted(clock)
    p, _ = make(clock, be)
    await p.poll_once()
    p.pause()
    be.calls.clear()
    clock.t += 1000
    assert await p.poll_once() is None and be.calls == [] and p.status().paused
    p.resume()
    await p.poll_once()
    assert sorted(be.calls) == ["jobs", "nodes", "partitions", "topology"]


async def test_run_loop_polls_and_can_be_cancelled():
    clock = Clock()
    be = Scripted(clock)
    p, updates = make(clock, be, nodes=0.01, jobs=0.01)
    task = asyncio.create_task(p.run())
    for _ in range(50):
        await asyncio.sleep(0.01)
        clock.t += 0.02
        if p.polls >= 3:
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert p.polls >= 3 and len(updates) == p.polls


# -- node kinds (GPU telemetry): read from the nodes on screen, in the same event loop --------
from cockpit.core.poller import IDLE_RECHECK, NodeKind  # noqa: E402
from cockpit.backends.base import Capabilities


class Nodes:
    """A node kind's three callables: the nodes on screen, a read that records its
    nodes (optionally waiting on an event), and what was delivered."""

    def __init__(self, clock: Clock, duration: float = 0.0) -> None:
        self.clock, self.duration = clock, duration
        self.on_screen: set[str] = set()
        self.reads: list[tuple[str, ...]] = []
        self.delivered: list[tuple[tuple[str, ...], dict]] = []
        self.fail: Exception | None = None
        self.gate: asyncio.Event | None = None
        self.in_flight = self.max_in_flight = 0

    async def fetch(self, nodes):
        self.reads.append(nodes)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            self.clock.t += self.duration
            if self.fail is not None:
                raise self.fail
            return {n: "ok" for n in nodes}
        finally:
            self.in_flight -= 1

    def kind(self, interval: float = 15.0) -> NodeKind:
        return NodeKind(fetch=self.fetch, wanted=lambda: self.on_screen,
                        deliver=lambda nodes, data: self.delivered.append((nodes, data)), interval=interval)


def with_nodes(clock, nodes: Nodes, interval: float = 15.0):
    updates = []
    p = Poller(Scripted(clock), lambda s, st: updates.append(s), clock=clock, timer=clock,
               node_kinds={"telemetry": nodes.kind(interval)})
    return p, updates


async def test_a_node_kind_reads_only_the_nodes_on_screen_on_its_own_interval():
    clock = Clock()
    nodes = Nodes(clock)
    p, _ = with_nodes(clock, nodes, interval=15.0)
    await p.poll_nodes_once()
    assert nodes.reads == []  # nothing on screen: nothing read, looked at again soon
    assert p.node_status("telemetry").next_due == clock.t + IDLE_RECHECK
    nodes.on_screen = {"n2", "n1"}
    clock.t += IDLE_RECHECK
    await p.poll_nodes_once()
    assert nodes.reads == [("n1", "n2")] and nodes.delivered[0] == (("n1", "n2"), {"n1": "ok", "n2": "ok"})
    clock.t += 14.0
    await p.poll_nodes_once()
    assert len(nodes.reads) == 1  # not due yet
    clock.t += 1.0
    await p.poll_nodes_once()
    assert len(nodes.reads) == 2


async def test_asked_nodes_are_read_at_once_besides_those_on_screen():
    clock = Clock()
    nodes = Nodes(clock)
    p, _ = with_nodes(clock, nodes)
    nodes.on_screen = {"n1"}
    await p.poll_nodes_once()
    p.ask("telemetry", ["n9"])
    await p.poll_nodes_once()  # due at once, though the interval has not passed
    assert nodes.reads == [("n1",), ("n1", "n9")]
    clock.t += 15.0
    await p.poll_nodes_once()
    assert nodes.reads[-1] == ("n1",)  # asked once, not for good


async def test_a_node_kind_never_overlaps_itself_and_a_nodes_asked_meanwhile_are_read_next():
    clock = Clock()
    nodes = Nodes(clock)
    nodes.gate = asyncio.Event()
    p, _ = with_nodes(clock, nodes)
    nodes.on_screen = {"n1"}
    first = p.start_node_kinds()
    await asyncio.sleep(0)
    assert p.node_busy("telemetry")
    p.ask("telemetry", ["n2"])
    assert p.start_node_kinds() == []  # one read at a time
    nodes.gate.set()
    await asyncio.gather(*first)
    assert not p.node_busy("telemetry") and nodes.max_in_flight == 1
    await p.poll_nodes_once()  # n2 was asked while the read ran: read now, not after 15 s
    assert nodes.reads == [("n1",), ("n1", "n2")]


async def test_a_node_kind_adapts_to_slow_reads_and_backs_off_on_failure():
    clock = Clock()
    nodes = Nodes(clock, duration=4.0)
    p, _ = with_nodes(clock, nodes, interval=5.0)
    nodes.on_screen = {"n1"}
    await p.poll_nodes_once()
    assert p.node_interval("telemetry") == pytest.approx(ADAPT_FACTOR * 4.0)
    nodes.fail, nodes.duration = RuntimeError("probe runner broke"), 0.0
    clock.t = p.node_status("telemetry").next_due
    await p.poll_nodes_once()
    st = p.node_status("telemetry")
    assert st.failures == 1 and st.error == "probe runner broke" and len(nodes.delivered) == 1
    assert st.next_due - clock.t <= 5.0
    assert not p.status().stale  # a node kind's failure is not the Slurm data going stale
    nodes.fail = None
    clock.t = st.next_due
    await p.poll_nodes_once()
    assert p.node_status("telemetry").failures == 0 and len(nodes.delivered) == 2


async def test_pause_stops_node_kinds_and_refresh_makes_them_due():
    clock = Clock()
    nodes = Nodes(clock)
    p, _ = with_nodes(clock, nodes)
    nodes.on_screen = {"n1"}
    await p.poll_nodes_once()
    p.pause()
    clock.t += 100
    await p.poll_nodes_once()
    assert len(nodes.reads) == 1
    p.resume()  # resume refreshes every kind, node kinds included
    await p.poll_nodes_once()
    assert len(nodes.reads) == 2
    p.refresh_now()
    await p.poll_nodes_once()
    assert len(nodes.reads) == 3


async def test_run_loop_a_slow_node_read_never_holds_up_the_slurm_kinds():
    clock = Clock()
    nodes = Nodes(clock)
    nodes.gate = asyncio.Event()  # the node read hangs until released
    p = Poller(Scripted(clock), lambda s, st: None, {"nodes": 0.01, "jobs": 0.01}, clock=clock, timer=clock,
               node_kinds={"telemetry": nodes.kind(15.0)})
    nodes.on_screen = {"n1"}
    task = asyncio.create_task(p.run())
    for _ in range(100):
        await asyncio.sleep(0.01)
        clock.t += 0.02
        if p.polls >= 3:
            break
    assert p.polls >= 3 and p.node_busy("telemetry") and nodes.reads == [("n1",)]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not p.node_busy("telemetry")  # cancelled with the loop, not left running
