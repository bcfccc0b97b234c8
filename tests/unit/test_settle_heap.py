"""The poller's heap settling (cockpit.core.poller.settle_heap): the program is frozen
once, at the first call, and no later collection walks it, a thaw included; what is alive
after moves to the oldest generation (no young collection walks it), and its cyclic
garbage is freed at the next thaw, whose schedule follows what the last one cost."""

from __future__ import annotations

import gc
import weakref

import pytest

from cockpit import heap
from cockpit.core import poller
from cockpit.core.poller import settle_heap


@pytest.fixture(autouse=True)
def _thresholds():
    old = gc.get_threshold()
    yield
    gc.set_threshold(*old)


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def pair() -> tuple[Node, Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, b


def _in(obj, objects) -> bool:
    return any(o is obj for o in objects)


def _thaw_now(monkeypatch) -> None:
    monkeypatch.setattr(poller, "_next_thaw", 0.0)  # the thaw is due
    monkeypatch.setattr(poller, "_last_input", -poller.math.inf)  # and nobody is at the keys
    settle_heap()


def test_the_program_is_frozen_at_the_first_call_and_no_thaw_walks_it(monkeypatch):
    monkeypatch.setattr(heap, "_program", [False])  # this process has not frozen its program yet
    program = Node()
    program.other = program  # a cycle: tracked, walked by every full collection
    assert _in(program, gc.get_objects())
    settle_heap()
    assert heap.program_frozen()
    frozen = gc.get_freeze_count()
    assert not _in(program, gc.get_objects()), "frozen: in no generation"
    _thaw_now(monkeypatch)
    assert not _in(program, gc.get_objects()), "the thaw did not walk the program"
    assert gc.get_freeze_count() >= frozen and program.other is program
    # full collections are the thaw's alone; young ones every YOUNG_THRESHOLD allocations
    assert gc.get_threshold()[0] == poller.YOUNG_THRESHOLD and gc.get_threshold()[2] == heap.NEVER


def test_what_is_alive_after_moves_to_the_oldest_generation():
    settle_heap()  # the program: frozen, where this process had not yet
    keep = Node()
    keep.other = keep
    assert _in(keep, gc.get_objects(0))
    settle_heap()  # alive: in the oldest generation, which no young collection walks
    assert _in(keep, gc.get_objects(2)) and not _in(keep, gc.get_objects(0)) and not _in(keep, gc.get_objects(1))
    assert keep.other is keep


def test_cyclic_garbage_in_the_oldest_generation_is_freed_at_the_next_thaw_and_the_next_is_scheduled(monkeypatch):
    settle_heap()
    poller.reset_heap_settling()  # the next thaw THAW_EVERY_MIN from now
    a, _ = pair()
    gone = weakref.ref(a)
    settle_heap()  # alive at this poll: it moves to the oldest generation
    del a, _  # now garbage, but no young collection reaches it
    settle_heap()
    assert gone() is not None, "garbage in the oldest generation waits for the thaw"
    before = poller.time.monotonic()
    _thaw_now(monkeypatch)
    assert gone() is None, "the thaw freed it"
    # the next thaw: at least THAW_EVERY_MIN away, and at most THAW_EVERY_MAX
    assert before + poller.THAW_EVERY_MIN <= poller._next_thaw <= poller.time.monotonic() + poller.THAW_EVERY_MAX


def test_a_costly_thaw_is_scheduled_further_away(monkeypatch):
    settle_heap()  # the program frozen first (it reads no clock)
    clock = iter([0.0, 0.5])  # perf_counter: this thaw "took" 0.5 s
    monkeypatch.setattr(poller.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(poller, "_next_thaw", 0.0)
    monkeypatch.setattr(poller, "_last_input", -poller.math.inf)
    now = poller.time.monotonic()
    settle_heap()
    # 0.5 s at THAW_SHARE 0.1 %: 500 s to the next one (not the 60 s minimum)
    assert poller._next_thaw - now >= 0.5 / poller.THAW_SHARE - 1


def test_a_due_thaw_waits_for_a_quiet_moment_but_not_past_thaw_defer_max(monkeypatch):
    """A thaw holds the UI thread: while keys are being pressed a due one waits,
    THAW_QUIET seconds after the last, and at most THAW_DEFER_MAX."""
    settle_heap()  # the program frozen first
    now = [1000.0]
    monkeypatch.setattr(poller.time, "monotonic", lambda: now[0])
    thaws = []
    real_collect = gc.collect
    monkeypatch.setattr(poller.gc, "collect", lambda generation=2: (
        thaws.append(now[0]) if generation == 2 else None, real_collect(generation))[1])
    monkeypatch.setattr(poller, "_next_thaw", 1000.0)  # due now
    poller.note_input()  # a key at 1000.0
    settle_heap()
    now[0] += poller.THAW_QUIET - 0.5  # still typing: another key
    poller.note_input()
    settle_heap()
    assert thaws == [], "a due thaw waits while someone is at the keys"
    now[0] += poller.THAW_QUIET  # quiet for THAW_QUIET seconds
    settle_heap()
    assert thaws == [now[0]], "and runs at the first poll of a quiet moment"
    # someone who never stops: the thaw runs THAW_DEFER_MAX past its time all the same
    due = poller._next_thaw
    now[0] = due + poller.THAW_DEFER_MAX - 1
    poller.note_input()
    settle_heap()
    assert len(thaws) == 1
    now[0] = due + poller.THAW_DEFER_MAX
    poller.note_input()
    settle_heap()
    assert thaws[1:] == [due + poller.THAW_DEFER_MAX]


def test_the_records_a_queue_has_hundreds_of_thousands_of_are_not_tracked():
    """Job, JobGpus, Node, GpuGroup, SharedGres, Row, JobExtras and GpuRow hold no cycle,
    so the cyclic GC need not walk them (a full collection at 500k jobs walked ~2.6
    million of them; 20k tracked Nodes and their GpuGroups held 480k references that
    every thaw walked). A record type that became tracked again fails here; so does a
    node's tuple of GPU groups that a collection cannot untrack."""
    from cockpit.models import Job, JobGpus, Node as SlurmNode
    from cockpit.models.cluster import GpuGroup, SharedGres
    from cockpit.tui.gpurows import GpuRow
    from cockpit.tui.rows import JobExtras, job_row

    job = Job(7, name="train", state_flags=frozenset({"REQUEUED"}), gpus=(JobGpus("gpu01", "h100", 2, (0, 1)),))
    row = job_row(JobExtras(job, 50.0, None))
    gpu = GpuRow("gpu01/0", ("gpu01",), 0, "7", "alice", "alice", "", ((), ()), "")
    node = SlurmNode("gpu01", "mixed", gpus=tuple([GpuGroup("h100", 8, (0, 1))]),
                     sharing=tuple([SharedGres("shard", "h100", 16, 4)]))
    for untracked in (job, job.gpus[0], row, JobExtras(job), gpu, node, node.gpus[0], node.sharing[0]):
        assert not gc.is_tracked(untracked), type(untracked).__name__
    assert gc.is_tracked(node.gpus)  # built at run time: tracked until a collection looks at it
    gc.collect()
    assert not gc.is_tracked(node.gpus) and not gc.is_tracked(node.sharing)


def test_nodes_from_the_parse_worker_share_their_frozensets():
    """Each frozenset is a container the cyclic GC walks even inside an untracked Node:
    20k nodes arrived with 40k of them. Unpickled through the delta's form, nodes with
    the same flags hold one frozenset, and stay equal to what was sent."""
    import pickle

    from cockpit.backends.slurm_delta import dumps
    from cockpit.models import Node as SlurmNode

    sent = [SlurmNode(f"gpu{i:02d}", "idle", flags=frozenset({"drain"}), unknown=frozenset()) for i in range(3)]
    got = pickle.loads(dumps(sent))
    assert got == sent
    assert got[0].flags is got[1].flags is got[2].flags
    assert got[0].unknown is got[2].unknown


def test_garbage_that_outlived_a_young_collection_is_freed_at_the_next_poll():
    settle_heap()
    a, _ = pair()
    gone = weakref.ref(a)
    gc.collect(0)  # alive then: it moves on to the middle generation
    del a, _
    settle_heap()  # the poll's collection takes the middle generation too
    assert gone() is None
