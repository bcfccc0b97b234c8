"""Megatron-style rank arithmetic and Slurm's task -> node mapping.

The order string names axes fastest first: with ``tp-cp-ep-dp-pp``
``rank = tp_r + cp_r*tp + ep_r*tp*cp + dp_r*tp*cp*ep + pp_r*tp*cp*ep*dp``.
Megatron-Core builds two such generators over the same order: a dense one
(ep = 1) for the TP/CP/DP/PP groups and an expert one (tp = expert TP, cp = 1,
dp = world / (etp*ep*pp)) for the EP groups; we do the same. Our own code,
written from the arithmetic in Megatron-Core's RankGenerator docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cockpit.plugins.api import UsageError

from .alloc import NodeAlloc


def coords_of(rank: int, sizes: Mapping[str, int], order: Sequence[str]) -> dict[str, int]:
    """Decompose a global rank into one coordinate per axis (fastest axis first)."""
    out = {}
    for axis in order:
        out[axis] = rank % sizes[axis]
        rank //= sizes[axis]
    return out


def rank_of(coords: Mapping[str, int], sizes: Mapping[str, int], order: Sequence[str]) -> int:
    """The inverse of :func:`coords_of`."""
    rank, stride = 0, 1
    for axis in order:
        rank += coords[axis] * stride
        stride *= sizes[axis]
    return rank


def groups(sizes: Mapping[str, int], order: Sequence[str], axes: str) -> list[list[int]]:
    """Rank groups that vary only along ``axes`` (``"tp"`` or ``"tp-ep"``).

    Groups are numbered like Megatron's: the fixed coordinates enumerate
    groups fastest-axis first, and members are listed fastest-axis first.
    """
    chosen = set(axes.split("-"))
    world = 1
    for axis in order:
        world *= sizes[axis]
    keyed: dict[int, list[int]] = {}
    for rank in range(world):
        c = coords_of(rank, sizes, order)
        key, stride = 0, 1
        for axis in order:
            if axis not in chosen:
                key += c[axis] * stride
                stride *= sizes[axis]
        keyed.setdefault(key, []).append(rank)
    return [keyed[k] for k in sorted(keyed)]


def dense_sizes(tp: int, cp: int, dp: int, pp: int) -> dict[str, int]:
    return {"tp": tp, "cp": cp, "ep": 1, "dp": dp, "pp": pp}


def expert_sizes(world: int, etp: int, ep: int, pp: int) -> dict[str, int]:
    """Sizes of Megatron's expert rank generator. Raises UsageError if they do not divide."""
    if world % (etp * ep * pp):
        raise UsageError(
            f"world size {world} is not divisible by expert TP {etp} x EP {ep} x PP {pp}"
        )
    return {"tp": etp, "cp": 1, "ep": ep, "dp": world // (etp * ep * pp), "pp": pp}


def place_tasks(nodes: Sequence[NodeAlloc], ntasks: int, distribution: str) -> list[tuple[str, int]]:
    """Global task id -> (node, GPU index), one task per GPU, as srun places them.

    ``block`` fills a node before the next; ``cyclic`` deals tasks round-robin
    over nodes (a full node is skipped). A task's GPU is the node's n-th
    allocated GPU, n = its local id (CUDA_VISIBLE_DEVICES order).
    Raises UsageError for an unknown distribution or too few GPUs.
    """
    capacity = sum(len(n.gpus) for n in nodes)
    if ntasks > capacity:
        raise UsageError(f"{ntasks} ranks do not fit on {capacity} GPUs")
    dist = distribution.split(":")[0].lower()
    out: list[tuple[str, int]] = []
    if dist == "block":
        for n in nodes:
            for g in n.gpus:
                if len(out) < ntasks:
                    out.append((n.name, g))
        return out
    if dist == "cyclic":
        used = [0] * len(nodes)
        while len(out) < ntasks:
            for i, n in enumerate(nodes):
                if used[i] < len(n.gpus) and len(out) < ntasks:
                    out.append((n.name, n.gpus[used[i]]))
                    used[i] += 1
        return out
    raise UsageError(f"--distribution {distribution!r}: use block or cyclic")
