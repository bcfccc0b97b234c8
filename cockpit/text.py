"""Make cluster strings safe to show: no control or escape characters, bounded width.

Job names, reasons, comments and log lines come from users of the cluster.
They are data: a job called ``\\x1b]52;...`` must not reach the terminal as an
escape sequence, and ``[bold]`` must stay literal (callers render with
``rich.text.Text``, never markup). Everything here is pure and cheap, so it is
called for every cell.
"""

from __future__ import annotations

import re
import unicodedata

from rich.cells import cell_len

ELLIPSIS = "…"

# ANSI/VT sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other
# two-byte ESC sequences, and the 8-bit C1 forms of CSI/OSC.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[@-Z\\-_]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x9d[^\x07\x9c]*[\x07\x9c]?"
)
_WHITESPACE = re.compile(r"[\t\n\r\v\f]+")


class _DropOther(dict):
    """A ``str.translate`` table that deletes every character of Unicode's "Other"
    categories, filled on first sight of a code point: the lookups stay in C, and no
    table of all 1.1 million code points is built at import (that takes 0.2 s)."""

    def __missing__(self, cp: int) -> int | None:
        keep = None if unicodedata.category(chr(cp))[0] == "C" else cp
        if len(self) < 50_000:  # a string of every code point must not grow it without end
            self[cp] = keep
        return keep


_DROP_OTHER = _DropOther()


def sanitize(value: object) -> str:
    """Return ``value`` as a single line of printable text.

    Escape sequences are removed whole, tabs/newlines become one space, and then
    every character of Unicode's "Other" categories is dropped: controls (Cc),
    surrogates (Cs), private use (Co), unassigned (Cn) and every format character
    (Cf). Cf holds the zero-width and bidi controls, U+2060 word joiner, U+061C
    Arabic letter mark, the soft hyphen and the tag characters U+E0000-E007F that
    smuggle invisible ASCII. The zero-width joiner U+200D is dropped too, also
    inside emoji: a family emoji shows as its members, and nothing can hide
    between letters. Kept: spaces (Zs), U+2028/2029 (Zl, Zp) and combining marks
    (Mn, variation selectors among them). Never raises.
    """
    s = "" if value is None else str(value)
    if s.isprintable():  # the common case: no Other and no separator but " "
        return s
    s = _ESCAPES.sub("", s)
    s = _WHITESPACE.sub(" ", s)
    return s.translate(_DROP_OTHER)


def truncate(s: str, width: int) -> str:
    """Cut ``s`` to at most ``width`` terminal cells, ending in an ellipsis when cut."""
    if width <= 0:
        return ""
    if len(s) <= width and (s.isascii() or cell_len(s) <= width):
        return s
    if cell_len(s) <= width:
        return s
    out, used = [], 0
    for ch in s:
        w = cell_len(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + ELLIPSIS


def clean(value: object, width: int | None = None) -> str:
    """``sanitize`` then, if ``width`` is given, ``truncate``."""
    s = sanitize(value)
    return s if width is None else truncate(s, width)


def tail_lines(data: bytes, lines: int = 20) -> list[str]:
    """The last ``lines`` lines of a log as sanitized text (undecodable bytes replaced)."""
    text = data.decode("utf-8", "replace")
    # a progress bar written with \r keeps only its last state, like a terminal would show
    rows = [r.rsplit("\r", 1)[-1] for r in text.splitlines()]
    return [sanitize(r) for r in rows[-lines:]]


def one_line(text: str) -> str:
    """``text`` with every non-printable character escaped (\\n, \\x1b ...): messages echo
    argv and cluster strings, and a newline or a terminal escape sequence in them must
    neither split the one-line error nor reach the terminal raw."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
