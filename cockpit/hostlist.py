"""Slurm hostlists (``node[01-04,07]``) through ClusterShell's NodeSet.

We do not hand-write a hostlist parser: ClusterShell is the reference
implementation used by clush and understands every form Slurm prints. We only
count, before NodeSet runs, how many names a hostlist would give: NodeSet
materialises every one of them, so ``node[1-99999999]`` would take gigabytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetParseError

from cockpit.errors import UsageError

# The most names one hostlist may expand to. The largest Slurm clusters have some
# ten thousand nodes; 100k names take about 20 MB and half a second, while a typo
# such as node[1-99999999] would take some 17 GB.
MAX_NAMES = 100_000

# As NodeSet reads a bracket: from a "[" to the first "]" after it.
_BRACKET = re.compile(r"\[([^\]]*)\]")
# Between brackets, "," and these begin another pattern (NodeSet's set operators);
# anything else (letters, "-", spaces) joins two brackets into one product.
_OPERATOR = re.compile(r"[!&^]")
_DIGITS = re.compile(r"[0-9]+")
_BOUND_SEPARATOR = re.compile(r"[-,/]")


def expand(hostlist: str | None) -> tuple[str, ...]:
    """Expand ``node[01-03]`` into ``('node01', 'node02', 'node03')``.

    Empty or None gives an empty tuple. Order follows Slurm's (sorted, as NodeSet
    sorts). Raises UsageError naming the bad hostlist, also for one that would
    give more than MAX_NAMES names.
    """
    if not hostlist or hostlist in ("(null)", "None"):
        return ()
    try:
        if "[" in hostlist and _count(hostlist) > MAX_NAMES:
            raise UsageError(f"bad hostlist {_shown(hostlist)}: more than {MAX_NAMES:,} names")
        # No group resolver: a cluster string starting with '@' must never run a
        # site's group-source commands.
        return tuple(NodeSet(hostlist, resolver=RESOLVER_NOGROUP))
    except (NodeSetParseError, ValueError, TypeError) as exc:
        raise UsageError(f"bad hostlist {_shown(hostlist)}: {exc}") from None


def _count(hostlist: str) -> int:
    """How many names ``hostlist`` gives at most, without expanding it: brackets in
    one pattern multiply, patterns (and set operands) add. Malformed parts count
    as one name and are left to NodeSet to refuse."""
    total, part, pos = 0, 1, 0
    for m in _BRACKET.finditer(hostlist):
        start, end = m.span()
        if seps := hostlist.count(",", pos, start) + len(_OPERATOR.findall(hostlist, pos, start)):
            total, part = total + part + seps - 1, 1
        ranges = _ranges(m.group(1))
        size = sum((hi - lo) // by + 1 for lo, hi, by in ranges)
        if hostlist[start - 1:start].isdigit() or hostlist[end:end + 1].isdigit():
            size = max(size, _amended_size(hostlist, pos, m, ranges))
        # capped: the count only has to pass the limit, not grow a huge int
        part = min(part * size, MAX_NAMES + 1)
        pos = end
    return total + part + hostlist.count(",", pos) + len(_OPERATOR.findall(hostlist, pos))


def _ranges(text: str) -> list[tuple[int, int, int]]:
    """A bracket's ranges as ClusterShell's RangeSet reads them (``1-4,7``, ``1-9/2``,
    negative ``-3-2`` and ``-8--4``, numbers as int() takes them); an item it
    would refuse stands as one number."""
    out = []
    for item in text.split(","):
        base, _, step = item.partition("/")
        bounds = base.split("-")
        try:
            by = int(step) if step else 1
            if len(bounds) == 1:
                lo = hi = int(base)
            elif len(bounds) == 2:
                lo, hi = (int(bounds[0]), int(bounds[1])) if bounds[0].strip() else (-int(bounds[1]),) * 2
            else:
                lo, hi = -int(bounds[1]), int(bounds[-1]) * (-1 if len(bounds) == 4 else 1)
        except ValueError:
            lo = hi = by = 1
        out.append((lo, hi, by) if hi >= lo and by > 0 else (lo, lo, 1))
    return out


def _amended_size(hostlist: str, pos: int, m: re.Match, ranges: list[tuple[int, int, int]]) -> int:
    """A bound on a bracket's names when digits touch it. NodeSet appends the digits
    after it to every number, then prepends those before it to the bounds of each
    merged range: ``n1[1-20]`` is n11..n120, 110 names. So bound it by the lowest
    and highest number that can come out."""
    gap = hostlist[pos:m.start()]
    lead = gap[len(gap.rstrip("0123456789")):]  # not a "[0-9]+$" search: quadratic on long digit runs
    trail = _DIGITS.match(hostlist, m.end())
    trail = trail.group() if trail else ""
    low, high = min(lo for lo, _, _ in ranges), max(hi for _, hi, _ in ranges)
    width = max(len(str(abs(low))), len(str(abs(high))),
                *(len(b.strip()) for b in _BOUND_SEPARATOR.split(m.group(1))))
    if low < 0:  # NodeSet turns such a one into odd ranges: bound it by digit count
        return 2 * 10 ** (len(lead) + width + len(trail)) + 1
    if not lead:  # digits after the bracket only: every number is kept apart
        return 0
    shift, tail = 10 ** len(trail), int(trail) if trail else 0
    top = int(lead) * 10 ** (width + len(trail)) + high * shift + tail
    return top - int(lead + str(low * shift + tail)) + 1


def _shown(hostlist: str) -> str:
    """The hostlist for an error line: quoted, and cut when it is huge."""
    return repr(hostlist) if len(hostlist) <= 200 else repr(hostlist[:200]) + "..."


def collapse(names: Iterable[str]) -> str:
    """Fold node names into a compact hostlist string (``node[01-03]``)."""
    names = [n for n in names if n]
    if not names:
        return ""
    return str(NodeSet.fromlist(names, resolver=RESOLVER_NOGROUP))
