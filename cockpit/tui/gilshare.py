"""Passes over every job, cut into slices so that the GIL changes hands between them.

The jobs table and the Pulse find what changed in a worker thread with C-level
passes (``map``, ``set``) over every object. One such call never lets go of the
GIL: the interpreter hands it to a waiting thread only between bytecodes, after
``sys.getswitchinterval()`` (5 ms). At 500k jobs one pass held it for 20-75 ms
(more where the objects lie scattered in memory, after hours of churn), and the UI
thread, with a key to answer, waited all of it. Here each call covers SLICE
entries (~1-5 ms), and the loop between two calls is where the GIL can pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import filterfalse, islice
from typing import Any

SLICE = 16_384


def mapped(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """``list(map(fn, items))``, SLICE items per C call."""
    out: list[Any] = []
    it = iter(items)
    while True:
        before = len(out)
        out.extend(map(fn, islice(it, SLICE)))
        if len(out) - before < SLICE:
            return out


def key_set(keys: Iterable[Any]) -> set[Any]:
    """``set(keys)``, SLICE keys per C call."""
    out: set[Any] = set()
    it = iter(keys)
    while part := list(islice(it, SLICE)):
        out.update(part)
    return out


def missing_from(keys: Iterable[Any], present: set[Any]) -> list[Any]:
    """The ``keys`` not in ``present``, in their order, SLICE keys per C call."""
    out: list[Any] = []
    it = iter(keys)
    while True:
        part = list(islice(it, SLICE))
        out.extend(filterfalse(present.__contains__, part))
        if len(part) < SLICE:
            return out
