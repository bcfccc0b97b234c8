"""Records that could not be read: one warning each, in one shape.

A reader that meets a record it cannot understand (a node, a job, a sacct line
...) keeps every other record and says ``<source>: <kind> <name> not
understood: <why>``. The snapshot carries these in ``errors`` (so the exit code
is 1) and the TUI counts them by kind ("1 node not understood") from the same
words, so the sentence below is the contract between the two.

A record whose one field that matters (state, GPUs, reason) cannot be read
stays in the view with that field unknown, and says ``<source>: <kind> <name>
<field> not understood: <why> (shown as unknown)``: also an error (exit 1),
counted apart ("1 node with unknown fields").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PHRASE = " not understood: "
_KINDS = r"(node|job|partition|reservation|sacct record|node event|telemetry row)"
_SHAPE = re.compile(_KINDS + r" (\S+) not understood: ")
_FIELD_SHAPE = re.compile(_KINDS + r" (\S+) (state|gpus|reason) not understood: ")
_LEFT_OUT = " (left out, the others are shown)"


def unread(source: str, kind: str, name: str, why: str) -> str:
    """The warning for one record of ``kind`` (node, job ...) that was left out."""
    return f"{source}: {kind} {name}{_PHRASE}{why}{_LEFT_OUT}"


def unread_field(source: str, kind: str, name: str, field: str, why: str) -> str:
    """The warning for one ``field`` (state, gpus, reason) of a record that stays
    in the view with that field shown as unknown."""
    return f"{source}: {kind} {name} {field}{_PHRASE}{why} (shown as unknown)"


def is_unread(message: str) -> bool:
    """True for a warning made by :func:`unread` or :func:`unread_field`."""
    return _SHAPE.search(message) is not None or _FIELD_SHAPE.search(message) is not None


def _count(errors: Iterable[str], partial: bool) -> dict[str, int]:
    out: dict[str, set[str]] = {}
    for err in errors:
        field = _FIELD_SHAPE.search(err)
        m = field if partial else (None if field else _SHAPE.search(err))
        if m:
            out.setdefault(m.group(1), set()).add(m.group(2))
    return {kind: len(names) for kind, names in out.items()}


def count_unread(errors: Iterable[str]) -> dict[str, int]:
    """{kind: how many records of it were not understood (left out)} from snapshot errors."""
    return _count(errors, partial=False)


def count_partial(errors: Iterable[str]) -> dict[str, int]:
    """{kind: how many records of it are shown with a field unknown}."""
    return _count(errors, partial=True)


def _phrase(counts: dict[str, int], tail: str) -> list[str]:
    if not counts:
        return []
    parts = [f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in counts.items()]
    return [", ".join(parts) + tail]


def summary(errors: Iterable[str]) -> str:
    """``"1 node, 2 jobs not understood"`` (and ``"1 node with unknown fields"``);
    "" when every record was read."""
    errors = tuple(errors)
    return "; ".join(_phrase(count_unread(errors), " not understood")
                     + _phrase(count_partial(errors), " with unknown fields"))
