"""``cockpit check layout``: the headless check and the TUI's entry point.

Gathers the inputs (job or plan from the backend, config files, flags), runs
the pure rules in :mod:`cockpit_layout.rules` and packs a CheckResult whose
``data`` the layout screen draws.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cockpit.plugins.api import BackendError, ParseError, UsageError
from cockpit.plugins.api import expand
from cockpit.plugins.api import Topology
from cockpit.plugins.api import CheckContext, CheckResult, Finding, Severity, worst

from .alloc import NodeAlloc, fabric_from_topology, from_job, planned_count, planned_nodes, read_topo_m, with_virtual_leaf
from .coverage import DomainSource, coverage_findings, ignored_findings
from .jobspec import fill_from_job, form_prefill, job_launch_spec
from .layout import layout_to_dict
from .rules import Plan, Report, analyze
from .spec import LayoutSpec, merge, parse_deepspeed_config, parse_megatron_args, parse_megatron_script, parse_params


def _pos(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be > 0")
    return value


class LayoutCheck:
    name = "layout"
    description = "Validate a TP/PP/DP/CP/EP job layout against GPUs, NVLink and the switch topology"
    # Headless, Slurm is asked only for what the inputs lack (slurm_needed), and a
    # Slurm that does not answer is said so in one line (cockpit/commands/_deferred.py).
    cluster_on_demand = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        src = parser.add_argument_group("allocation")
        src.add_argument("--job", help="a running or pending job id")
        src.add_argument("--nodes", help="planned nodes: a hostlist (node[01-08]) or a count "
                         "(default: the launch script's --nnodes / NNODES=)")
        src.add_argument("--gpus-per-node", type=_pos,
                         help="GPUs per node (default: the launch script's --nproc-per-node, else Slurm's)")
        src.add_argument("--partition", help="partition for a planned count and for fixes")
        par = parser.add_argument_group("parallel config")
        for axis in ("tp", "pp", "dp", "cp", "ep", "etp"):
            par.add_argument(f"--{axis}", type=_pos, help=f"{axis.upper()} size")
        par.add_argument("--deepspeed", metavar="CFG.JSON", help="DeepSpeed JSON config")
        par.add_argument("--megatron-args", metavar="ARGS", help="Megatron-LM argument line (quoted)")
        par.add_argument("--megatron-script", metavar="FILE",
                         help="a Megatron launch script (shell variables, arrays and comments are read)")
        par.add_argument("--order", help="rank order, fastest first (default tp-cp-ep-dp-pp)")
        par.add_argument("--distribution", default="block", help="srun task distribution: block|cyclic")
        par.add_argument("--switches", type=_pos, help="the --switches the job asks for")
        par.add_argument("--segment", type=_pos, help="the --segment the job asks for (block topology)")
        mod = parser.add_argument_group("model facts")
        mod.add_argument("--params", help="parameter count, e.g. 70B")
        for flag in ("layers", "heads", "hidden", "seq-length", "micro-batch", "global-batch"):
            mod.add_argument(f"--{flag}", type=_pos)
        mod.add_argument("--zero-stage", type=int, choices=(0, 1, 2, 3))
        hw = parser.add_argument_group("hardware")
        hw.add_argument("--topo-m", metavar="FILE", help="recorded `nvidia-smi topo -m` of one node")
        hw.add_argument("--nvlink-domain-size", type=_pos, help="GPUs per NVLink domain")
        hw.add_argument("--gpu-memory-gib", type=float, help="memory per GPU (default 80)")

    async def prefill(self, ctx: CheckContext, job) -> dict[str, Any]:
        """The TUI form's starting sizes for ``job``, from its own launch line (jobspec.py)."""
        return await form_prefill(ctx, job)

    async def run(self, ctx: CheckContext, args: argparse.Namespace) -> CheckResult:
        """Run the check. Raises UsageError/ParseError for bad input, BackendError
        when the job or nodes cannot be fetched."""
        spec, deepspeed = read_spec(args)
        args, spec = with_launch_counts(args, spec)
        asks = slurm_needed(args)
        nodes, partition, pending, job = await read_allocation(ctx, args)
        if job is not None:  # what the job's own launch line says fills what the flags leave out
            spec = fill_from_job(spec, *await job_launch_spec(ctx, job))
        topo, topo_note = await _topology(ctx) if asks else (Topology(), NOT_ASKED)
        plan, source = build_plan(ctx.config, args, spec, deepspeed, nodes, topo)
        if asks:
            plan = await _with_usable(ctx, plan, partition)
        report = analyze(plan)
        return to_result(report, plan, pending, source, topo_note)


def read_spec(args: argparse.Namespace) -> tuple[LayoutSpec, bool]:
    """Merge flags, Megatron args and the DeepSpeed file. Raises UsageError on conflicts."""
    flags = LayoutSpec(
        tp=args.tp, pp=args.pp, dp=args.dp, cp=args.cp, ep=args.ep, etp=args.etp, order=args.order,
        layers=args.layers, heads=args.heads, hidden=args.hidden, seq_length=args.seq_length,
        micro_batch=args.micro_batch, global_batch=args.global_batch, zero_stage=args.zero_stage,
        params=parse_params(args.params) if args.params else None,
    )
    parts = [("flags", flags)]
    if args.megatron_args:
        parts.append(("--megatron-args", parse_megatron_args(args.megatron_args)))
    if getattr(args, "megatron_script", None):
        try:
            text = Path(args.megatron_script).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"cannot read --megatron-script {args.megatron_script}: {exc.strerror}") from None
        parts.append((args.megatron_script, parse_megatron_script(text, args.megatron_script)))
    if args.deepspeed:
        parts.append((args.deepspeed, parse_deepspeed_config(_read_json(args.deepspeed), args.deepspeed)))
    return merge(*parts), bool(args.deepspeed)


def _read_json(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ParseError(path, str(exc)) from None


NOT_ASKED = ("switch topology and free nodes not asked: every input was given "
             "(--job, a hostlist, --partition, --switches or --segment asks Slurm)")


def with_launch_counts(args: argparse.Namespace, spec: LayoutSpec) -> tuple[argparse.Namespace, LayoutSpec]:
    """Fill --nodes and --gpus-per-node from the launch script (torchrun --nnodes,
    --nproc-per-node, NNODES=, srun/#SBATCH) where the command line leaves them out;
    where both say, the command line wins and the script's number is listed as not used."""
    from dataclasses import replace

    filled, notes = {}, []
    for flag, attr, value in (("--nodes", "nodes", spec.nnodes), ("--gpus-per-node", "gpus_per_node", spec.nproc_per_node)):
        given = getattr(args, attr, None)
        if value and not given and not getattr(args, "job", None):
            filled[attr] = str(value) if attr == "nodes" else value
        elif value and given and str(given) != str(value):
            notes.append(f"launch script: {value} for {flag} ({flag} {given} of the command line was used)")
    args = argparse.Namespace(**{**vars(args), **filled})
    return args, replace(spec, ignored=spec.ignored + tuple(notes)) if notes else spec


def slurm_needed(args: argparse.Namespace) -> str | None:
    """Why the check must ask Slurm, or None when the inputs say everything: a node
    count with --gpus-per-node (from flags or the launch script) and nothing that
    names the cluster's own nodes, partitions or switches."""
    if args.job:
        return f"job {args.job}"
    if args.nodes and not args.nodes.isdecimal():
        return "the nodes' switches"
    if not args.gpus_per_node:
        return "GPUs per node"
    if args.partition or args.switches or args.segment:
        return "the partition's nodes and switches"
    return None


async def read_allocation(ctx: CheckContext, args: argparse.Namespace) -> tuple[list[NodeAlloc], str | None, bool, Any]:
    """(nodes, partition, pending, the job or None) from --job or --nodes. Raises UsageError."""
    if bool(args.job) == bool(args.nodes):
        raise UsageError("give exactly one of --job ID or --nodes HOSTLIST|COUNT")
    if args.job:
        job = await ctx.cluster.job(args.job)
        if job is None:
            raise UsageError(f"job {args.job} not found in the queue")
        if args.gpus_per_node and not job.gpus:
            job = _with_gpn(job, args.gpus_per_node)
        return from_job(job), args.partition or job.partition, not job.gpus, job
    if args.nodes.isdecimal():
        gpn = args.gpus_per_node or await _partition_gpus(ctx, args.partition)
        return planned_count(int(args.nodes), gpn), args.partition, True, None
    names = expand(args.nodes)
    if args.gpus_per_node:
        return planned_nodes(names, args.gpus_per_node), args.partition, False, None
    known = {n.name: n.gpu_total for n in await ctx.cluster.nodes()}
    missing = [n for n in names if n not in known]
    if missing:
        raise UsageError(f"node {missing[0]} is not known to Slurm (give --gpus-per-node to plan anyway)")
    return planned_nodes(names, known), args.partition, False, None


def _with_gpn(job, gpn: int):
    from cockpit.plugins.api import record_replace

    return record_replace(job, gpus_per_node=gpn)


async def _partition_gpus(ctx: CheckContext, partition: str | None) -> int:
    for n in await ctx.cluster.nodes():
        if n.gpu_total and (partition is None or partition in n.partitions):
            return n.gpu_total
    raise UsageError(f"no GPU nodes in partition {partition or '(any)'}: give --gpus-per-node")


async def _topology(ctx: CheckContext) -> tuple[Topology, str | None]:
    try:
        return await ctx.cluster.topology(), None
    except BackendError as exc:  # the rules that need switches then stay silent, and say so
        return Topology(), f"switch topology not read ({exc}): the switch rules were not run"


def build_plan(config: Mapping[str, Any], args, spec: LayoutSpec, deepspeed: bool, nodes,
               topo: Topology) -> tuple[Plan, DomainSource]:
    """Combine inputs and this plugin's config into a Plan, and say where its NVLink
    domains came from. Raises UsageError/ParseError."""
    matrix = None
    if args.topo_m:
        try:
            matrix = read_topo_m(Path(args.topo_m).read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            raise UsageError(f"cannot read --topo-m {args.topo_m}: {exc.strerror}") from None
    size = args.nvlink_domain_size or config.get("nvlink_domain_size") or None
    spans = bool(config.get("nvlink_spans_block", False))
    fabric = fabric_from_topology(topo, matrix.domains if matrix else None, size, spans)
    if fabric.nvlink_spans_block:
        source = DomainSource("block")
    elif matrix is not None:
        source = DomainSource("topo -m", matrix)
    elif size:
        source = DomainSource("config", size=int(size))
    else:
        source = DomainSource("assumed")
    if nodes and nodes[0].placeholder and args.switches == 1:
        fabric = with_virtual_leaf(fabric, nodes)
    mem = args.gpu_memory_gib or float(config.get("gpu_memory_gib", 80.0))
    return Plan(tuple(nodes), spec, fabric, args.distribution, deepspeed, args.switches, args.segment, mem), source


async def _with_usable(ctx: CheckContext, plan: Plan, partition: str | None) -> Plan:
    """Nodes a fix may move the job to: up, not drained, in the partition."""
    from dataclasses import replace

    try:
        nodes = await ctx.cluster.nodes()
    except BackendError:
        return plan
    usable = frozenset(
        n.name for n in nodes if not n.is_unavailable and (partition is None or partition in n.partitions)
    )
    return replace(plan, usable=usable)


def to_result(report: Report, plan: Plan, pending: bool, source: DomainSource | None = None,
              topo_note: str | None = None) -> CheckResult:
    """The CheckResult: the rules' findings, then where the NVLink domains came from
    (with a WARN when a topo -m covers less than the plan), whether the switch topology
    was read, and the inputs not used."""
    per_node = max((len(n.gpus) for n in plan.nodes), default=0)
    stated = coverage_findings(source, per_node) if source is not None else []
    switches = [Finding(Severity.OK, topo_note, "switch-topology")] if topo_note else []
    findings = list(report.findings) + stated + switches + ignored_findings(plan.spec.ignored)
    sev = worst(findings)
    s = report.sizes
    head = f"{s.label()} on {s.world} GPUs" if s else f"{sum(len(n.gpus) for n in plan.nodes)} GPUs"
    crit = sum(1 for f in findings if f.severity == Severity.CRIT)
    warn = sum(1 for f in findings if f.severity == Severity.WARN)
    summary = f"{head}: " + (f"{crit} CRIT, {warn} WARN" if crit or warn else "layout OK")
    if stated:
        summary += f"; {stated[0].title}"
    data: dict[str, Any] = {
        "layout": layout_to_dict(report.layout) if report.layout else None,
        "preview": None,
        "memory": report.memory.to_dict() if report.memory else None,
        "topology": {
            "kind": plan.fabric.kind,
            "leaves": {leaf: plan.fabric.top(leaf) for leaf in dict.fromkeys(plan.fabric.leaf.get(n.name) for n in plan.nodes) if leaf},
        },
        "nodes": [{"name": n.name, "gpus": list(n.gpus), "leaf": plan.fabric.leaf.get(n.name)} for n in plan.nodes],
        "planned": pending,
        "nvlink_domains": source.to_dict(per_node) if source is not None else None,
        "ignored": list(plan.spec.ignored),
    }
    if report.preview is not None:
        data["preview"] = {**layout_to_dict(report.preview), "changes": list(report.preview_changes)}
    return CheckResult("layout", sev, summary, tuple(findings), data)
