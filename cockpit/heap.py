"""Big containers built out of the cyclic garbage collector's walks.

At 500k jobs a refresh makes a few containers with an entry per job: the job
store's values tuple, the jobs table's key lists and its order. A new container
is young; every collection of the youngest generation walks it until it moves on
(three passes over its entries, each touching the entry's object: a cache miss
apiece): 124 ms of the UI thread per refresh at 500k jobs (bench/bench_tui.py
BENCH_BREAKDOWN=1), 20 ms at 100k.

:func:`built_outside_gc` collects the youngest generation first (what is young
then is small: cheap), keeps automatic collections off while the block builds,
and collects the two younger generations once as it ends: what the other threads
made and dropped meanwhile (the UI thread draws while a table builds) is freed,
and what the block made moves to the oldest generation, which no young collection
walks. Once the program is frozen (:func:`freeze_program`) the oldest generation
is walked only by the poller's periodic thaw (cockpit.core.poller.settle_heap).
That one collection walks the block's containers only where they are tracked: the
job store's tuple is not (:func:`untracked`), nor is the jobs table's order (an
``array``). The entries are acyclic snapshot data freed by reference counting.

Threads: the jobs table builds in a worker thread while the UI thread draws;
nested and concurrent blocks share one state (the outermost enables again).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

BIG = 20_000  # entries from which a container is worth building this way
_lock = threading.RLock()  # reentrant: a finaliser run by the collection may build too
_depth = 0
_was_enabled = True


@contextmanager
def built_outside_gc(size: int = BIG) -> Iterator[None]:
    """Build a container of ``size`` entries inside this block; below BIG, a plain block.
    Its surviving containers end in the oldest generation."""
    global _depth, _was_enabled
    if size < BIG:
        yield
        return
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.collect(0)
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.collect(1)  # freed: what the others made and dropped meanwhile; the rest moves on to the oldest
                if _was_enabled:
                    gc.enable()


M_ARENA_MAX = -8  # glibc's <malloc.h>


def one_malloc_arena() -> bool:
    """Have glibc's malloc serve every thread from one arena; True when it took.

    Python's small objects come from its own pools; what is bigger (the job store's
    dict and values tuple, the tables' key lists: megabytes at 500k jobs) comes from
    malloc, which gives each thread that allocates its own arena, up to eight per core.
    The UI thread, the table builder and the store's thread (cockpit.backends._deltafeed)
    each kept their own freed megabytes: at 500k jobs the app's peak RSS was 787 MB,
    721 MB in one arena (bench/bench_tui.py, MALLOC_ARENA_MAX=1). Only one thread runs
    Python at a time anyway (the GIL), so one arena costs no parallelism. Call it before
    the app starts threads; arenas made before stay. A site's own MALLOC_ARENA_MAX wins.
    Not glibc (musl, macOS): nothing changes.
    """
    if "MALLOC_ARENA_MAX" in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, AttributeError, OSError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_ARENA_MAX, 1) == 1


UI_SWITCH_INTERVAL = 0.002  # seconds; CPython's default is 0.005


def responsive_gil() -> float:
    """Shorten the interval after which a thread waiting for the GIL asks its holder to
    let go (sys.setswitchinterval) to UI_SWITCH_INTERVAL; returns the interval it was.

    The UI thread gives the GIL up at every turn of the event loop (epoll_wait) and
    waits the whole interval to get it back whenever a worker thread runs Python
    meanwhile: unpickling the parse worker's jobs, the store's thread, the tables' and
    the Pulse's builds. A key goes through several turns before its frame is written,
    so during a first load at 500k jobs a key waited 5 ms a turn, many times over
    (bench/bench_tui.py --switch-interval compares, in the same command: key p99
    during the first load 58.6 ms at 1 ms against 108.1 at 5). 2 ms rather than 1:
    while a worker thread is inside one long C call the UI thread wakes every
    interval to ask again, and those wake-ups are its CPU; in two pairs of runs 2 ms
    gave the same keys within the noise (p99 38-55 against 38-66 ms) and a lower UI
    CPU median a refresh (41-52 against 53-56 ms). No interval cuts a long C call
    short (cockpit.tui.gilshare slices those)."""
    was = sys.getswitchinterval()
    sys.setswitchinterval(UI_SWITCH_INTERVAL)
    return was


def _gc_untrack() -> Callable[[object], None] | None:
    try:
        import ctypes

        fn = ctypes.pythonapi.PyObject_GC_UnTrack  # CPython's C API (stable ABI); the GIL stays held
    except (ImportError, AttributeError, OSError):  # not CPython: tuples stay tracked, only slower
        return None
    fn.argtypes, fn.restype = [ctypes.py_object], None
    return fn


_untrack = _gc_untrack()


def untracked(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` taken out of the cyclic GC's lists: for a tuple whose entries the GC
    does not track (gc=False Structs, str, int), the caller's promise.

    CPython does the same to such a tuple itself, but only when a collection walks it:
    the job store's 500k-entry tuple was walked by the first full collection after every
    refresh (settle_heap's thaw: each entry a cache miss). A tuple cannot change, so it
    can never join a cycle later; it is still freed by reference counting.
    """
    if (_untrack is not None and type(values) is tuple and values
            and not gc.is_tracked(values[0]) and not gc.is_tracked(values[-1])):  # the promise, spot-checked
        _untrack(values)
    return values


# gen-1 collections before an automatic full one: never. Once the program is frozen,
# a full collection runs only when the poller's settle_heap schedules its thaw.
NEVER = 1 << 30
_program = [False]  # freeze_program has run in this process


def program_frozen() -> bool:
    """Whether :func:`freeze_program` has run in this process."""
    return _program[0]


def freeze_program(young_threshold: int) -> None:
    """Collect everything once, freeze what is alive for good, and leave full collections
    to the caller (cockpit.core.poller.settle_heap's thaw); young collections every
    ``young_threshold`` allocations.

    Called once the app is up, at its first data: what is alive then is the program
    itself (modules, classes, functions, the app and its screens: ~73k tracked objects
    at 500k jobs) and stays alive; no later collection walks it again. Every full
    collection before walked it all: the thaw at 500k jobs walked ~98k objects, 37-107 ms
    (bench/bench_tui.py, BENCH_BREAKDOWN=1), and now walks what the program made since
    (~13-26k objects, mostly Textual's render caches): 12.6 ms. What is alive then and
    dropped later inside a reference cycle stays (once: a screen of the start, say).
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(young_threshold, gc.get_threshold()[1], NEVER)
    _program[0] = True
