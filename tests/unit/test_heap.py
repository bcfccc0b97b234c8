"""cockpit.heap.built_outside_gc: a big container built in the block is frozen as the
block ends (no young collection walks it), young garbage from before the block is
collected first, automatic collection is off inside and restored after, and small
containers are left alone. The tables that build with it keep long int orders in an
array the GC never walks."""

from __future__ import annotations

import gc
import threading
import weakref
from array import array

import pytest

from cockpit import heap
from cockpit.models import Job
from cockpit.tui.livetable import LiveTable
from cockpit.tui.rows import job_row


@pytest.fixture(autouse=True)
def _thawed():
    gc.unfreeze()
    yield
    gc.unfreeze()  # what the tests froze goes back to the collector's generations
    gc.enable()


def _tracked_young(obj) -> bool:
    return any(o is obj for o in gc.get_objects())  # the frozen are in no generation


def test_a_big_container_built_in_the_block_is_frozen():
    with heap.built_outside_gc(heap.BIG):
        assert not gc.isenabled()
        big = [object() for _ in range(heap.BIG)]
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    assert gc.is_tracked(big) and not _tracked_young(big)


def test_below_big_the_block_changes_nothing():
    with heap.built_outside_gc(heap.BIG - 1):
        assert gc.isenabled()
        small = [object()]
    assert gc.get_freeze_count() == 0
    assert _tracked_young(small)


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_young_cyclic_garbage_from_before_the_block_is_collected_not_frozen():
    gc.collect()
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    del garbage  # a cycle: only the collector frees it
    assert gone() is not None
    with heap.built_outside_gc(heap.BIG):
        pass
    assert gone() is None


def test_nested_and_threaded_blocks_enable_once_the_outermost_ends():
    inner_done = threading.Event()

    def other_thread():
        with heap.built_outside_gc(heap.BIG):
            pass
        inner_done.set()

    with heap.built_outside_gc(heap.BIG):
        t = threading.Thread(target=other_thread)
        t.start()
        assert inner_done.wait(10)
        assert not gc.isenabled()  # the other thread's block ended inside ours
        with heap.built_outside_gc(heap.BIG):
            pass
        assert not gc.isenabled()
    t.join()
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled():
    gc.disable()
    with heap.built_outside_gc(heap.BIG):
        pass
    assert not gc.isenabled()


def _jobs(n):
    return [Job(i, name=f"j{i % 13}", user="u", partition="p", state="RUNNING") for i in range(1, n + 1)]


@pytest.mark.parametrize("field", [None, 0])
def test_a_long_order_of_job_ids_is_an_array_and_agrees_with_the_index(field):
    jobs = _jobs(heap.BIG + 5)
    live = LiveTable(job_row, lambda j: j.job_id)
    live.configure("", None, field, True)
    data = live.update(jobs)
    assert isinstance(data.order, array) and data.order.typecode == "q"
    assert len(data.order) == len(jobs)
    assert sorted(data.order) == [j.job_id for j in jobs]
    for k in (data.order[0], data.order[-1], data.order[len(jobs) // 2]):
        assert data.order[data.index[k]] == k
    assert len(gc.get_referents(data.order)) <= 1  # a collection visits its type at most, no key


def test_a_short_order_and_string_keys_stay_tuples():
    live = LiveTable(job_row, lambda j: j.job_id)
    live.configure("", None, None, False)
    assert isinstance(live.update(_jobs(10)).order, tuple)
    names = LiveTable(job_row, lambda j: f"n{j.job_id}")
    names.configure("", None, None, False)
    data = names.update(_jobs(heap.BIG))
    assert isinstance(data.order, tuple) and data.order[0] == "n1"
