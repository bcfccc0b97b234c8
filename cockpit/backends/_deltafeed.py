"""How a backend takes one answer of its worker (a run of Deltas) into its
DeltaStore, the same for the CLI's parse worker and the pyslurm worker.

A first load (the store is empty) is applied as it comes, and shown in part at
most every :data:`PARTIAL_EVERY` seconds, and only once it has grown by
:data:`PARTIAL_GROWTH` since the part shown last: 100k jobs appear as they are
parsed, and a 500k load is shown in a dozen parts, not 39 (every part costs the
views work over all the rows so far: evenly spaced parts made the load quadratic).
A refresh is held back and applied whole at its end, so the views never see
half of one. A first load that fails is dropped: half a cluster is no result.
"""

from __future__ import annotations

import time
from typing import Any

from cockpit.backends.slurm_delta import Delta, DeltaStore

PARTIAL_EVERY = 1.0  # seconds between partial results of a first big load
PARTIAL_GROWTH = 1.5  # a partial result has at least this many times the objects of the last one


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

    def finish(self) -> tuple[Any, ...]:
        """Apply what a refresh held back; the store's objects, complete."""
        for delta in self._pending:
            self.store.apply(delta)
        self._pending = []
        return self.store.values()
