"""Judge the fabric against the guide's table, per partition.

The table (``fabric_table``) gives, from a GPU count on, the minimum and the
recommended rate of each link (every active InfiniBand port of a node is a rail
that must meet it; a node without InfiniBand is judged on its RoCE ports, and the
finding says so). Also: link rates that differ within a partition, a node whose
links run below the others, GPU models that differ within a partition (a job runs
at the speed of its slowest GPU), and ports that are down. A node whose HCAs could
not be read is UNKNOWN, never OK.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cockpit.plugins.api import CheckResult, Finding, Severity, worst

from cockpit_preflight.ibparse import Hca, NetLink
from cockpit_preflight.settings import fabric_need


@dataclass
class NodeFabric:
    node: str
    hcas: dict[str, Hca] = field(default_factory=dict)
    ethernet: list[NetLink] = field(default_factory=list)
    source: str = ""  # sysfs, ibstat, log
    problem: str | None = None  # why the HCAs could not be read

    def _type(self, port) -> str:
        hca = self.hcas.get(port.hca)
        return (hca.hca_type if hca and hca.hca_type else re.sub(r"\d+$", "", port.hca))

    def rails(self, roce: bool) -> list:
        """The active ports of one kind on the HCA model(s) that carry its fastest port: the
        GPU fabric's rails (a node's slower frontend Ethernet NICs are another model)."""
        ports = [p for h in self.hcas.values() for p in h.ports.values() if p.active and p.roce == roce
                 and p.rate_gbps is not None]
        if not ports:
            return []
        top = max(p.rate_gbps for p in ports)
        models = {self._type(p) for p in ports if p.rate_gbps == top}
        return [p for p in ports if self._type(p) in models]

    @property
    def link(self) -> tuple[str | None, float | None, int]:
        """(kind, the slowest rail's rate, how many rails): InfiniBand first, else RoCE."""
        for kind, roce in (("infiniband", False), ("roce", True)):
            rails = self.rails(roce)
            if rails:
                return kind, min(p.rate_gbps for p in rails), len(rails)
        return None, None, 0

    def to_dict(self) -> dict:
        kind, rate, rails = self.link
        return {"source": self.source, "problem": self.problem, "link": kind, "rate_gbps": rate, "rails": rails,
                "ports": [p.to_dict() for h in self.hcas.values() for p in h.ports.values()],
                "hcas": {h.name: {"hca_type": h.hca_type, "fw_ver": h.fw_ver, "board_id": h.board_id}
                         for h in self.hcas.values()},
                "ethernet": [{"iface": e.iface, "speed_mbps": e.speed_mbps, "operstate": e.operstate}
                             for e in self.ethernet]}


@dataclass(frozen=True)
class Group:
    """The nodes judged together (a partition), its GPU count and GPU models."""

    name: str
    nodes: tuple[str, ...]
    gpus: int | None
    models: Mapping[str, tuple[str, ...]]  # model -> nodes


def _rates_finding(group: Group, nodes: Mapping[str, NodeFabric]) -> list[Finding]:
    rates: dict[float, list[str]] = {}
    for n in group.nodes:
        _, rate, _ = nodes[n].link if n in nodes else (None, None, 0)
        if rate is not None:
            rates.setdefault(rate, []).append(n)
    out = []
    if len(rates) > 1:
        parts = [f"{r:g} Gb/s ({', '.join(sorted(ns))})" for r, ns in sorted(rates.items(), reverse=True)]
        out.append(Finding(Severity.WARN, f"{group.name}: mixed link rates: {'; '.join(parts)}",
                           "fabric-mixed-rates", fix="a job spanning these nodes runs at the slowest link"))
        top = max(rates)
        for rate, names in sorted(rates.items()):
            if rate < top:
                out += [Finding(Severity.CRIT, f"{n}: links at {rate:g} Gb/s, below the others ({top:g} Gb/s)",
                                "fabric-slow-node", fix=f"check {n}'s HCAs, cables and switch ports "
                                                        "(ibstat, mlxlink); drain it until fixed") for n in names]
    return out


def _table_findings(group: Group, nodes: Mapping[str, NodeFabric], table) -> list[Finding]:
    if group.gpus is None:
        return [Finding(Severity.UNKNOWN, f"{group.name}: GPU count unknown, not sized against the table "
                                          "(give --gpus N)", "fabric-table")]
    need = fabric_need(table, group.gpus)
    if need is None:
        return [Finding(Severity.OK, f"{group.name}: {group.gpus} GPUs: the table asks for no inter-node fabric",
                        "fabric-table")]
    minimum, recommended = need
    out = []
    for n in group.nodes:
        node = nodes.get(n)
        if node is None or node.problem:
            continue
        kind, rate, rails = node.link
        roce = " (RoCE, not InfiniBand)" if kind == "roce" else ""
        if rate is None:
            out.append(Finding(Severity.CRIT, f"{n}: no active InfiniBand or RoCE port; {group.gpus} GPUs need "
                                              f">= {minimum:g} Gb/s", "fabric-table"))
        links = _links(node)
        if rate is None:
            pass
        elif rate < minimum:
            out.append(Finding(Severity.CRIT, f"{n}: slowest link {rate:g} Gb/s{roce}, below the {minimum:g} Gb/s "
                                              f"minimum for {group.gpus} GPUs", "fabric-table", evidence=links))
        elif rate < recommended:
            out.append(Finding(Severity.WARN, f"{n}: {rails} link(s) at >= {rate:g} Gb/s{roce}: meets the "
                                              f"{minimum:g} Gb/s minimum for {group.gpus} GPUs, below the "
                                              f"{recommended:g} Gb/s recommended", "fabric-table", evidence=links))
        elif roce:
            out.append(Finding(Severity.OK, f"{n}: {rails} link(s) at >= {rate:g} Gb/s{roce}", "fabric-table",
                               evidence=links))
    return out


def _links(node: NodeFabric) -> tuple[str, ...]:
    return tuple(f"{p.hca} port {p.port}: {p.rate_gbps:g} Gb/s" + (f" ({p.width} {p.speed})" if p.width else "")
                 + f" {p.link_layer or ''} {p.state or ''}".rstrip()
                 for h in node.hcas.values() for p in h.ports.values() if p.rate_gbps is not None)


def _node_findings(nodes: Mapping[str, NodeFabric]) -> list[Finding]:
    out = []
    for n, node in sorted(nodes.items()):
        if node.problem:
            out.append(Finding(Severity.UNKNOWN, f"{n}: HCAs could not be read: {node.problem}", "fabric-read"))
            continue
        kind, _, _ = node.link
        rails = node.rails(kind == "roce") if kind else []
        top = max((p.rate_gbps for p in rails), default=None)
        for p in rails:
            if p.rate_gbps < top:
                out.append(Finding(Severity.CRIT, f"{n}: {p.hca} port {p.port} runs at {p.rate_gbps:g} Gb/s, the "
                                                  f"node's other rails at {top:g} Gb/s", "fabric-degraded-rail",
                                   fix="reseat or replace the cable/transceiver; check the switch port (mlxlink)"))
        live = {p.hca for h in node.hcas.values() for p in h.ports.values() if p.active}
        for h in node.hcas.values():
            for p in h.ports.values():
                if not p.active and p.link_layer and not p.roce and live:
                    out.append(Finding(Severity.WARN, f"{n}: {p.hca} port {p.port} is {p.state or 'not active'} "
                                                      f"({p.phys_state or '?'})", "fabric-port-down",
                                       fix="check the cable and the switch port, or disable the port if unused"))
    return out


def judge(nodes: Mapping[str, NodeFabric], groups: Sequence[Group], table, *,
          extra: Mapping[str, Any] | None = None) -> CheckResult:
    findings = _node_findings(nodes)
    for g in groups:
        findings += _table_findings(g, nodes, table) + _rates_finding(g, nodes)
        if len(g.models) > 1:
            parts = "; ".join(f"{m} ({len(ns)} nodes)" for m, ns in sorted(g.models.items()))
            findings.append(Finding(Severity.WARN, f"{g.name}: mixed GPU models: {parts}", "fabric-mixed-gpus",
                                    fix="a job spanning them runs at the speed of the slowest GPU: split the "
                                        "partition by model"))
    seen: set[tuple[str, str]] = set()
    findings = [f for f in findings if (f.rule, f.title) not in seen and not seen.add((f.rule, f.title))]
    read = [n for n in nodes.values() if not n.problem]
    sev = worst(findings) if read else Severity.UNKNOWN
    crit = sorted({f.title.split(":")[0] for f in findings if f.rule == "fabric-slow-node"})
    summary = "; ".join(_group_summary(g, nodes, table) for g in groups) or "fabric: no nodes"
    if crit:
        summary += f"; below the others: {', '.join(crit)}"
    data: dict[str, Any] = {
        "time": int(time.time()), **dict(extra or {}),
        "nodes": {n: node.to_dict() for n, node in sorted(nodes.items())},
        "groups": {g.name: {"nodes": list(g.nodes), "gpus": g.gpus, "gpu_models": {m: list(v) for m, v in g.models.items()},
                            "need_gbps": list(fabric_need(table, g.gpus)) if g.gpus and fabric_need(table, g.gpus)
                            else None} for g in groups},
    }
    return CheckResult("fabric", sev, summary, tuple(findings), data)


def _group_summary(g: Group, nodes: Mapping[str, NodeFabric], table) -> str:
    rates = sorted({r for n in g.nodes if n in nodes and (r := nodes[n].link[1]) is not None}, reverse=True)
    need = fabric_need(table, g.gpus) if g.gpus else None
    want = f", needs >= {need[0]:g} Gb/s ({need[1]:g} recommended)" if need else ""
    have = "/".join(f"{r:g}" for r in rates) + " Gb/s" if rates else "no fabric read"
    return f"{g.name}: {g.gpus if g.gpus is not None else '?'} GPUs on {len(g.nodes)} nodes{want}; links {have}"
