"""Pairwise search for the slow node: plan pairs, rank them, name the culprit.

Round 1 tests disjoint pairs (node01+node02, node03+node04, ...). A pair is slow
when its busbw is below ``slow_ratio`` x its reference: the expected busbw when
one is configured, else the median busbw of the *other* pairs measured (its
peers: pairs on one fabric should match). Round 2 pairs every node of a slow
pair with a node from a fast pair. A node is named the culprit when it is in
every slow pair it was tested in and in no fast pair; a node cleared by a fast
pair is innocent. When two nodes cannot be told apart (no fast partner was
available) both are named as suspects, ambiguously.

Why the median of the peers and 0.70 (``DEFAULT_SLOW_RATIO``): on a healthy
fabric, multi-node nccl-tests runs of the same size vary by ~5-10% run to run,
so healthy pairs sit at ~0.9-1.1 x the peers' median; 0.70 is 3 or more such
spreads below it (a false "slow" on a healthy pair is rare even across dozens of
pairs), while a pair at 50-60% of its peers, which is a broken link, NIC or
node, is always named. The median, unlike the best pair, is not raised by one
pair that happened to run fast (or sat on one leaf switch), and leaving the pair
itself out lets two pairs be compared: a pair at 29% of the other one is slow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

# A pair is slow below this x its reference (see the module docstring for why 0.70).
DEFAULT_SLOW_RATIO = 0.70


@dataclass(frozen=True, slots=True)
class PairResult:
    nodes: tuple[str, ...]
    busbw: float | None  # GB/s; None when the run failed or its launch was broken
    note: str = ""

    def label(self) -> str:
        bw = "failed" if self.busbw is None else f"{self.busbw:.2f} GB/s"
        return f"{'+'.join(self.nodes)}: {bw}" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Suspicion:
    culprits: tuple[str, ...]  # nodes named, most certain first
    ambiguous: bool
    evidence: tuple[str, ...]
    reference: float | None
    slow: tuple[PairResult, ...]
    fast: tuple[PairResult, ...]

    @property
    def summary(self) -> str:
        if not self.slow:
            return "no slow pair: every pair reached the reference busbw"
        if not self.culprits and self.fast:
            # each node of a slow pair also ran fast with another partner: what is slow
            # is the path between those two (a link, a switch uplink), not a node
            return ("slow only in some pairs, each node fast in another: the path between them "
                    f"(link or switch), not one node: {', '.join(r.label() for r in self.slow)}")
        if not self.culprits:
            return "every pair is slow: a fabric-wide problem, not one node"
        who = ", ".join(self.culprits)
        return f"suspect{'s (ambiguous)' if self.ambiguous else ''}: {who}"


def first_round(nodes: Sequence[str]) -> list[tuple[str, str]]:
    """Disjoint pairs in the given order; an odd last node is paired with the first."""
    nodes = list(dict.fromkeys(nodes))
    if len(nodes) < 2:
        return []
    pairs = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2:
        pairs.append((nodes[-1], nodes[0]))
    return pairs


def peer_reference(results: Sequence[PairResult], index: int,
                   expected: float | None = None) -> float | None:
    """The busbw pair ``index`` is judged against: ``expected``, else the median of the
    other pairs' busbw (None when no other pair has a figure)."""
    if expected:
        return expected
    peers = [r.busbw for i, r in enumerate(results) if i != index and r.busbw is not None]
    return median(peers) if peers else None


def split(results: Sequence[PairResult], slow_ratio: float = DEFAULT_SLOW_RATIO,
          expected: float | None = None) -> tuple[list[PairResult], list[PairResult], float | None]:
    """Partition results into (fast, slow, reference).

    Each pair is compared with its own reference (``peer_reference``). A failed pair is
    slow; a lone pair with nothing to compare is fast. The reference returned, for the
    report, is ``expected`` or else the median of all the pairs' busbw.
    """
    seen = [r.busbw for r in results if r.busbw is not None]
    ref = expected if expected else (median(seen) if seen else None)
    fast, slow = [], []
    for i, r in enumerate(results):
        own = peer_reference(results, i, expected)
        if r.busbw is None or (own is not None and r.busbw < slow_ratio * own):
            slow.append(r)
        else:
            fast.append(r)
    return fast, slow, ref


def second_round(results: Sequence[PairResult], slow_ratio: float = DEFAULT_SLOW_RATIO,
                 expected: float | None = None) -> list[tuple[str, str]]:
    """Re-pair each node of a slow pair with a node cleared by a fast pair.

    Returns an empty list when nothing is slow or no node was cleared. Reference
    nodes are reused round-robin, so the caller runs pairs that share a node one
    after the other.
    """
    fast, slow, _ = split(results, slow_ratio, expected)
    good = list(dict.fromkeys(n for r in fast for n in r.nodes))
    if not slow or not good:
        return []
    tested = {frozenset(r.nodes) for r in results}
    suspects = list(dict.fromkeys(n for r in slow for n in r.nodes if n not in good))
    pairs = []
    for i, node in enumerate(suspects):
        ref = good[i % len(good)]
        if frozenset((node, ref)) not in tested:
            pairs.append((node, ref))
    return pairs


def name_culprit(results: Sequence[PairResult], slow_ratio: float = DEFAULT_SLOW_RATIO,
                 expected: float | None = None) -> Suspicion:
    """Name the node(s) behind the slow pairs, with the pairs as evidence."""
    fast, slow, ref = split(results, slow_ratio, expected)
    cleared = {n for r in fast for n in r.nodes}
    candidates: dict[str, list[PairResult]] = {}
    for r in slow:
        for n in r.nodes:
            if n not in cleared:
                candidates.setdefault(n, []).append(r)
    # Most slow pairs first: the node in every slow pair is the likeliest.
    order = sorted(candidates, key=lambda n: (-len(candidates[n]), n))
    in_all = [n for n in order if len(candidates[n]) == len(slow)]
    culprits = in_all or order
    ambiguous = len(culprits) != 1
    evidence = []
    for n in culprits:
        pairs = candidates[n]
        evidence.append(f"{n}: slow in {len(pairs)} of {len(slow)} slow pair(s) "
                        f"({'; '.join(p.label() for p in pairs)}) and in no fast pair")
    if expected:
        evidence.append(f"reference {ref:.2f} GB/s (expected); slow = below {slow_ratio:.0%} of it")
    elif ref is not None:
        evidence.append(f"reference: the median of the other pairs (all pairs: {ref:.2f} GB/s); "
                        f"slow = below {slow_ratio:.0%} of it")
    evidence += [f"fast: {r.label()}" for r in fast]
    if slow and not fast:  # nobody was cleared: one node cannot be told from the fabric
        culprits, ambiguous = [], False
    return Suspicion(tuple(culprits), ambiguous, tuple(evidence), ref, tuple(slow), tuple(fast))
