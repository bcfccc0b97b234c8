"""Searches for concrete fixes: another placement, or another TP/PP/DP split.

Pure. A placement candidate changes the rank order, the Slurm distribution or
the node set (all under one leaf switch); a split candidate changes the sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cockpit.plugins.api import UsageError
from cockpit.plugins.api import collapse

from .alloc import Fabric, NodeAlloc
from .layout import Layout, Sizes, build_layout
from .memory import GIB, estimate
from .spec import DEFAULT_ORDER, TP_PP_DP_ORDER, LayoutSpec, expert_tp, normalise_order


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    changes: tuple[str, ...]  # human steps, e.g. "srun --distribution=block"
    nodelist: str | None = None  # set when the fix moves the job to other nodes


def one_leaf_nodes(nodes: Sequence[NodeAlloc], fabric: Fabric, usable: frozenset[str] | None) -> tuple[str, list[NodeAlloc]] | None:
    """Nodes under a single leaf (or block) that could hold this job, or None.

    Prefers the leaf that already holds most of the job's nodes and keeps those.
    Placeholders (nodes Slurm has not chosen) get one virtual leaf.
    """
    n = len(nodes)
    per_node = len(nodes[0].gpus) if nodes else 0
    best = None
    for leaf, members in fabric.leaf_nodes.items():
        pool = [m for m in members if usable is None or m in usable]
        if len(pool) < n:
            continue
        mine = [x.name for x in nodes if fabric.leaf.get(x.name) == leaf]
        score = len(mine)
        if best is None or score > best[0]:
            chosen = mine + [m for m in pool if m not in mine][: n - len(mine)]
            best = (score, leaf, sorted(chosen))
    if best is None:
        return None
    _, leaf, names = best
    return leaf, [NodeAlloc(name, tuple(range(per_node))) for name in names]


def placement_candidates(
    current: Layout, fabric: Fabric, usable: frozenset[str] | None, user_order: str
) -> list[Candidate]:
    """The current layout plus every other order x distribution x node set."""
    out = [Candidate(current, ())]
    orders = list(dict.fromkeys([user_order, DEFAULT_ORDER, TP_PP_DP_ORDER]))
    node_sets: list[tuple[list[NodeAlloc], str | None]] = [(list(current.nodes), None)]
    if len({fabric.leaf.get(n.name) for n in current.nodes}) > 1 or any(
        n.placeholder for n in current.nodes
    ):
        found = one_leaf_nodes(current.nodes, fabric, usable)
        if found and not current.nodes[0].placeholder:
            node_sets.append((found[1], found[0]))
    for nodes, leaf in node_sets:
        for order in orders:
            for dist in ("block", "cyclic"):
                if nodes == list(current.nodes) and "-".join(current.order) == "-".join(
                    normalise_order(order)
                ) and dist == current.distribution:
                    continue
                try:
                    lay = build_layout(nodes, current.sizes, normalise_order(order), dist, fabric)
                except UsageError:
                    continue
                changes = describe(current, order, dist, leaf, fabric, nodes)
                out.append(Candidate(lay, changes, collapse(n.name for n in nodes) if leaf else None))
    return out


def describe(current: Layout, order: str, dist: str, leaf: str | None, fabric: Fabric, nodes: Sequence[NodeAlloc]) -> tuple[str, ...]:
    """The steps that turn the current launch into this candidate."""
    steps = []
    if leaf is not None:
        steps.append(switch_option(fabric.kind, len(nodes)))
        steps.append(f"--nodelist={collapse(n.name for n in nodes)} (all under {leaf})")
    if normalise_order(order) != current.order:
        if order == TP_PP_DP_ORDER:
            steps.append("add --use-tp-pp-dp-mapping (rank order tp-cp-ep-pp-dp)")
        elif order == DEFAULT_ORDER:
            steps.append("drop --use-tp-pp-dp-mapping (rank order tp-cp-ep-dp-pp)")
        else:
            steps.append(f"rank order {order}")
    if dist != current.distribution:
        steps.append(f"srun --distribution={dist}")
    return tuple(steps)


def switch_option(kind: str, nnodes: int) -> str:
    """The sbatch option that keeps a job under one leaf switch or block."""
    if kind == "block":
        return f"sbatch --segment={nnodes}"
    return "sbatch --switches=1"


def best_candidate(cands: Sequence[Candidate]) -> Candidate:
    """Lowest cost; among equals, the one with fewest changes (stable)."""
    return min(cands, key=lambda c: (c.layout.cost(), len(c.changes)))


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def split_candidates(
    world: int, domain: int, spec: LayoutSpec, cp: int, ep: int, gpu_mem_gib: float, want: Sizes
) -> list[Sizes]:
    """TP/PP/DP splits of ``world`` that pass every divisibility rule, best first.

    TP and expert TP divide the NVLink domain, heads and query
    groups divide by TP, layers by PP, batch numbers divide, memory fits when
    the model size is known. Ordered by distance from what was asked.
    """
    out = []
    for tp in divisors(domain):
        etp = expert_tp(spec, tp)
        if domain % etp:
            continue
        if spec.heads and spec.heads % tp or spec.query_groups and spec.query_groups % tp:
            continue
        if world % (tp * cp):
            continue
        for pp in divisors(world // (tp * cp)):
            if spec.layers and spec.layers % pp:
                continue
            dp = world // (tp * pp * cp)
            if world % (etp * ep * pp):
                continue
            if spec.global_batch and spec.micro_batch and spec.global_batch % (spec.micro_batch * dp):
                continue
            if spec.zero_stage is not None and spec.zero_stage >= 2 and spec.pipeline_engine and pp > 1:
                continue
            mem = estimate(spec, tp, pp, dp, cp, ep, etp)
            if mem is not None and mem.total > gpu_mem_gib * GIB:
                continue
            out.append(Sizes(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, etp=etp))

    def distance(s: Sizes) -> float:
        return abs(math.log2(s.tp / want.tp)) + abs(math.log2(s.pp / want.pp))

    return sorted(out, key=lambda s: (distance(s), s.tp * s.pp))
