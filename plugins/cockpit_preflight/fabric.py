"""The ``fabric`` check: HCA link rate and width per node, RoCE and Ethernet speed,
against the guide's table for the partition's GPU count.

Each node is asked through ``ctx.probes`` (read-only commands, over SSH on a real
cluster): ``find -L ROOT ...`` lists the port and HCA files of
/sys/class/infiniband, ``grep -H .`` reads them; where the tree is missing,
``ibstat``. ``{node}`` in ``--ib-root``/``--net-root`` is the node's name (a
recorded tree per node). GPU counts and models come from ``ctx.cluster``;
``--gpus N`` sizes the fabric for a job of N GPUs instead. ``--log [NODE=]PATH``
judges recorded trees (directories), ibstat outputs or ``grep -H`` dumps.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cockpit.plugins.api import CheckContext, CheckResult, CockpitError, Node, UsageError, expand, sanitize

from cockpit_preflight.fabric_judge import Group, NodeFabric, judge
from cockpit_preflight.ibparse import (
    HCA_FILES, PORT_FILES, parse_ibstat, parse_net_dump, parse_sysfs_dump, read_sysfs_tree,
)
from cockpit_preflight.prometheus import with_prometheus
from cockpit_preflight.settings import fabric_table, merged
from cockpit_preflight.storage import read_log

_PLAIN_PATH = re.compile(r"^/[A-Za-z0-9_./{}-]*$")


def _root(what: str, template: str, node: str) -> str:
    if not _PLAIN_PATH.match(template) or ".." in template.split("/"):
        raise UsageError(f"bad {what} {template!r}: an absolute path of letters, digits and ._-/ ({{node}} allowed)")
    return template.replace("{node}", node)


def _ib_argv(root: str) -> list[str]:
    names = [f"{root}/*/ports/*/{f}" for f in PORT_FILES] + [f"{root}/*/{f}" for f in HCA_FILES]
    expr: list[str] = []
    for name in names:
        expr += (["-o"] if expr else []) + ["-path", name]
    return ["find", "-L", root, "-mindepth", "2", "-maxdepth", "4", "-type", "f", "(", *expr, ")"]


@dataclass(frozen=True)
class _Answer:
    ok: bool
    returncode: int
    out: str
    err: str

    def text(self) -> str:
        return self.out

    def err_text(self) -> str:
        return self.err


async def _run(ctx: CheckContext, node: str, argv: Sequence[str], timeout: float) -> _Answer:
    """The node's answer with escape and control characters dropped (it is data)."""
    r = await ctx.probes.run(node, list(argv), timeout=timeout)
    return _Answer(r.ok, r.returncode, sanitize(r.text()), sanitize(r.err_text()))


async def probe_node(ctx: CheckContext, node: str, cfg: dict) -> NodeFabric:
    """Never raises for the node itself: an unreachable node's result says why."""
    timeout = float(cfg["fabric_probe_timeout"])
    root = _root("--ib-root", cfg["fabric_ib_root"], node)
    nf = NodeFabric(node)
    try:
        found = await _run(ctx, node, _ib_argv(root), timeout)
        files = [ln for ln in found.text().splitlines() if ln.startswith(root + "/")]
        err = found.err_text().strip()
        if not found.ok and not files and "No such file or directory" not in err:
            raise CockpitError(f"find {root} failed (exit {found.returncode}): {(err.splitlines() or ['-'])[0]}")
        if files:
            dump = await _run(ctx, node, ["grep", "-H", "-s", ".", *files], timeout)
            nf.hcas, nf.source = parse_sysfs_dump(dump.text(), f"{node}:{root}"), "sysfs"
        else:
            ib = await _run(ctx, node, [cfg["fabric_ibstat"]], timeout)
            if ib.ok and "CA '" in ib.text():
                nf.hcas, nf.source = parse_ibstat(ib.text(), f"{node}: ibstat"), "ibstat"
            else:
                nf.source = "none"  # no tree and no ibstat: a node without HCAs
        await _ethernet(ctx, node, cfg, nf, timeout)
    except CockpitError as exc:
        nf.problem = str(exc)
    return nf


async def _ethernet(ctx: CheckContext, node: str, cfg: dict, nf: NodeFabric, timeout: float) -> None:
    root = _root("--net-root", cfg["fabric_net_root"], node)
    found = await _run(ctx, node, ["find", "-L", root, "-mindepth", "2", "-maxdepth", "2", "-name", "device"],
                       timeout)
    ifaces = sorted({ln.rsplit("/", 2)[-2] for ln in found.text().splitlines() if ln.startswith(root + "/")})
    if ifaces:
        dump = await _run(ctx, node, ["grep", "-H", "-s", ".", *[f"{root}/{i}/{f}" for i in ifaces
                                                               for f in ("speed", "operstate")]], timeout)
        nf.ethernet = parse_net_dump(dump.text())


def _log_node(spec: str) -> NodeFabric:
    name, sep, path = spec.partition("=")
    if not sep:
        name, path = Path(spec).stem, spec
    p = Path(path)
    nf = NodeFabric(name, source="log")
    if p.is_dir():
        nf.hcas = read_sysfs_tree(p)
        return nf
    text = read_log(path)
    nf.hcas = parse_ibstat(text, path) if "CA '" in text else parse_sysfs_dump(text, path)
    if not nf.hcas:
        raise UsageError(f"--log {path!r}: neither an ibstat output, a grep -H dump nor an infiniband tree")
    return nf


def groups_of(cluster_nodes: Sequence[Node], names: Sequence[str], partition: str | None,
              gpus: int | None) -> list[Group]:
    """One group per partition of the judged nodes (or just ``partition``)."""
    by_name = {n.name: n for n in cluster_nodes}
    parts = [partition] if partition else sorted({p for n in names if n in by_name for p in by_name[n].partitions})
    out = []
    for part in parts or ["all"]:
        members = tuple(n.name for n in cluster_nodes if part in n.partitions) if part != "all" else tuple(names)
        if not members:
            raise UsageError(f"partition {part!r} has no nodes")
        models: dict[str, list[str]] = {}
        for n in members:
            for g in by_name[n].gpus if n in by_name else ():
                models.setdefault(g.type or "gpu", []).append(n)
        count = gpus if gpus is not None else (sum(by_name[n].gpu_total for n in members if n in by_name)
                                               if by_name else None)
        out.append(Group(part, tuple(n for n in members if n in names) or members, count,
                         {m: tuple(sorted(set(v))) for m, v in models.items()}))
    return out


class FabricCheck:
    name = "fabric"
    description = "HCA link rate/width per node and GPU models per partition, against the guide's fabric table"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("fabric")
        g.add_argument("--partition", metavar="P", help="judge this partition (default: every partition of the nodes)")
        g.add_argument("--nodes", metavar="HOSTLIST", help="read only these nodes")
        g.add_argument("--gpus", type=int, metavar="N", help="size the fabric for a job of N GPUs")
        g.add_argument("--ib-root", metavar="DIR", help="where HCAs are read on each node ({node} = its name)")
        g.add_argument("--net-root", metavar="DIR", help="where Ethernet links are read ({node} = its name)")
        g.add_argument("--log", action="append", default=[], metavar="[NODE=]PATH",
                       help="judge a recorded infiniband tree, ibstat output or grep -H dump (repeatable)")
        g.add_argument("--prometheus", action="store_true", help="node_exporter textfile metrics (in data.prometheus)")

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        """Raises UsageError for bad flags or table rows, ParseError for an unreadable --log."""
        cfg = merged(ctx.config, {"fabric_ib_root": args.ib_root, "fabric_net_root": args.net_root})
        table = fabric_table(cfg["fabric_table"])
        if args.gpus is not None and args.gpus < 1:
            raise UsageError(f"bad --gpus {args.gpus}: must be >= 1")
        if args.log:
            nodes = {nf.node: nf for nf in map(_log_node, args.log)}
            group = await self._log_group(ctx, nodes, args)
            return with_prometheus(judge(nodes, [group], table, extra={"source": "log"}), args)
        try:
            cluster = await ctx.cluster.nodes()
        except CockpitError as exc:
            raise UsageError(f"cannot list the cluster's nodes: {exc}") from None
        names = self._names(cluster, args)
        ctx.progress(f"fabric: reading HCAs of {len(names)} nodes")
        results = await asyncio.gather(*(probe_node(ctx, n, cfg) for n in names))
        nodes = {nf.node: nf for nf in results}
        groups = groups_of(cluster, names, args.partition, args.gpus)
        return with_prometheus(judge(nodes, groups, table, extra={"source": "probes",
                                                                  "probes": ctx.probes.description}), args)

    async def _log_group(self, ctx: CheckContext, nodes: dict, args: argparse.Namespace) -> Group:
        """Recorded nodes are judged together; GPU count and models from the cluster where
        it knows every one of them (else --gpus, else unknown)."""
        try:
            known = {n.name: n for n in await ctx.cluster.nodes()}
        except CockpitError:
            known = {}
        models: dict[str, list[str]] = {}
        for name in nodes:
            for g in known[name].gpus if name in known else ():
                models.setdefault(g.type or "gpu", []).append(name)
        gpus = args.gpus
        if gpus is None and known and all(n in known for n in nodes):
            gpus = sum(known[n].gpu_total for n in nodes)
        return Group(args.partition or "log", tuple(sorted(nodes)), gpus,
                     {m: tuple(sorted(set(v))) for m, v in models.items()})

    def _names(self, cluster: Sequence[Node], args: argparse.Namespace) -> list[str]:
        known = {n.name for n in cluster}
        if args.nodes:
            names = list(expand(args.nodes))
            unknown = [n for n in names if n not in known]
            if unknown:
                raise UsageError(f"unknown node(s) {', '.join(unknown)} in --nodes {args.nodes!r}")
            return names
        names = [n.name for n in cluster if args.partition is None or args.partition in n.partitions]
        if not names:
            raise UsageError(f"no nodes in partition {args.partition!r}")
        return names
