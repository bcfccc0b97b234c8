"""How a backend takes one answer of its worker (a run of Deltas) into its
DeltaStore, the same for the CLI's parse worker and the pyslurm worker.

A first load (the store is empty) is applied as it comes, and shown in part at
most every :data:`PARTIAL_EVERY` seconds, and only once it has grown by
:data:`PARTIAL_GROWTH` since the part shown last: 100k jobs appear as they are
parsed, and a 500k load is shown in a dozen parts, not 39 (every part costs the
views work over all the rows so far: evenly spaced parts made the load quadratic).
A refresh is held back and applied whole at its end, so the views never see
half of one. A first load that fails is dropped: half a cluster is no result.

From :data:`OFF_THREAD_AT` objects, applying a refresh and making the store's
values tuple run in a worker thread (:meth:`DeltaFeed.complete`,
:meth:`DeltaFeed.partial`): at 500k jobs that was ~19 ms of the UI thread per
refresh, in one event-loop step (bench/bench_tui.py BENCH_BREAKDOWN=1: "delta
apply" 4.1 ms, "store values" 14.8 ms). A caller cancelled meanwhile leaves the
thread to finish; the next answer waits for it (:func:`settled`), so the store
is never changed by two threads at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from cockpit.backends.slurm_delta import Delta, DeltaStore

PARTIAL_EVERY = 1.0  # seconds between partial results of a first big load
PARTIAL_GROWTH = 1.5  # a partial result has at least this many times the objects of the last one
OFF_THREAD_AT = 50_000  # objects from which a store's work runs in a worker thread


async def settled(store: DeltaStore) -> DeltaStore:
    """``store``, once the thread a cancelled answer left running on it has finished."""
    busy = store.busy
    if busy is not None and not busy.done():
        await asyncio.wait([busy])
    store.busy = None
    return store


def _retrieve(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # re-raised to the caller when it still waits; else reported by the next answer


async def _off_thread(store: DeltaStore, size: int, fn: Callable[[], Any]) -> Any:
    if size < OFF_THREAD_AT:
        return fn()
    task = store.busy = asyncio.ensure_future(asyncio.to_thread(fn))
    task.add_done_callback(_retrieve)
    return await asyncio.shield(task)  # cancelled: the thread runs on, and settled() waits for it


class DeltaFeed:
    """One answer's Deltas into ``store``: :meth:`take` each, then :meth:`finish`,
    or :meth:`abandon` when the answer failed."""

    def __init__(self, store: DeltaStore) -> None:
        self.store = store
        self.progressive = not store.objects  # a first load: show it as it comes
        self.last: Delta | None = None  # the last Delta taken (the one marked done, at the end)
        self._pending: list[Delta] = []
        self._shown = float("-inf")  # a first load shows its first chunk at once
        self._shown_size = 0  # objects in the partial result shown last

    def take(self, delta: Delta) -> bool:
        """Take one Delta; True when a partial result is due (``store.values()``)."""
        if self.progressive:
            self.store.apply(delta)
        else:
            self._pending.append(delta)
        self.last = delta
        if self.progressive and not delta.done and time.monotonic() - self._shown >= PARTIAL_EVERY \
                and len(self.store.objects) >= PARTIAL_GROWTH * self._shown_size:
            self._shown, self._shown_size = time.monotonic(), len(self.store.objects)
            return True
        return False

    def abandon(self) -> None:
        """The answer failed: a first load leaves the store empty, a refresh leaves it as it was."""
        if self.progressive:
            self.store.objects = {}

    async def partial(self) -> tuple[Any, ...]:
        """The store's values so far (a partial result was due), off the UI thread when big."""
        return await _off_thread(self.store, len(self.store.objects), self.store.values)

    async def complete(self) -> tuple[Any, ...]:
        """:meth:`finish`, off the UI thread when the store is big."""
        size = len(self.store.objects) + sum(len(d.upserts) for d in self._pending)
        return await _off_thread(self.store, size, self.finish)

    def finish(self) -> tuple[Any, ...]:
        """Apply what a refresh held back; the store's objects, complete."""
        for delta in self._pending:
            self.store.apply(delta)
        self._pending = []
        return self.store.values()
