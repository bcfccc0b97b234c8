"""Where the job's GPUs are: nodes, GPU indexes, NVLink domains, leaf switches.

Pure: builds from a cockpit Job, a planned node list or count, a Topology,
and the text of ``nvidia-smi topo -m``. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cockpit.plugins.api import ParseError, UsageError
from cockpit.plugins.api import Job, Topology, gpus_by_node

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True, slots=True)
class NodeAlloc:
    name: str
    gpus: tuple[int, ...]  # allocated GPU indexes, CUDA order
    placeholder: bool = False  # a planned node whose name Slurm has not chosen yet


@dataclass(frozen=True)
class Fabric:
    """Topology facts the rules need, as plain lookups.

    ``leaf`` maps node -> leaf switch (tree) or block name; ``parent`` maps a
    switch to its parent; ``domain_of_gpu`` maps a GPU index to its NVLink
    domain inside a node (from ``topo -m`` or the configured size).
    """

    kind: str = "none"  # tree | block | none
    leaf: Mapping[str, str] = field(default_factory=dict)
    parent: Mapping[str, str] = field(default_factory=dict)
    leaf_nodes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    domain_of_gpu: Mapping[int, int] = field(default_factory=dict)
    domain_size: int | None = None  # GPUs per NVLink domain when from config
    nvlink_spans_block: bool = False  # NVL72-style: a block is one NVLink domain

    def domain(self, node: str, gpu: int) -> tuple:
        if self.nvlink_spans_block and node in self.leaf:
            return ("block", self.leaf[node])
        if gpu in self.domain_of_gpu:
            return (node, self.domain_of_gpu[gpu])
        if self.domain_size:
            return (node, gpu // self.domain_size)
        return (node, 0)

    def top(self, leaf: str) -> str:
        seen = {leaf}
        while leaf in self.parent and self.parent[leaf] not in seen:
            leaf = self.parent[leaf]
            seen.add(leaf)
        return leaf


def fabric_from_topology(
    topo: Topology,
    domains: Mapping[int, int] | None = None,
    domain_size: int | None = None,
    nvlink_spans_block: bool = False,
) -> Fabric:
    """Index a cockpit Topology for fast node -> leaf and leaf -> parent lookups."""
    leaf: dict[str, str] = {}
    leaf_nodes: dict[str, tuple[str, ...]] = {}
    parent: dict[str, str] = {}
    for blk in topo.blocks:
        leaf_nodes[blk.name] = tuple(blk.nodes)
        for n in blk.nodes:
            leaf.setdefault(n, blk.name)
    for sw in topo.switches:
        if sw.nodes:
            leaf_nodes[sw.name] = tuple(sw.nodes)
            for n in sw.nodes:
                leaf.setdefault(n, sw.name)
        for child in sw.switches:
            parent[child] = sw.name
    return Fabric(
        kind=topo.kind if leaf else "none",
        leaf=leaf,
        parent=parent,
        leaf_nodes=leaf_nodes,
        domain_of_gpu=dict(domains or {}),
        domain_size=domain_size,
        nvlink_spans_block=nvlink_spans_block and topo.kind == "block",
    )


def from_job(job: Job) -> list[NodeAlloc]:
    """The job's nodes with their GPU indexes, in Slurm's node order.

    A pending job has no nodes yet: it gets placeholders named ``(1)``, ``(2)``...
    Raises UsageError when the job holds or asks for no GPUs.
    """
    by_node = gpus_by_node(job.gpus)  # an untyped request on a two-type node: two entries, one node
    out: list[NodeAlloc] = []
    for name in job.nodes:
        g = by_node.get(name)
        if g is not None and g.count:
            out.append(NodeAlloc(name, tuple(g.indexes) or tuple(range(g.count))))
        elif job.gpus_per_node:
            out.append(NodeAlloc(name, tuple(range(job.gpus_per_node))))
    if not out and job.gpus_per_node and job.node_count:
        out = planned_count(job.node_count, job.gpus_per_node)
    if not out:
        raise UsageError(f"job {job.display_id} holds no GPUs that cockpit can see")
    return out


def planned_nodes(names: Sequence[str], gpus_per_node: int | Mapping[str, int]) -> list[NodeAlloc]:
    """A planned allocation on named nodes, GPUs 0..N-1 on each."""
    out = []
    for n in names:
        count = gpus_per_node.get(n, 0) if isinstance(gpus_per_node, Mapping) else gpus_per_node
        if count <= 0:
            raise UsageError(f"node {n} has no GPUs (give --gpus-per-node)")
        out.append(NodeAlloc(n, tuple(range(count))))
    return out


def planned_count(count: int, gpus_per_node: int) -> list[NodeAlloc]:
    """A planned allocation of ``count`` nodes not yet chosen by Slurm."""
    if count <= 0 or gpus_per_node <= 0:
        raise UsageError(f"--nodes {count} x --gpus-per-node {gpus_per_node}: both must be > 0")
    return [NodeAlloc(f"({i + 1})", tuple(range(gpus_per_node)), True) for i in range(count)]


# Cells of `nvidia-smi topo -p2p` (peer access status), which is not a link matrix.
_P2P_CELLS = {"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"}


@dataclass(frozen=True)
class TopoMatrix:
    """What a ``topo -m`` says: NVLink domains and how much of the node it covers."""

    domains: Mapping[int, int]  # GPU index -> domain id, for every GPU the matrix names
    gpus: tuple[int, ...]  # GPU columns of the header
    rows: tuple[int, ...]  # GPUs that have a row (an excerpt may cut rows)
    nvlink: bool  # any NV# cell at all (False: a PCIe-only box)
    links: tuple[str, ...] = ()  # the NV# kinds seen, e.g. ("NV12",)
    cells: Mapping[int, int] = field(default_factory=dict)  # GPU row -> GPU columns it has (a cut row has fewer)

    def unknown_pairs(self) -> list[tuple[int, int]]:
        """GPU pairs whose link no row shows (both rows cut or missing there)."""
        def shown(a: int, b: int) -> bool:
            return self.cells.get(a, 0) > self.gpus.index(b) if b in self.gpus else False

        return [(a, b) for i, a in enumerate(self.gpus) for b in self.gpus[i + 1:] if not (shown(a, b) or shown(b, a))]


def read_topo_m(text: str) -> TopoMatrix:
    """NVLink domains from ``nvidia-smi topo -m``: GPUs joined by any ``NV#`` entry
    share a domain (union-find over the matrix, rows and columns, so an excerpt
    whose first row names every peer still covers them all). Tabs and ANSI
    underline escapes (TTY captures) are accepted.

    Raises ParseError when no GPU matrix is found, or for ``topo -p2p`` output
    (peer-access status, not links)."""
    lines = [_ANSI.sub("", ln).replace("\t", " ") for ln in text.splitlines()]
    if any("Chipset not supported" in ln for ln in lines):
        raise ParseError("nvidia-smi topo -m", "this is `nvidia-smi topo -p2p` output (peer access status), not the link matrix")
    header = None
    rows: dict[int, list[str]] = {}
    for ln in lines:
        cells = ln.split()
        if not cells:
            continue
        if header is None and cells[0].startswith("GPU") and cells[0][3:].isdecimal():
            header = [c for c in cells if re.fullmatch(r"GPU\d+", c)]
            continue
        if header is not None and re.fullmatch(r"GPU\d+", cells[0]):
            rows[int(cells[0][3:])] = cells[1 : 1 + len(header)]
        elif header is not None and rows:
            break  # the legend or the next capture starts
    if header is None or not rows:
        raise ParseError("nvidia-smi topo -m", "no GPU matrix found")
    cols = [int(h[3:]) for h in header]
    values = {c for cells in rows.values() for c in cells} - {"X"}
    if values and values <= _P2P_CELLS:
        raise ParseError("nvidia-smi topo -m", "this is `nvidia-smi topo -p2p` output (peer access status), not the link matrix")
    parent = {g: g for g in set(cols) | set(rows)}

    def find(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    links = []
    for g, cells in rows.items():
        for col, cell in zip(cols, cells):
            if re.fullmatch(r"NV\d+", cell):
                links.append(cell)
                parent[find(g)] = find(col)
    roots = sorted({find(g) for g in parent})
    domains = {g: roots.index(find(g)) for g in sorted(parent)}
    return TopoMatrix(domains, tuple(cols), tuple(sorted(rows)), bool(links), tuple(sorted(set(links))),
                      {g: _whole_cells(cells) for g, cells in rows.items()})


_TOPO_CELL = re.compile(r"X|SYS|NODE|PHB|PXB|PIX|NV\d+")


def _whole_cells(cells: list[str]) -> int:
    """How many of a row's GPU cells were read whole (a cut row ends in a partial one, "NV" of "NV12")."""
    n = 0
    while n < len(cells) and _TOPO_CELL.fullmatch(cells[n]):
        n += 1
    return n


def parse_topo_m(text: str) -> dict[int, int]:
    """GPU index -> NVLink domain id from ``nvidia-smi topo -m`` (see read_topo_m). Raises ParseError."""
    return dict(read_topo_m(text).domains)


def gpu_count(nodes: Iterable[NodeAlloc]) -> int:
    return sum(len(n.gpus) for n in nodes)


def with_virtual_leaf(fabric: Fabric, nodes: Iterable[NodeAlloc], leaf: str = "(one switch)") -> Fabric:
    """Put not-yet-chosen nodes under one virtual leaf: what ``--switches=1`` promises."""
    names = tuple(n.name for n in nodes)
    mapping = dict(fabric.leaf)
    mapping.update({n: leaf for n in names})
    members = dict(fabric.leaf_nodes)
    members[leaf] = names
    return Fabric(fabric.kind if fabric.kind != "none" else "tree", mapping, fabric.parent, members,
                  fabric.domain_of_gpu, fabric.domain_size, fabric.nvlink_spans_block)
