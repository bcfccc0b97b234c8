"""Big containers built out of the cyclic garbage collector's walks.

At 500k jobs a refresh makes a few containers with an entry per job: the job
store's values tuple, the jobs table's key lists and its order. A new container
is young; every collection of the youngest generation until it is frozen walks
it (three passes over its entries, each touching the entry's object: a cache
miss apiece), and settle_heap's collection at the next poll walked them all:
124 ms of the UI thread per refresh at 500k jobs (bench/bench_tui.py
BENCH_BREAKDOWN=1), 20 ms at 100k.

:func:`built_outside_gc` collects the youngest generation first (what is young
then is small: cheap), keeps automatic collections off while the block builds,
and freezes what the block made as it ends: the containers are never walked by
a young collection, and what was made before the block has been through a young
collection before it is frozen (as settle_heap does at each poll).
Cyclic garbage made inside the block waits for settle_heap's periodic thaw, as
everything that survives a poll already does. The entries are acyclic snapshot
data freed by reference counting, frozen or not.

Threads: the jobs table builds in a worker thread while the UI thread draws;
nested and concurrent blocks share one state (the outermost enables again).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BIG = 20_000  # entries from which a container is worth building this way
_lock = threading.RLock()  # reentrant: a finaliser run by the collection may build too
_depth = 0
_was_enabled = True


@contextmanager
def built_outside_gc(size: int = BIG) -> Iterator[None]:
    """Build a container of ``size`` entries inside this block; below BIG, a plain block."""
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
                gc.freeze()
                if _was_enabled:
                    gc.enable()
