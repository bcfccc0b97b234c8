"""cockpit.heap.built_outside_gc: a big container built in the block moves to the oldest
generation as the block ends (no young collection walks it), young garbage from before
the block is collected first, automatic collection is off inside and restored after, and small
containers are left alone. The tables that build with it keep long int orders in an
array the GC never walks. heap.untracked takes a tuple of untracked records (the job
and node stores' values) out of every collection. heap.one_malloc_arena has every
thread's malloc served from one arena (a child process counts them)."""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
import threading
import weakref
from array import array
from pathlib import Path

import pytest

from cockpit import heap
from cockpit.models import Job
from cockpit.tui.livetable import LiveTable
from cockpit.tui.rows import job_row


@pytest.fixture(autouse=True)
def _enabled():
    yield
    gc.enable()


def _tracked_young(obj) -> bool:
    return any(o is obj for g in (0, 1) for o in gc.get_objects(g))


def _oldest(obj) -> bool:
    return any(o is obj for o in gc.get_objects(2))


def test_a_big_container_built_in_the_block_moves_to_the_oldest_generation():
    with heap.built_outside_gc(heap.BIG):
        assert not gc.isenabled()
        big = [object() for _ in range(heap.BIG)]
        assert _tracked_young(big)
    assert gc.isenabled()
    assert gc.is_tracked(big) and not _tracked_young(big) and _oldest(big)


def test_below_big_the_block_changes_nothing():
    with heap.built_outside_gc(heap.BIG - 1):
        assert gc.isenabled()
        small = [object()]
    assert _tracked_young(small) and not _oldest(small)


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


def test_untracked_takes_a_tuple_of_untracked_entries_out_of_every_collection():
    jobs = tuple(Job(job_id=i, name=f"j{i}") for i in range(heap.BIG))
    assert gc.is_tracked(jobs) and not gc.is_tracked(jobs[0])  # what CPython leaves until a collection
    assert heap.untracked(jobs) is jobs
    assert not gc.is_tracked(jobs) and not _tracked_young(jobs) and not _oldest(jobs)
    gc.collect()  # a full collection neither walks nor frees it: it stays whole, freed by refcount
    assert len(jobs) == heap.BIG and jobs[-1].name == f"j{heap.BIG - 1}"


def test_a_tuple_holding_a_tracked_entry_stays_tracked():
    for held in ((Job(job_id=1), []), ([], Job(job_id=1))):
        assert heap.untracked(held) is held and gc.is_tracked(held)
    lst = [Job(job_id=1)]
    assert heap.untracked(lst) is lst and gc.is_tracked(lst)  # a list can change: never untracked
    assert heap.untracked(()) == ()


def test_the_job_and_node_stores_hand_out_untracked_tuples_of_untracked_records():
    from cockpit.backends.slurm_delta import JobsDiffer, NodesDiffer, store_for

    data = Path(__file__).resolve().parents[1] / "data"
    for store, differ, name in ((store_for("jobs"), JobsDiffer(), "slurm-24.11/squeue.json"),
                                (store_for("nodes"), NodesDiffer(fmt="scontrol"), "slurm-24.11/scontrol-show-node.json")):
        for delta in differ.feed((data / name).read_bytes()):
            store.apply(delta)
        values = store.values()
        assert values and not gc.is_tracked(values), name
        assert not any(map(gc.is_tracked, values)), name  # the promise untracked() relies on


def test_cyclic_garbage_made_during_the_block_is_collected_not_kept():
    gc.collect()
    with heap.built_outside_gc(heap.BIG):
        garbage = _Cycle()  # what the UI thread makes and drops while a table builds
        gone = weakref.ref(garbage)
        del garbage
        big = [0] * heap.BIG
    assert gone() is None and gc.is_tracked(big) and not _tracked_young(big) and _oldest(big)


_ARENAS = r'''
import ctypes, sys, threading
sys.path.insert(0, sys.argv[1])
from cockpit.heap import one_malloc_arena
took = one_malloc_arena() if sys.argv[2] == "one" else None
def grab():
    keep = [bytearray(64 * 1024) for _ in range(8)]  # under glibc's mmap threshold: from an arena
threads = [threading.Thread(target=grab) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(took, flush=True)
ctypes.CDLL(None).malloc_stats()  # "Arena N:" per arena, to stderr
'''


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's malloc")
def test_one_malloc_arena_serves_every_thread_from_one_arena():
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    root = str(Path(__file__).resolve().parents[2])

    def arenas(mode):
        out = subprocess.run([sys.executable, "-c", _ARENAS, root, mode], env=env, capture_output=True,
                             text=True, check=True)
        return out.stdout.strip(), out.stderr.count("Arena ")

    assert arenas("one") == ("True", 1)
    took, many = arenas("default")
    assert took == "None" and many > 1  # the check can fail: threads get arenas of their own without it


def test_a_sites_malloc_arena_max_is_left_alone(monkeypatch):
    from cockpit import heap

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert heap.one_malloc_arena() is False


def test_responsive_gil_shortens_the_switch_interval_and_says_what_it_was():
    was = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        assert heap.responsive_gil() == 0.005
        assert sys.getswitchinterval() == pytest.approx(heap.UI_SWITCH_INTERVAL)
        assert heap.UI_SWITCH_INTERVAL < 0.005  # shorter than CPython's default, or it would change nothing
    finally:
        sys.setswitchinterval(was)


_TUI_START = r'''
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.runner import LocalRunner
from cockpit.tui.app import CockpitApp

async def main():
    app = CockpitApp(SlurmCliBackend(LocalRunner(), bin_dir="/nonexistent"), poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await pilot.pause(0.2)
        print(sys.getswitchinterval(), "asyncssh" in sys.modules, "cryptography" in sys.modules)

asyncio.run(main())
'''


def test_the_tui_starts_without_asyncssh_and_with_the_shorter_switch_interval():
    # asyncssh with cryptography is ~27,000 objects that every thaw's full collection walks;
    # it is imported when a node is first opened over SSH (cockpit.remote.pool).
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", _TUI_START, root], capture_output=True, text=True, timeout=120,
                         check=True)
    interval, ssh, crypto = out.stdout.split()
    assert (float(interval), ssh, crypto) == (heap.UI_SWITCH_INTERVAL, "False", "False")
