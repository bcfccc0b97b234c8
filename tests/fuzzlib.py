"""What the evidence fuzz tests share: their hypothesis settings, the foreign lines they
put into recordings, and putting them in."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

TRUNC = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# a line of printable ASCII that no parser knows
foreign = st.text(st.characters(codec="ascii", categories=["L", "N", "P", "Zs"]), min_size=1, max_size=40).filter(str.strip)


def with_lines(text: str, inserts: Iterable[tuple[int, str]]) -> str:
    """``text`` with each (position, line) put in (positions wrap around its line count)."""
    lines = text.splitlines()
    for at, junk in inserts:
        lines.insert(at % (len(lines) + 1), junk)
    return "\n".join(lines)
