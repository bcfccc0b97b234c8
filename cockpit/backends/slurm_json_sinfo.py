"""The >= 23.02 grouped ``sinfo --json`` shape (data_parser SINFO_DATA).

Each element describes a partition and a group of alike nodes:
``node.state``, ``nodes.{nodes,hostnames,addresses,total,...}``,
``cpus.{allocated,idle,other,total,minimum,maximum}``,
``memory.{minimum,maximum,allocated,free}``, ``gres.{total,used}``,
``features.{total,active}``, ``reason.{description,time,user}``, ``partition{...}``
(field list from SchedMD/slurm src/plugins/data_parser/v0.0.42/parsers.c,
PARSER_ARRAY(SINFO_DATA)). 26.05 (data_parser v0.0.45) moved ``reason.user`` to
``reason_set_by_user`` beside ``reason`` (tests/data/slurm-26.05/sinfo.json). The same node appears once per partition; the groups
are merged into unique nodes carrying all their partitions.
"""

from __future__ import annotations

from typing import Any

from cockpit.backends.slurm_json_common import (
    Unknowns,
    RECORD_ERRORS,
    expand_nodes,
    get_record,
    num,
    num0,
    str_list,
    text,
    time_or_none,
    warn,
    why_unread,
)
from cockpit.backends.slurm_json_nodes import NodeGres, node_gres, node_state, partition_from_record
from cockpit.errors import ParseError
from cockpit.hostlist import collapse
from cockpit.models.cluster import GpuGroup, Node, Partition, SharedGres
from cockpit.models.unread import unread


def _sub(rec: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    v = rec.get(key)
    if v is None:
        return {}
    if type(v) is not dict:
        raise ParseError(source, f"field {key!r} is not an object: {v!r:.80}")
    return v


def parse_sinfo_groups(
    groups: list[Any], source: str, warnings: list[str] | None
) -> tuple[tuple[Node, ...], tuple[Partition, ...]]:
    """Merge sinfo groups into unique nodes and the partitions they name."""
    nodes: dict[str, Node] = {}
    parts: dict[str, Partition] = {}
    members: dict[str, list[str]] = {}
    for i, raw in enumerate(groups):
        read = _read_group(raw, i, source, warnings)
        if read is None:
            continue
        part, group_nodes = read
        for node in group_nodes:
            old = nodes.get(node.name)
            if old is None:
                nodes[node.name] = node
            elif node.partitions and node.partitions[0] not in old.partitions:
                nodes[node.name] = _with_partition(old, node.partitions[0])
            if part:
                members.setdefault(part.name, []).append(node.name)
        if part and part.name not in parts:
            parts[part.name] = part
    out_parts = tuple(
        p if p.nodes else Partition(p.name, tuple(dict.fromkeys(members.get(p.name, ()))),
                                    p.state, p.is_default, p.max_time, p.total_cpus)
        for p in parts.values()
    )
    return tuple(nodes.values()), out_parts


def _read_group(raw: Any, i: int, source: str, warnings: list[str] | None
                ) -> tuple[Partition | None, list[Node]] | None:
    """A group's partition and nodes; None (and a warning naming its nodes) when
    it cannot be read: one bad group costs its nodes, never the others."""
    try:
        grp = get_record(raw, "sinfo entry", i, source)
        part = _group_partition(grp, source)
        return part, _group_nodes(grp, part.name if part else None, source, warnings)
    except RECORD_ERRORS as exc:
        if warnings is None:
            raise
        nodes = raw.get("nodes") if type(raw) is dict else None
        names = nodes.get("nodes") if type(nodes) is dict else None
        shown = ",".join(names) if type(names) is list and all(type(n) is str for n in names) else ""
        name = shown[:80] or f"#{i + 1}"
        warn(warnings, unread(source, "node", name, why_unread(exc, "node", name)))
        return None


def _with_partition(node: Node, partition: str) -> Node:
    # Node is frozen; rebuild it with one more partition.
    from cockpit.models.cluster import record_replace

    return record_replace(node, partitions=node.partitions + (partition,))


def _group_partition(grp: dict[str, Any], source: str) -> Partition | None:
    p = grp.get("partition")
    if p is None:
        return None
    if type(p) is str:
        name = p.rstrip("*")
        return Partition(name=name, is_default=p.endswith("*")) if name else None
    if type(p) is not dict:
        raise ParseError(source, f"field 'partition' is not an object: {p!r:.80}")
    if not p.get("name"):
        return None
    return partition_from_record(p, source)


def _per_node(read: NodeGres, source: str, warnings: list[str] | None) -> NodeGres:
    # A group's use is the group's: GPU indexes are left empty (a warning says so), and
    # the shards/MPS in use are not known per node (None), never the group's sum.
    if any(g.alloc_indexes for g in read.gpus + read.mig):
        warn(warnings, f"{source}: GPU indexes in use are per group, not per node; "
                       "use scontrol show node --json for exact GPU use")
        read = NodeGres(tuple(GpuGroup(g.type, g.count) for g in read.gpus),
                        tuple(GpuGroup(g.type, g.count) for g in read.mig), read.sharing)
    return NodeGres(read.gpus, read.mig, tuple(SharedGres(s.name, s.type, s.total) for s in read.sharing))


def _group_nodes(grp: dict[str, Any], partition: str | None, source: str,
                 warnings: list[str] | None) -> list[Node]:
    nodes_info = _sub(grp, "nodes", source)
    names = expand_nodes(nodes_info.get("nodes"), "nodes.nodes", source)
    if not names:
        return []
    try:
        addrs = expand_nodes(nodes_info.get("addresses"), "nodes.addresses", source)
    except ParseError:
        addrs = ()  # addresses are a nicety; never lose the nodes over them
    n = len(names)
    # state, GPUs, reason that cannot be read are shown unknown; the nodes stay
    unknown = Unknowns(source, "node", collapse(names)[:80], warnings)
    state, flags = unknown.read("state", lambda: node_state(_sub(grp, "node", source).get("state"), None, source,
                                                            warnings), ("unknown", frozenset()))
    cpus = _sub(grp, "cpus", source)
    mem = _sub(grp, "memory", source)
    gres = _sub(grp, "gres", source)
    reason = _sub(grp, "reason", source)
    feats = _sub(grp, "features", source)
    per_cpu = num(cpus.get("maximum"), "cpus.maximum", source)
    if per_cpu is None:
        per_cpu = num0(cpus.get("total"), "cpus.total", source) // n
    read = unknown.read("gpus", lambda: node_gres(text(gres.get("total"), "gres.total", source),
                                                  text(gres.get("used"), "gres.used", source), source), NodeGres())
    if n > 1:
        read = _per_node(read, source, warnings)
    why = unknown.read("reason", lambda: text(reason.get("description"), "reason.description", source) or None, None)
    user = (text(reason.get("user"), "reason.user", source)
            or text(grp.get("reason_set_by_user"), "reason_set_by_user", source))
    when = time_or_none(reason.get("time"), "reason.time", source)
    common = dict(
        state=state,
        flags=flags,
        reason=why,
        # uid 0 ("root") is printed for nodes without a reason: only keep it with one
        reason_user=(user or None) if why else None,
        reason_time=when if why else None,
        cpus=per_cpu,
        # Totals of the group split evenly: exact for one-node groups only.
        alloc_cpus=num0(cpus.get("allocated"), "cpus.allocated", source) // n,
        memory_mb=num0(mem.get("maximum"), "memory.maximum", source),
        alloc_memory_mb=num0(mem.get("allocated"), "memory.allocated", source) // n,
        partitions=(partition,) if partition else (),
        **read.fields(),
        features=str_list(feats.get("total"), "features.total", source),
        unknown=unknown.frozen(),
    )
    out = []
    for i, name in enumerate(names):
        address = addrs[i] if len(addrs) == n else None
        out.append(Node(name=name, address=address, **common))
    return out
