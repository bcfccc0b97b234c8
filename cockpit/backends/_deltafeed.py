"""How a backend takes one answer of its worker (a run of Deltas) into its
DeltaStore, the same for the CLI's parse worker and the pyslurm worker.

A first load (the store is empty) is applied as it comes, and shown in part at
most every :data:`PARTIAL_EVERY` seconds: 100k jobs appear as they are parsed.
A refresh is held back and applied whole at its end, so the views never see
half of one. A first load that fails is dropped: half a cluster is no result.
"""

from __future__ import annotations

import time
from typing import Any

from cockpit.backends.slurm_delta import Delta, DeltaStore

PARTIAL_EVERY = 1.0  # seconds between partial results of a first big load


class DeltaFeed:
    """One answer's Deltas into ``store``: :meth:`take` each, then :meth:`finish`,
    or :meth:`abandon` when the answer failed."""

    def __init__(self, store: DeltaStore) -> None:
        self.store = store
        self.progressive = not store.objects  # a first load: show it as it comes
        self.last: Delta | None = None  # the last Delta taken (the one marked done, at the end)
        self._pending: list[Delta] = []
        self._shown = float("-inf")  # a first load shows its first chunk at once

    def take(self, delta: Delta) -> bool:
        """Take one Delta; True when a partial result is due (``store.values()``)."""
        if self.progressive:
            self.store.apply(delta)
        else:
            self._pending.append(delta)
        self.last = delta
        if self.progressive and not delta.done and time.monotonic() - self._shown >= PARTIAL_EVERY:
            self._shown = time.monotonic()
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
