"""A concrete layout: rank -> (node, GPU), every parallel group and where it lands.

Pure. ``build_layout`` raises UsageError when the sizes do not fit the GPUs;
the rules catch the size problems first and report them as findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .alloc import Fabric, NodeAlloc
from .ranks import coords_of, dense_sizes, expert_sizes, groups, place_tasks

# Where a group lands, best first. "network": crosses nodes whose switch is unknown.
LEVELS = ("nvlink", "node", "leaf", "spine", "network")
GROUP_KINDS = ("tp", "cp", "ep", "ep_tp", "dp", "pp")


@dataclass(frozen=True, slots=True)
class Sizes:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 1

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    def label(self) -> str:
        parts = [f"TP={self.tp}", f"PP={self.pp}", f"DP={self.dp}"]
        if self.cp > 1:
            parts.append(f"CP={self.cp}")
        if self.ep > 1:
            parts.append(f"EP={self.ep}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Group:
    kind: str
    index: int
    ranks: tuple[int, ...]
    level: str
    nodes: tuple[str, ...]
    leaves: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "ranks": list(self.ranks),
            "level": self.level,
            "nodes": list(self.nodes),
            "leaves": list(self.leaves),
        }


@dataclass(frozen=True)
class Layout:
    sizes: Sizes
    order: tuple[str, ...]
    distribution: str
    nodes: tuple[NodeAlloc, ...]
    slots: tuple[tuple[str, int], ...]  # rank -> (node, gpu)
    coords: tuple[dict[str, int], ...]  # rank -> {tp, cp, dp, pp, ep}
    groups: dict[str, tuple[Group, ...]]
    fabric: Fabric

    def pp_neighbour_pairs(self) -> list[tuple[int, int]]:
        """Adjacent pipeline stages (rank, next rank) on different leaves."""
        out = []
        for g in self.groups["pp"]:
            for a, b in zip(g.ranks, g.ranks[1:]):
                la = self.fabric.leaf.get(self.slots[a][0])
                lb = self.fabric.leaf.get(self.slots[b][0])
                if la is not None and lb is not None and la != lb:
                    out.append((a, b))
        return out

    def bad_tp_groups(self) -> list[Group]:
        bad = [g for g in self.groups["tp"] if g.level != "nvlink"]
        if self.sizes.ep > 1:
            bad += [g for g in self.groups["ep_tp"] if g.level != "nvlink"]
        return bad

    def dp_leaf_total(self) -> int:
        return sum(max(1, len(g.leaves)) for g in self.groups["dp"])

    def cost(self) -> tuple[int, int, int]:
        """Lower is better: TP/EP groups off NVLink, PP hops across leaves, DP leaves."""
        return (len(self.bad_tp_groups()), len(self.pp_neighbour_pairs()), self.dp_leaf_total())


def level_of(slots: Sequence[tuple[str, int]], fabric: Fabric) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(level, nodes, leaves) of a set of GPUs."""
    nodes = tuple(dict.fromkeys(n for n, _ in slots))
    leaves_all = [fabric.leaf.get(n) for n in nodes]
    leaves = tuple(dict.fromkeys(x for x in leaves_all if x is not None))
    if len({fabric.domain(n, g) for n, g in slots}) == 1:
        return "nvlink", nodes, leaves
    if len(nodes) == 1:
        return "node", nodes, leaves
    if None in leaves_all:
        return "network", nodes, leaves
    return ("leaf" if len(leaves) == 1 else "spine"), nodes, leaves


def build_layout(
    nodes: Sequence[NodeAlloc], sizes: Sizes, order: Sequence[str], distribution: str, fabric: Fabric
) -> Layout:
    """Place every rank and classify every group. Raises UsageError when ranks do not fit."""
    world = sizes.world
    slots = place_tasks(nodes, world, distribution)
    dense = dense_sizes(sizes.tp, sizes.cp, sizes.dp, sizes.pp)
    expert = expert_sizes(world, sizes.etp, sizes.ep, sizes.pp)
    coords = []
    for r in range(world):
        c = coords_of(r, dense, order)
        c["ep"] = coords_of(r, expert, order)["ep"]
        coords.append(c)
    specs = {
        "tp": (dense, "tp"),
        "cp": (dense, "cp"),
        "dp": (dense, "dp"),
        "pp": (dense, "pp"),
        "ep": (expert, "ep"),
        "ep_tp": (expert, "tp-ep"),
    }
    out: dict[str, tuple[Group, ...]] = {}
    for kind, (sz, axes) in specs.items():
        made = []
        for i, ranks in enumerate(groups(sz, order, axes)):
            level, gnodes, leaves = level_of([slots[r] for r in ranks], fabric)
            made.append(Group(kind, i, tuple(ranks), level, gnodes, leaves))
        out[kind] = tuple(made)
    return Layout(sizes, tuple(order), distribution, tuple(nodes), tuple(slots), tuple(coords), out, fabric)


def layout_to_dict(layout: Layout, max_groups: int = 4096) -> dict[str, Any]:
    """JSON-able picture of a layout: ranks, groups (with levels) and a summary."""
    ranks = [
        {"rank": r, "node": n, "gpu": g, **layout.coords[r]} for r, (n, g) in enumerate(layout.slots)
    ]
    groups_out: dict[str, Any] = {}
    summary: dict[str, dict[str, int]] = {}
    for kind in GROUP_KINDS:
        gs = layout.groups[kind]
        if kind in ("ep", "ep_tp") and layout.sizes.ep == 1 or kind == "cp" and layout.sizes.cp == 1:
            continue
        counts: dict[str, int] = {}
        for g in gs:
            counts[g.level] = counts.get(g.level, 0) + 1
        summary[kind] = counts
        groups_out[kind] = [g.to_dict() for g in gs[:max_groups]]
    return {
        "order": "-".join(layout.order),
        "distribution": layout.distribution,
        "sizes": {
            "tp": layout.sizes.tp,
            "pp": layout.sizes.pp,
            "dp": layout.sizes.dp,
            "cp": layout.sizes.cp,
            "ep": layout.sizes.ep,
            "etp": layout.sizes.etp,
            "world": layout.sizes.world,
        },
        "nodes": [
            {
                "name": n.name,
                "gpus": list(n.gpus),
                "leaf": layout.fabric.leaf.get(n.name),
                "placeholder": n.placeholder,
            }
            for n in layout.nodes
        ],
        "ranks": ranks,
        "groups": groups_out,
        "summary": summary,
        "pp_cross_leaf_pairs": [list(p) for p in layout.pp_neighbour_pairs()],
    }
