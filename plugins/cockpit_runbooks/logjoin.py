"""Join the lines of a log that a terminal (or an issue's text box) hard-wrapped.

A wrap can fall anywhere: inside a number (xDiT#147: ``workMetaList_.size()=`` / ``3``),
inside the message's own words (open-r1#620: ``Watchdog caught colle`` / ``ctive
operation timeout``), and a long line can wrap twice. Lines are joined only where the
joined text holds a message that crosses the wrap: a message that one line holds
whole is never glued to its neighbour, so two records are never merged into one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_MAX_PIECES = 6  # a ~640-character heartbeat line at a 120-column terminal
# a wrap inside a word; one at a space the paste dropped; and "smart": a space only where
# neither side of the wrap has one (a line wrapped twice, once at a kept and once at a
# dropped space: milabench#269's "detected" / "by watchdog" wrapped again by a terminal)
_GLUES = ("", " ", None)
# Every message the watchdog parser reads holds one of these; a joined text without any
# is not tried against the regexes (most lines of a training log are neither).
KEYWORDS = ("WorkNCCL", "[PG ", "NCCL WARN", "NET/IB", "Call to ibv_")


def _join(pieces: Sequence[str], glue: str | None) -> str:
    if glue is not None:
        return glue.join(pieces)
    out = pieces[0]
    for p in pieces[1:]:
        out += ("" if out[-1:].isspace() or p[:1].isspace() else " ") + p
    return out


def _crossing(pieces: Sequence[str], glue: str | None, rxs: Sequence[re.Pattern]) -> bool:
    """A message starts in the first piece and ends in the last."""
    text = _join(pieces, glue)
    if not any(k in text for k in KEYWORDS):
        return False
    first_end = len(pieces[0])
    last_start = len(text) - len(pieces[-1])
    return any(m.start() < first_end and m.end() > last_start for rx in rxs for m in rx.finditer(text))


def _wrapped(lines: Sequence[str], i: int, rxs: Sequence[re.Pattern], record_start: re.Pattern,
             forced: bool) -> tuple[str, int] | None:
    """(joined text, pieces) when lines[i] continues onto the next lines (up to _MAX_PIECES).

    A piece that looks like a record start ends the search, except right after a line
    that holds a message's first words (``forced``): a wrap can fall just before a ``[``.
    An empty piece always ends it."""
    for k in range(2, _MAX_PIECES + 1):
        if i + k > len(lines):
            return None
        nxt = lines[i + k - 1]
        # an empty line ends the record; a line of spaces may be a wrapped line's trailing space,
        # put on a row of its own by a terminal exactly as wide as the text before it
        if not nxt or (nxt.strip() and record_start.match(nxt) and not (forced and k == 2)):
            return None
        for glue in _GLUES:
            if _crossing(lines[i:i + k], glue, rxs):
                return _join(lines[i:i + k], glue), k
    return None


def _warn_wrapped(lines: Sequence[str], i: int, record_start: re.Pattern, inner: Sequence[re.Pattern]) -> tuple[str, int]:
    """A NCCL WARN line and the pieces its message was wrapped onto (lines that start no
    record): glued with no space where that makes a message of ``inner`` (the IB/RoCE
    errors) cross the wrap, as a fixed-width terminal cuts words, else with one space."""
    k = 1
    while k < _MAX_PIECES and i + k < len(lines) and lines[i + k].strip() and not record_start.match(lines[i + k]) \
            and len(lines[i + k]) < 200:
        k += 1
    pieces = list(lines[i:i + k])
    if k > 1 and _crossing(pieces, "", inner) and not _crossing(pieces, " ", inner):
        return "".join(pieces), k
    return " ".join([pieces[0].rstrip()] + [p.strip() for p in pieces[1:]]), k


def spans(text: str, rxs: Sequence[re.Pattern], triggers: Sequence[str], record_start: re.Pattern,
          warn_re: re.Pattern, inner: Sequence[re.Pattern] = ()) -> list[tuple[int, int, str]]:
    """(first line number, lines joined, text) for every logical line of ``text``."""
    lines = text.splitlines()
    out: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        whole = any(rx.search(line) for rx in rxs)
        got = None if whole else _wrapped(lines, i, rxs, record_start, any(t in line for t in triggers))
        if got:
            out.append((i + 1, got[1], got[0]))
            i += got[1]
            continue
        if whole and warn_re.search(line):
            joined, k = _warn_wrapped(lines, i, record_start, inner)
            out.append((i + 1, k, joined))
            i += k
            continue
        out.append((i + 1, 1, line))
        i += 1
    return out
