"""Records that could not be read: one warning each, in one shape.

A reader that meets a record it cannot understand (a node, a job, a sacct line
...) keeps every other record and says ``<source>: <kind> <name> not
understood: <why>``. The snapshot carries these in ``errors`` (so the exit code
is 1) and the TUI counts them by kind ("1 node not understood") from the same
words, so the sentence below is the contract between the two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PHRASE = " not understood: "
_SHAPE = re.compile(r"(?:^|: )(node|job|partition|reservation|sacct record|node event|telemetry row) "
                    r"(\S+) not understood: ")


def unread(source: str, kind: str, name: str, why: str) -> str:
    """The warning for one record of ``kind`` (node, job ...) that was left out."""
    return f"{source}: {kind} {name}{_PHRASE}{why} (left out, the others are shown)"


def is_unread(message: str) -> bool:
    """True for a warning made by :func:`unread`."""
    return _SHAPE.search(message) is not None


def count_unread(errors: Iterable[str]) -> dict[str, int]:
    """{kind: how many records of it were not understood} from snapshot errors."""
    out: dict[str, int] = {}
    for err in errors:
        m = _SHAPE.search(err)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def summary(errors: Iterable[str]) -> str:
    """``"1 node, 2 jobs not understood"``; "" when every record was read."""
    counts = count_unread(errors)
    if not counts:
        return ""
    parts = [f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in counts.items()]
    return ", ".join(parts) + " not understood"
