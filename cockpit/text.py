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
# Characters that are invisible but reorder or hide text (bidi overrides, zero width).
_INVISIBLE = frozenset("\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff")


def _is_clean_ascii(s: str) -> bool:
    return s.isascii() and s.isprintable()


def sanitize(value: object) -> str:
    """Return ``value`` as a single line of printable text.

    Escape sequences are removed whole, tabs/newlines become one space, other
    control, format and bidi characters are dropped. Never raises.
    """
    s = "" if value is None else str(value)
    if _is_clean_ascii(s):  # the common case: nothing to do
        return s
    s = _ESCAPES.sub("", s)
    s = _WHITESPACE.sub(" ", s)
    return "".join(
        ch
        for ch in s
        if ch not in _INVISIBLE and unicodedata.category(ch) not in ("Cc", "Cs", "Co", "Cn")
    )


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
