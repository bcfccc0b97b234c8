"""Slurm hostlists (``node[01-04,07]``) through ClusterShell's NodeSet.

We do not hand-write a hostlist parser: ClusterShell is the reference
implementation used by clush and understands every form Slurm prints.
"""

from __future__ import annotations

from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetParseError

from cockpit.errors import UsageError


def expand(hostlist: str | None) -> tuple[str, ...]:
    """Expand ``node[01-03]`` into ``('node01', 'node02', 'node03')``.

    Empty or None gives an empty tuple. Order follows Slurm's (sorted, as NodeSet
    sorts). Raises UsageError naming the bad hostlist.
    """
    if not hostlist or hostlist in ("(null)", "None"):
        return ()
    try:
        # No group resolver: a cluster string starting with '@' must never run a
        # site's group-source commands.
        return tuple(NodeSet(hostlist, resolver=RESOLVER_NOGROUP))
    except (NodeSetParseError, ValueError, TypeError) as exc:
        raise UsageError(f"bad hostlist {hostlist!r}: {exc}") from None


def collapse(names: Iterable[str]) -> str:
    """Fold node names into a compact hostlist string (``node[01-03]``)."""
    names = [n for n in names if n]
    if not names:
        return ""
    return str(NodeSet.fromlist(names, resolver=RESOLVER_NOGROUP))
