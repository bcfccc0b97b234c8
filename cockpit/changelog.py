"""What changed between two of a store's values tuples, for the views that follow it.

At 500k jobs the jobs table and the Pulse each found what changed in a refresh by
passing over every job again (``map``/``compress`` over the object identities,
cockpit/tui/livetable.py), ~10-20 ms of GIL per view per refresh for the 1% that
changed (issue #24). The job store (cockpit.backends.slurm_delta.DeltaStore) is
told exactly what changed: each Delta's upserts and removals. :class:`ChangeLog`
keeps that, step by step, for the last :data:`DEPTH` values tuples the store
handed out, and a view's :class:`Follower` asks it what changed between the
tuple the view read last and the one it reads now. Work then follows what changed.

The views never see the store: they see the values tuple in the snapshot. So the
log is found by that tuple's identity (:data:`_CURRENT`, the tuple each live log
published last). Nothing is trusted on identity alone: the log holds that tuple,
and a follower's answer is given only when the tuple asked about *is* the log's
current one and every step since the follower's last read is known. Anything
else (a first load, a reset, a refresh too big to record, a tuple the view made
itself, a store the view did not read before) answers None: the view's full pass,
as before.

Threads: the store's thread records and publishes; views ask from theirs.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

# Steps kept: a view that skipped more refreshes (hidden) makes a full pass. A step holds
# the objects it replaced or removed alive until it is dropped: DEPTH x RECORDED_SHARE of
# the store at most (at 500k jobs, a refresh that changed 5% each time: 75k old Jobs,
# ~70 MB); 1% changed, as usual, ~15k, most of them the store's current objects anyway.
DEPTH = 3
MIN_RECORDED = 4096  # changes recorded whatever the store's size ...
RECORDED_SHARE = 0.05  # ... and up to this share of it; more: a full pass (the table re-sorts from 20%)


class Changes(NamedTuple):
    """Between two values tuples of one store, by the store's key: ``upserts`` the
    objects new or changed (the newer), in the store's order where they are new to
    it; ``gone`` the objects that went (as they were then; it may name one the reader
    never had). A key in both went and came back: the store holds it at its end now.
    Read-only: shared."""

    upserts: Mapping[Any, Any]
    gone: Mapping[Any, Any]


NOTHING = Changes({}, {})

_lock = threading.Lock()
_CURRENT: weakref.WeakValueDictionary[int, ChangeLog] = weakref.WeakValueDictionary()


class ChangeLog:
    """One store's steps; the store calls :meth:`upsert`/:meth:`remove`/:meth:`lost`
    as it changes and :meth:`publish` with each new values tuple."""

    __slots__ = ("_steps", "_seq", "_current", "_up", "_gone", "_size", "__weakref__")

    def __init__(self) -> None:
        self._steps: list[tuple[int, Changes | None]] = []  # (seq, changes; None: unknown)
        self._seq = 0
        self._current: tuple[Any, ...] | None = None
        self._up: dict[Any, Any] | None = {}  # since the last publish; None: not known
        self._gone: dict[Any, Any] = {}
        self._size = 0

    # -- the store's side (one thread at a time) ---------------------------
    def upsert(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        up = self._up
        if up is None:
            return
        up.update(pairs)
        self._check_size()

    def remove(self, key: Any, old: Any) -> None:
        up = self._up
        if up is None:
            return
        up.pop(key, None)
        self._gone.setdefault(key, old)
        self._check_size()

    def lost(self) -> None:
        """What changes next is not known (the store was reset or replaced whole)."""
        self._up, self._gone = None, {}

    def _check_size(self) -> None:
        if len(self._up) + len(self._gone) > max(MIN_RECORDED, RECORDED_SHARE * self._size):
            self.lost()

    def publish(self, values: tuple[Any, ...]) -> None:
        """``values`` is the store's new values tuple: the changes recorded since the
        last one are the step to it."""
        step = None if self._up is None else Changes(self._up, self._gone)
        with _lock:
            old = self._current
            if old is not None and _CURRENT.get(id(old)) is self:
                del _CURRENT[id(old)]
            self._seq += 1
            self._steps.append((self._seq, step))
            del self._steps[:-DEPTH]
            self._current = values
            _CURRENT[id(values)] = self
        self._up, self._gone, self._size = {}, {}, len(values)

    # -- a follower's side ---------------------------------------------------
    def _since(self, seq: int, values: tuple[Any, ...]) -> Changes | None:
        """Under _lock: the changes from step ``seq`` to ``values`` (the current)."""
        if values is not self._current:
            return None
        if seq == self._seq:
            return NOTHING
        steps = [c for s, c in self._steps if s > seq]
        if len(steps) != self._seq - seq or any(c is None for c in steps):
            return None  # a step dropped (too old) or not known
        if len(steps) == 1:
            return steps[0]
        up: dict[Any, Any] = {}
        gone: dict[Any, Any] = {}
        for c in steps:  # as the store did: what went, then what came (at the end if it had gone)
            for k, old in c.gone.items():
                up.pop(k, None)
                gone.setdefault(k, old)
            up.update(c.upserts)
        return Changes(up, gone)


class Follower:
    """One reader's place in whichever store's values it reads (a view holds one)."""

    __slots__ = ("_log", "_seq")

    def __init__(self) -> None:
        self._log: Any = None  # a weak reference to the log read last
        self._seq = 0

    def changes(self, values: Any) -> Changes | None:
        """What changed since the values read last, or None: read ``values`` whole.
        Either way ``values`` is then the values read last; call :meth:`forget` if
        they could not be taken in."""
        if type(values) is not tuple:
            self._log = None
            return None
        with _lock:
            log = _CURRENT.get(id(values))
            if log is None or log._current is not values:
                self._log = None
                return None
            had = self._log() if self._log is not None else None
            out = log._since(self._seq, values) if had is log else None
            self._log, self._seq = weakref.ref(log), log._seq
        return out

    def forget(self) -> None:
        """The next :meth:`changes` answers None (a full pass)."""
        self._log = None

    @contextmanager
    def taking(self) -> Iterator[None]:
        """The reader takes the values in this block: if it fails, a full pass next."""
        try:
            yield
        except BaseException:
            self.forget()
            raise
