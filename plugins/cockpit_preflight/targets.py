"""Which nodes a pre-flight check runs on, and which partitions they are in (from ctx.cluster)."""

from __future__ import annotations

from collections.abc import Iterable

from cockpit.plugins.api import CheckContext, CockpitError, UsageError

# States in which a node can take a pre-flight job.
_USABLE = {"idle", "mixed", "allocated", "completing"}
_UNUSABLE_FLAGS = {"drain", "draining", "down", "not_responding", "maint", "reboot_requested", "fail"}


async def usable_nodes(ctx: CheckContext, partition: str) -> tuple[str, ...]:
    """The partition's nodes that can run a job. Raises UsageError when there are none
    or the cluster cannot be read."""
    try:
        nodes = await ctx.cluster.nodes()
    except CockpitError as exc:
        raise UsageError(f"cannot list the nodes of partition {partition!r}: {exc}") from None
    names = tuple(n.name for n in nodes if partition in n.partitions and n.state in _USABLE
                  and not set(n.flags) & _UNUSABLE_FLAGS)
    if not names:
        raise UsageError(f"no usable nodes in partition {partition!r}")
    return names


async def node_partitions(ctx: CheckContext, names: Iterable[str], partition: str | None) -> dict[str, tuple[str, ...]]:
    """Each node's partitions: ``(partition,)`` when one was given, else Slurm's list
    (empty when the cluster cannot be read: the '*' expectations apply)."""
    names = list(names)
    if partition:
        return {n: (partition,) for n in names}
    try:
        known = {n.name: tuple(n.partitions) for n in await ctx.cluster.nodes()}
    except CockpitError:
        known = {}
    return {n: known.get(n, ()) for n in names}
