"""Nodes and partitions from ``sinfo --json``, ``scontrol show node --json`` and
slurmrestd ``/nodes`` and ``/partitions`` bodies, every dialect. Pure functions.

Shapes:
- <= 22.05 ``sinfo --json``: ``{"nodes": [node, ...]}`` (``"partitions"`` too when
  present), node ``"state": "idle"`` plus ``"state_flags": ["DRAIN"]``.
- >= 23.02 ``scontrol show node --json`` / restd: ``{"nodes": [...]}``, node
  ``"state": ["IDLE", "DRAIN"]``, numbers as ``{set, infinite, number}``.
- >= 23.02 ``sinfo --json``: ``{"sinfo": [group, ...]}``, one group per
  partition and set of alike nodes (``node.state``, ``nodes.nodes``, ``cpus.*``,
  ``memory.*``, ``gres.total/used``, ``reason.*``, ``partition{...}``).
  A group of several nodes has only totals: per-node CPU/memory use is split
  evenly and GPU indexes are left empty (a warning says so); a one-node group
  is exact. Prefer ``scontrol show node --json`` for node detail there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cockpit.backends.slurm_json_common import (
    Unknowns,
    expand_nodes,
    load_json,
    num,
    num0,
    read_each,
    records,
    str_list,
    text,
    time_or_none,
    warn,
)
from cockpit.backends.slurm_json_gres import GresItem, gpu_items, sharing_items, tres_gpus
from cockpit.errors import ParseError
from cockpit.models.cluster import (
    NODE_BASE_STATES, NODE_FLAGS, GpuGroup, Job, Node, Partition, SharedGres, mig_profile, record_replace,
)

# Slurm words that differ from ours (data_parser flag names, sinfo short forms).
_ALIASES = {
    "alloc": "allocated", "mix": "mixed", "idle": "idle", "comp": "completing",
    "no_respond": "not_responding", "maintenance": "maint", "drng": "drain",
    "power_up": "powering_up", "powered_up": "powering_up", "inval": "invalid",
    "reboot": "reboot_requested", "res": "reserved", "resv": "reserved",
    "npc": "perfctrs", "dynamic_future": "future", "fail": "fail",
}
# "drained"/"draining" are display words for DRAIN + a base state.
_DRAIN_WORDS = {"drained": "idle", "draining": "allocated", "drng": "allocated"}
# sinfo's compact suffixes (idle*, mix~ ...), in case a text state leaks in.
_SUFFIX_FLAGS = {"*": "not_responding", "~": "powered_down", "#": "powering_up",
                 "%": "powering_down", "$": "maint", "@": "reboot_requested",
                 "!": "power_down", "^": "reboot_issued", "-": "planned"}


def node_state(value: Any, extra_flags: Any, source: str,
               warnings: list[str] | None = None) -> tuple[str, frozenset[str]]:
    """(base state, flags), lower case, from ``"idle"`` + ``["DRAIN"]`` or
    ``["IDLE", "DRAIN"]``. Unknown words: base ``unknown`` / flag dropped, each
    with a warning. Raises ParseError for a non-string state."""
    words = list(str_list(value, "state", source)) if type(value) is not str else [value]
    words += str_list(extra_flags, "state_flags", source)
    base: str | None = None
    flags: set[str] = set()
    for raw in words:
        w = raw.strip().lower()
        while w and w[-1] in _SUFFIX_FLAGS:
            flags.add(_SUFFIX_FLAGS[w[-1]])
            w = w[:-1]
        if w in _DRAIN_WORDS:
            flags.add("drain")
            w = _DRAIN_WORDS[w]
        w = _ALIASES.get(w, w)
        if w in NODE_BASE_STATES and (base is None or base == "completing"):
            if base == "completing":
                flags.add("completing")
            base = w
        elif w in NODE_FLAGS:
            flags.add(w)
        elif w:
            warn(warnings, f"{source}: unknown node state word {raw!r} ignored")
    if base is None:
        if words:
            warn(warnings, f"{source}: node state {'+'.join(words)!r} has no base state; shown as unknown")
        base = "unknown"
    flags.discard(base)
    return base, frozenset(flags)


GpuUse = dict[str | None, set[int]]  # GPU type -> indexes in use


def gpu_use_by_node(jobs: Iterable[Job]) -> dict[str, GpuUse]:
    """node -> GPU type -> indexes held by running jobs."""
    use: dict[str, GpuUse] = {}
    for job in jobs:
        if job.state not in ("RUNNING", "SUSPENDED", "COMPLETING"):
            continue
        for g in job.gpus:
            use.setdefault(g.node, {}).setdefault(g.type, set()).update(g.indexes)
    return use


def join_gpu_use(nodes: Sequence[Node], jobs: Iterable[Job]) -> Sequence[Node]:
    """Nodes whose record counts GPUs in use without saying which get the indexes from the jobs.

    Slurm 22.05 prints an untyped GPU's use as ``GresUsed=gpu:2`` (recorded:
    tests/data/slurm-22.05/site-untyped-gres-used.txt); the running jobs' allocations name the
    indexes (``gpu:(null):2(IDX:0-1)``), as pyslurm's nodes take them. Only where the jobs hold as
    many as the node counts: a job that ended between the two reads leaves the count alone.
    """
    need = {n.name for n in nodes if any(g.used and not g.alloc_indexes for g in n.gpus)}
    if not need:
        return nodes
    use = gpu_use_by_node(j for j in jobs if any(g.node in need for g in j.gpus))
    out = []
    for n in nodes:
        held = use.get(n.name) if n.name in need else None
        if held:
            groups = []
            for g in n.gpus:
                idx = held.get(g.type)
                if idx is None and len(n.gpus) == 1:
                    idx = set().union(*held.values())  # untyped config, typed job allocation (or vice versa)
                if g.used and not g.alloc_indexes and idx and len(idx) == g.used:
                    g = record_replace(g, alloc_indexes=tuple(sorted(idx)), used=None)
                groups.append(g)
            n = record_replace(n, gpus=tuple(groups))
        out.append(n)
    return tuple(out)


def gpu_groups(gres: str, gres_used: str, source: str, tres: str = "") -> tuple[GpuGroup, ...]:
    """GPUs of a node from ``gres`` (totals) and ``gres_used`` (IDX lists).

    Some sites' nodes print ``gres`` empty while ``tres`` (CfgTRES) counts
    ``gres/gpu=4`` (Sherlock, SlurmCommander issue 5): the GPUs are then taken
    from the TRES, so the node is not shown GPU-less."""
    totals = gpu_items(gres, source)
    if not totals:
        count, gtype = tres_gpus(_tres_gpu_entries(tres), source) if "gres/gpu" in tres else (0, None)
        if not count:
            return ()
        totals = (GresItem("gpu", gtype, count, None),)
    used = {u.type: u for u in gpu_items(gres_used, source)}
    out = []
    for t in totals:
        u = used.get(t.type)
        if u is None and len(totals) == 1 and len(used) == 1:
            u = next(iter(used.values()))  # typed total, untyped use (or vice versa)
        idx = (u.indexes or ()) if u else ()
        # "gpu:4" without (IDX:...) still says 4 are in use
        in_use = u.count if u is not None and u.indexes is None and u.count is not None else None
        out.append(GpuGroup(type=t.type, count=t.count or 0, alloc_indexes=idx, used=in_use))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class NodeGres:
    """A node's GRES as the views show them: whole GPUs, MIG slices, and sharing GRES."""

    gpus: tuple[GpuGroup, ...] = ()
    mig: tuple[GpuGroup, ...] = ()
    sharing: tuple[SharedGres, ...] = ()

    def fields(self) -> dict[str, Any]:
        """As keyword arguments of :class:`~cockpit.models.Node`."""
        return {"gpus": self.gpus, "mig": self.mig, "sharing": self.sharing}


def node_gres(gres: str, gres_used: str, source: str, tres: str = "") -> NodeGres:
    """A node's GPUs, MIG slices and shards/MPS from ``gres`` and ``gres_used``.

    A GPU type that is a MIG profile (``gpu:1g.10gb:7``) is a slice, kept apart
    from the whole GPUs (docs/inputs.md says why). Raises ParseError."""
    groups = gpu_groups(gres, gres_used, source, tres)
    return NodeGres(gpus=tuple(g for g in groups if not mig_profile(g.type)),
                    mig=tuple(g for g in groups if mig_profile(g.type)),
                    sharing=sharing_gres(gres, gres_used, source))


def sharing_gres(gres: str, gres_used: str, source: str) -> tuple[SharedGres, ...]:
    """``shard``/``mps`` totals from ``gres`` with their use from ``gres_used``.

    Slurm lists every configured GRES in ``gres_used``; a sharing GRES it does not
    list there is in use by an unknown count (None), never 0. Raises ParseError."""
    totals = sharing_items(gres, source)
    if not totals:
        return ()
    used: dict[tuple[str, str | None], int] = {}
    for u in sharing_items(gres_used, source):
        used[(u.name, u.type)] = used.get((u.name, u.type), 0) + (u.count or 0)
    out = []
    for t in totals:
        u = used.get((t.name, t.type))
        if u is None:
            same_used = [v for (name, _), v in used.items() if name == t.name]
            same_total = [x for x in totals if x.name == t.name]
            if len(same_used) == 1 and len(same_total) == 1:
                u = same_used[0]  # typed total, untyped use (shard:(null):0), or the other way round
        out.append(SharedGres(name=t.name, type=t.type, total=t.count or 0, used=u))
    return tuple(out)


def _tres_gpu_entries(tres: str) -> str:
    # CfgTRES lists gres/gpu=4 and, with types, gres/gpu:h100=4 as well: the
    # untyped total alone, so the GPUs are not counted twice.
    entries = [e for e in tres.split(",") if e.startswith("gres/gpu")]
    plain = [e for e in entries if e.startswith("gres/gpu=")]
    return ",".join(plain or entries)


def node_from_record(rec: dict[str, Any], source: str, warnings: list[str] | None = None) -> Node:
    """One node object (``nodes`` list of any dialect) as a :class:`Node`.

    Its state, GPUs or reason that cannot be read is named in ``Node.unknown``
    with a warning, and the node stays; anything else wrong raises ParseError."""
    g = rec.get
    name = text(g("name"), "name", source)
    if not name:
        raise ParseError(source, "a node has no name")
    unknown = Unknowns(source, "node", name, warnings)
    try:
        state, flags = unknown.read("state", lambda: node_state(g("state"), g("state_flags"), source, warnings),
                                    ("unknown", frozenset()))
        reason = unknown.read("reason", lambda: text(g("reason"), "reason", source) or None, None)
        # 24.11 reports user root (uid 0) and time 0 for nodes without a reason.
        user = text(g("reason_set_by_user"), "reason_set_by_user", source) if reason else ""
        when = time_or_none(g("reason_changed_at"), "reason_changed_at", source)
        gres = unknown.read("gpus", lambda: node_gres(text(g("gres"), "gres", source),
                                                      text(g("gres_used"), "gres_used", source), source,
                                                      _text_or_empty(g("tres"))), NodeGres())
        return Node(
            name=name,
            state=state,
            flags=flags,
            reason=reason,
            reason_user=user or None,
            reason_time=when if reason else None,
            cpus=num0(g("cpus"), "cpus", source),
            alloc_cpus=num0(g("alloc_cpus"), "alloc_cpus", source),
            memory_mb=num0(g("real_memory"), "real_memory", source),
            alloc_memory_mb=num0(g("alloc_memory"), "alloc_memory", source),
            partitions=str_list(g("partitions"), "partitions", source),
            **gres.fields(),
            address=text(g("address"), "address", source) or None,
            features=str_list(g("features"), "features", source),
            boot_time=time_or_none(g("boot_time"), "boot_time", source),
            unknown=unknown.frozen(),
        )
    except ParseError as exc:
        raise ParseError(source, f"node {name}: {exc.detail}") from None


def _text_or_empty(value: Any) -> str:
    return value if type(value) is str else ""


def parse_scontrol_nodes(data: bytes | str, source: str = "scontrol show node --json",
                         warnings: list[str] | None = None) -> tuple[Node, ...]:
    """Nodes from ``scontrol show node --json`` or a slurmrestd nodes body."""
    doc = load_json(data, source)
    return _nodes_list(records(doc, "nodes", source), source, warnings)


def _nodes_list(recs: list[Any], source: str, warnings: list[str] | None) -> tuple[Node, ...]:
    return read_each(recs, "node", source, lambda r: node_from_record(r, source, warnings), warnings)


def parse_sinfo(data: bytes | str, source: str = "sinfo --json",
                warnings: list[str] | None = None) -> tuple[tuple[Node, ...], tuple[Partition, ...]]:
    """(nodes, partitions) from ``sinfo --json`` in the <= 22.05 ``nodes`` shape
    or the >= 23.02 grouped ``sinfo`` shape. Raises ParseError."""
    doc = load_json(data, source)
    if "sinfo" in doc:
        from cockpit.backends.slurm_json_sinfo import parse_sinfo_groups

        return parse_sinfo_groups(records(doc, "sinfo", source), source, warnings)
    nodes = _nodes_list(records(doc, "nodes", source), source, warnings)
    parts = doc.get("partitions")
    if isinstance(parts, list):
        partitions = _partitions_list(parts, source, warnings)
    else:
        partitions = partitions_from_nodes(nodes)
    return nodes, partitions


def partitions_from_nodes(nodes: tuple[Node, ...]) -> tuple[Partition, ...]:
    """Partitions known only by their members (22.05 sinfo has no partition list)."""
    members: dict[str, list[str]] = {}
    for n in nodes:
        for p in n.partitions:
            members.setdefault(p, []).append(n.name)
    return tuple(Partition(name=p, nodes=tuple(m)) for p, m in members.items())


def parse_partitions(data: bytes | str, source: str = "partitions",
                     warnings: list[str] | None = None) -> tuple[Partition, ...]:
    """Partitions from a slurmrestd ``/partitions`` body (``{"partitions": [...]}``)."""
    doc = load_json(data, source)
    return _partitions_list(records(doc, "partitions", source), source, warnings)


def _partitions_list(recs: list[Any], source: str, warnings: list[str] | None = None) -> tuple[Partition, ...]:
    return read_each(recs, "partition", source, lambda r: partition_from_record(r, source), warnings)


def _sub(rec: dict[str, Any], key: str) -> dict[str, Any]:
    v = rec.get(key)
    return v if type(v) is dict else {}


def partition_from_record(rec: dict[str, Any], source: str) -> Partition:
    """One partition object (openapi v0.0.3x flat keys or data_parser nested keys)."""
    name = text(rec.get("name"), "partition name", source)
    if not name:
        raise ParseError(source, "a partition has no name")
    nodes_v = rec.get("nodes")
    hosts = _sub(rec, "nodes").get("configured") if type(nodes_v) is dict else nodes_v
    state_v = _sub(rec, "partition").get("state", rec.get("state"))
    states = str_list(state_v, "partition state", source) if type(state_v) is not str else (state_v,)
    flags = {f.upper() for f in str_list(rec.get("flags"), "partition flags", source)}
    max_time = _sub(rec, "maximums").get("time", rec.get("maximum_time", rec.get("max_time")))
    cpus = _sub(rec, "cpus").get("total", rec.get("total_cpus"))
    return Partition(
        name=name,
        nodes=expand_nodes(hosts, "partition nodes", source),
        state=(states[0].upper() if states else "UP"),
        is_default="DEFAULT" in flags or rec.get("default") is True,
        max_time=num(max_time, "partition max_time", source),
        total_cpus=num0(cpus, "partition cpus", source),
    )


def parse_version(meta_or_text: Any) -> str:
    """Slurm version as ``"24.11.5"`` from a JSON document, its ``meta``
    object, or text such as ``slurm 22.05.8``/``slurm-wlm 24.11.5-1``. Never
    raises: "" when unknown."""
    if isinstance(meta_or_text, (bytes, bytearray)):
        meta_or_text = bytes(meta_or_text).decode("utf-8", "replace")
    if isinstance(meta_or_text, str):
        for word in meta_or_text.replace("-", " ").split():
            parts = word.split(".")
            if len(parts) >= 2 and all(p.isdecimal() for p in parts[:3]):
                return ".".join(parts[:3])
        return ""
    if not isinstance(meta_or_text, dict):
        return ""
    meta = meta_or_text.get("meta", meta_or_text)
    if not isinstance(meta, dict):
        return ""
    slurm = meta.get("slurm", meta.get("Slurm"))
    if not isinstance(slurm, dict):
        return ""
    release = slurm.get("release")
    if isinstance(release, str) and release:
        return release
    ver = slurm.get("version")
    if isinstance(ver, dict):
        bits = [ver.get(k) for k in ("major", "minor", "micro")]
        if all(isinstance(b, (int, str)) and str(b).isdecimal() for b in bits):
            return f"{int(bits[0])}.{int(bits[1]):02d}.{int(bits[2])}"
    return ""
