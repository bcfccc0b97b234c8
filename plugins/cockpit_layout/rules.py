"""The layout rules: each turns facts into Findings with a concrete fix.

Pure. ``analyze(plan)`` is the whole check without I/O.
Rules (REFERENCE.md sections 6 and 7; ids appear in JSON as ``rule``):

CRIT world-size, tp-fits-node, tp-within-nvlink (TP groups across nodes),
     deepspeed-batch, megatron-batch, zero-with-pp, layers-divisible-by-pp,
     heads-divisible-by-tp, experts-divisible-by-ep
WARN tp-within-nvlink (over PCIe inside a node), ep-tp-within-nvlink, pp-neighbours-leaf,
     dp-leaf-spread, one-switch, gpu-memory
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cockpit.plugins.api import UsageError
from cockpit.plugins.api import Finding, Severity

from .alloc import Fabric, NodeAlloc, gpu_count
from .fixes import best_candidate, one_leaf_nodes, placement_candidates, split_candidates, switch_option
from .layout import Group, Layout, Sizes, build_layout
from .memory import GIB, MemoryEstimate, estimate
from .spec import LayoutSpec, expert_tp, normalise_order, with_defaults

CRIT, WARN = Severity.CRIT, Severity.WARN


@dataclass(frozen=True)
class Plan:
    nodes: tuple[NodeAlloc, ...]
    spec: LayoutSpec
    fabric: Fabric = field(default_factory=Fabric)
    distribution: str = "block"
    deepspeed: bool = False  # batch numbers follow DeepSpeed's rule, not Megatron's
    switches: int | None = None  # --switches the job asked for; None = not asked/unknown
    segment: int | None = None
    gpu_memory_gib: float = 80.0
    usable: frozenset[str] | None = None  # nodes a fix may move the job to


@dataclass
class Report:
    findings: list[Finding]
    sizes: Sizes | None
    layout: Layout | None
    preview: Layout | None = None
    preview_changes: tuple[str, ...] = ()
    memory: MemoryEstimate | None = None


def analyze(plan: Plan) -> Report:
    """Run every rule. Raises UsageError only for input that cannot be judged."""
    spec = with_defaults(plan.spec)
    order = normalise_order(spec.order)
    world = gpu_count(plan.nodes)
    if world == 0:
        raise UsageError("the allocation has no GPUs")
    domain = domain_size(plan)
    findings: list[Finding] = []
    sizes = resolve_sizes(spec, world, domain, plan, findings)
    if sizes is not None:
        findings += model_rules(spec, sizes, domain, plan)
        findings += batch_rules(spec, sizes, plan)
    report = Report(findings, sizes, None)
    if sizes is None:
        attach_split_preview(report, plan, spec, world, domain, order)
        return report
    layout = build_layout(plan.nodes, sizes, order, plan.distribution, plan.fabric)
    report.layout = layout
    findings += placement_rules(layout, plan, spec, report)
    report.memory = estimate(spec, sizes.tp, sizes.pp, sizes.dp, sizes.cp, sizes.ep, sizes.etp)
    findings += memory_rule(report.memory, spec, sizes, plan, domain)
    if report.preview is None and any(f.severity == CRIT for f in findings):
        attach_split_preview(report, plan, spec, world, domain, order)
    return report


def domain_size(plan: Plan) -> int:
    """GPUs in one NVLink domain (the smallest node's, or a whole block for NVL72)."""
    fab = plan.fabric
    first = plan.nodes[0]
    if fab.nvlink_spans_block and first.name in fab.leaf:
        return len(fab.leaf_nodes[fab.leaf[first.name]]) * len(first.gpus)
    per_node = min(len(n.gpus) for n in plan.nodes)
    sizes = {}
    for g in first.gpus:
        d = fab.domain(first.name, g)
        sizes[d] = sizes.get(d, 0) + 1
    return min(min(sizes.values()), per_node) if sizes else per_node


def _split_fix(plan: Plan, spec: LayoutSpec, world: int, domain: int, want: Sizes) -> str | None:
    cands = split_candidates(world, domain, spec, want.cp, want.ep, plan.gpu_memory_gib, want)
    if not cands:
        return None
    top = ", ".join(f"--tp {s.tp} --pp {s.pp} --dp {s.dp}" for s in cands[:3])
    return f"use a split that fits {world} GPUs: {top}"


def resolve_sizes(spec: LayoutSpec, world: int, domain: int, plan: Plan, out: list[Finding]) -> Sizes | None:
    tp, pp, cp, ep = spec.tp, spec.pp, spec.cp, spec.ep
    etp = expert_tp(spec, tp)
    model = tp * pp * cp
    want = Sizes(tp=tp, pp=pp, dp=spec.dp or 1, cp=cp, ep=ep, etp=etp)
    if spec.dp is not None and model * spec.dp != world:
        per_node = len(plan.nodes[0].gpus)
        need = model * spec.dp
        nodes_fix = f"--nodes {need // per_node}" if need % per_node == 0 else None
        fix = " or ".join(x for x in (nodes_fix, _split_fix(plan, spec, world, domain, want)) if x)
        out.append(Finding(CRIT, f"world size {world} != TP {tp} x PP {pp} x DP {spec.dp}"
                           + (f" x CP {cp}" if cp > 1 else "") + f" = {need}", "world-size",
                           evidence=(f"{len(plan.nodes)} nodes, {world} GPUs",), fix=fix or None))
        return None
    if world % model:
        out.append(Finding(CRIT, f"world size {world} is not divisible by TP x PP x CP = {model}",
                           "world-size", detail="Megatron: RuntimeError world_size is not divisible",
                           fix=_split_fix(plan, spec, world, domain, want)))
        return None
    dp = spec.dp or world // model
    if world % (etp * ep * pp):
        out.append(Finding(CRIT, f"world size {world} is not divisible by expert TP {etp} x EP {ep} x PP {pp}",
                           "world-size", fix=_split_fix(plan, spec, world, domain, want)))
        return None
    return Sizes(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, etp=etp)


def model_rules(spec: LayoutSpec, s: Sizes, domain: int, plan: Plan) -> list[Finding]:
    out = []
    world = s.world
    fix = lambda: _split_fix(plan, spec, world, domain, s)  # noqa: E731
    # A TP group split over two nodes runs its per-layer all-reduces over the network:
    # CRIT. Inside a node (or an NVL72 block) but across NVLink domains it runs over
    # PCIe: slower, not broken (placement_rules says WARN). Expert groups (expert TP x EP)
    # may span nodes: their all-to-all crossing the network is how large EP runs.
    unit = max(domain, min(len(n.gpus) for n in plan.nodes))
    where = "NVLink block" if plan.fabric.nvlink_spans_block else "node"
    for size, what in ((s.tp, f"TP {s.tp}"), (s.etp, f"expert TP {s.etp}")):
        if unit % size:
            out.append(Finding(CRIT, f"{unit} GPUs per {where} are not divisible by {what}", "tp-fits-node",
                               detail=f"a TP group must fit inside one {where}",
                               evidence=tuple(f"{n.name}: {len(n.gpus)} GPUs" for n in plan.nodes[:4]), fix=fix()))
            break
    if spec.layers and spec.layers % s.pp:
        ok = [p for p in range(1, spec.layers + 1) if spec.layers % p == 0 and world % (p * s.tp * s.cp) == 0]
        out.append(Finding(CRIT, f"{spec.layers} layers are not divisible by PP {s.pp}",
                           "layers-divisible-by-pp", fix=f"PP one of {ok[:8]}; " + (fix() or "")))
    for label, value in (("attention heads", spec.heads), ("query groups", spec.query_groups)):
        if value and value % s.tp:
            out.append(Finding(CRIT, f"{value} {label} are not divisible by TP {s.tp}",
                               "heads-divisible-by-tp", fix=fix()))
    if spec.experts and spec.experts % s.ep:
        out.append(Finding(CRIT, f"{spec.experts} experts are not divisible by EP {s.ep}",
                           "experts-divisible-by-ep",
                           fix=f"EP one of {[e for e in range(1, spec.experts + 1) if spec.experts % e == 0][:8]}"))
    return out


def batch_rules(spec: LayoutSpec, s: Sizes, plan: Plan) -> list[Finding]:
    out = []
    if spec.zero_stage is not None and spec.zero_stage >= 2 and s.pp > 1:
        out.append(Finding(CRIT, f"ZeRO stage {spec.zero_stage} with pipeline parallelism (PP {s.pp})",
                           "zero-with-pp", detail="DeepSpeed: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
                           fix='set "zero_optimization": {"stage": 1} (or 0), or drop pipeline parallelism (--pp 1)'))
    if plan.deepspeed or spec.grad_accum is not None:
        out += deepspeed_batch(spec, s.dp)
    elif spec.global_batch and spec.micro_batch and spec.global_batch % (spec.micro_batch * s.dp):
        unit = spec.micro_batch * s.dp
        lo, hi = max(unit, spec.global_batch // unit * unit), (spec.global_batch // unit + 1) * unit
        out.append(Finding(CRIT, f"global batch {spec.global_batch} is not divisible by micro batch "
                           f"{spec.micro_batch} x DP {s.dp} = {unit}", "megatron-batch",
                           fix=f"--global-batch-size {lo} or {hi}"))
    return out


def deepspeed_batch(spec: LayoutSpec, dp: int) -> list[Finding]:
    """train_batch_size == micro x grad_accum x DP; any one may be derived."""
    tb, mb, ga = spec.global_batch, spec.micro_batch, spec.grad_accum
    rule, title = "deepspeed-batch", None
    if tb and mb and ga:
        if tb != mb * ga * dp:
            title = f"train_batch_size {tb} != micro {mb} x grad_accum {ga} x DP {dp} = {mb * ga * dp}"
    elif tb and mb and tb % (mb * dp):
        title = f"train_batch_size {tb} is not divisible by micro {mb} x DP {dp}"
    elif tb and ga and tb % (ga * dp):
        title = f"train_batch_size {tb} is not divisible by grad_accum {ga} x DP {dp}"
    if title is None:
        return []
    fixes = []
    if tb and mb and tb % (mb * dp) == 0:
        fixes.append(f'"gradient_accumulation_steps": {tb // (mb * dp)}')
    if tb and ga and tb % (ga * dp) == 0:
        fixes.append(f'"train_micro_batch_size_per_gpu": {tb // (ga * dp)}')
    if mb:
        fixes.append(f'"train_batch_size": {mb * (ga or max(1, (tb or 0) // (mb * dp))) * dp}')
    return [Finding(CRIT, title, rule, detail="DeepSpeed: Check batch related parameters", fix=" or ".join(fixes))]


def _where(layout: Layout, g: Group) -> str:
    parts: dict[str, list[int]] = {}
    for r in g.ranks:
        n, gpu = layout.slots[r]
        parts.setdefault(n, []).append(gpu)
    return " + ".join(f"{n} GPU {','.join(map(str, gs))}" for n, gs in parts.items())


def placement_rules(layout: Layout, plan: Plan, spec: LayoutSpec, report: Report) -> list[Finding]:
    out: list[Finding] = []
    cands = placement_candidates(layout, plan.fabric, plan.usable, spec.order or "")
    best = best_candidate(cands)
    cur = layout.cost()
    improves = best.layout.cost() < cur and best.changes
    if improves:
        report.preview, report.preview_changes = best.layout, best.changes
    fix_text = "; ".join(best.changes) if improves else None
    kinds = (("tp-within-nvlink", "tp", "TP"), ("ep-tp-within-nvlink", "ep_tp", "EP x TP"))
    for rule, kind, name in kinds if layout.sizes.ep > 1 else kinds[:1]:
        bad = [g for g in layout.groups[kind] if g.level != "nvlink"]
        if bad:
            ok_fix = fix_text if improves and best.layout.cost()[0] == 0 else None
            out.append(_off_nvlink(bad, rule, name, layout,
                                   ok_fix or _split_fix(plan, spec, layout.sizes.world, domain_size(plan), layout.sizes)))
    pairs = layout.pp_neighbour_pairs()
    if pairs and best.layout.cost()[:2] < cur[:2] and best.changes:
        left = len(best.layout.pp_neighbour_pairs())
        out.append(Finding(WARN, f"{len(pairs)} pipeline hops cross between leaf switches", "pp-neighbours-leaf",
                           detail=f"a placement with {left} such hops exists",
                           evidence=tuple(f"rank {a} ({layout.slots[a][0]}, {plan.fabric.leaf.get(layout.slots[a][0])}) -> rank {b} ({layout.slots[b][0]}, {plan.fabric.leaf.get(layout.slots[b][0])})" for a, b in pairs[:4]),
                           fix=fix_text))
    out += dp_rule(layout, cands, cur)
    out += one_switch_rule(layout, plan)
    return out


def _off_nvlink(bad: list[Group], rule: str, name: str, layout: Layout, fix: str | None) -> Finding:
    """Groups off NVLink. A TP group across nodes is CRIT (its all-reduces go over the
    network); inside a node over PCIe it is WARN: it works, only slower. An expert group
    across nodes is WARN too: its all-to-all over the network is how EP beyond a node runs
    (docs/verdicts.md)."""
    across = [g for g in bad if g.level != "node"]
    shown = across or bad
    evidence = tuple(f"{name} group {g.index} ranks {g.ranks[0]}-{g.ranks[-1]}: {_where(layout, g)}" for g in shown[:4])
    if across:
        sev = CRIT if name == "TP" else WARN
        return Finding(sev, f"{len(across)} {name} groups span nodes (their collectives cross the network)", rule,
                       detail=f"{len(bad)} group(s) leave their NVLink domain", evidence=evidence, fix=fix)
    return Finding(WARN, f"{len(bad)} {name} groups run over PCIe inside their node (no NVLink between their GPUs)",
                   rule, detail="it works, only slower: their collectives go over PCIe", evidence=evidence, fix=fix)


def dp_rule(layout: Layout, cands: Sequence, cur: tuple[int, int, int]) -> list[Finding]:
    fair = [c for c in cands if c.layout.cost()[:2] <= cur[:2]]
    if not fair:
        return []
    need = min(fair, key=lambda c: (c.layout.cost()[2], len(c.changes)))
    if need.layout.cost()[2] >= cur[2] or not need.changes:
        return []
    spread = [g for g in layout.groups["dp"] if len(g.leaves) > 1]
    return [Finding(WARN, f"DP groups span {cur[2]} leaf switches in total where {need.layout.cost()[2]} would do",
                    "dp-leaf-spread",
                    evidence=tuple(f"DP group {g.index}: {', '.join(g.leaves)}" for g in spread[:4]),
                    fix="; ".join(need.changes))]


def one_switch_rule(layout: Layout, plan: Plan) -> list[Finding]:
    fab = plan.fabric
    if fab.kind not in ("tree", "block") or len(layout.nodes) < 2:
        return []
    asked = plan.switches == 1 if fab.kind == "tree" else plan.segment is not None
    if asked:
        return []
    placeholders = layout.nodes[0].placeholder
    leaves = {fab.leaf.get(n.name) for n in layout.nodes}
    if not placeholders and len(leaves) <= 1:
        return []
    found = one_leaf_nodes(layout.nodes, fab, plan.usable)
    if found is None:
        return []
    leaf, nodes = found
    option = switch_option(fab.kind, len(nodes))
    where = "may land on several leaf switches" if placeholders else f"spans {len(leaves)} leaf switches"
    hint = "" if placeholders else f" (e.g. --nodelist={','.join(n.name for n in nodes)})"
    return [Finding(WARN, f"{len(layout.nodes)} nodes fit under {leaf} but the job {where}", "one-switch",
                    detail="not asked with --switches=1 (tree) or --segment (block)",
                    fix=f"{option}[@max-wait]{hint}" if fab.kind == "tree" else f"{option}{hint}")]


def memory_rule(mem: MemoryEstimate | None, spec: LayoutSpec, s: Sizes, plan: Plan, domain: int) -> list[Finding]:
    if mem is None or mem.total <= plan.gpu_memory_gib * GIB:
        return []
    d = mem.to_dict()
    fixes = []
    if (spec.zero_stage or 0) < 3 and not (s.pp > 1 and (spec.zero_stage or 0) >= 1):
        fixes.append("a higher ZeRO stage (or --use-distributed-optimizer)")
    if not spec.recompute and mem.activations > 0:
        fixes.append("--recompute-activations")
    split = _split_fix(plan, spec, s.world, domain, s)
    if split:
        fixes.append(split)
    return [Finding(WARN, f"estimated {d['total_gib']} GiB per GPU exceeds {plan.gpu_memory_gib:g} GiB", "gpu-memory",
                    detail="rough: bf16 weights+grads, fp32 Adam states by ZeRO stage, activations (1F1B)",
                    evidence=tuple(f"{k}: {v}" for k, v in d.items() if k != "params_total"),
                    fix="; ".join(fixes) or None)]


def attach_split_preview(report: Report, plan: Plan, spec: LayoutSpec, world: int, domain: int, order) -> None:
    """Preview the first split that passes every rule, laid out block-wise."""
    want = Sizes(tp=spec.tp, pp=spec.pp, dp=spec.dp or 1, cp=spec.cp, ep=spec.ep, etp=expert_tp(spec, spec.tp))
    for s in split_candidates(world, domain, spec, spec.cp, spec.ep, plan.gpu_memory_gib, want)[:1]:
        try:
            report.preview = build_layout(plan.nodes, s, order, "block", plan.fabric)
        except UsageError:
            return
        report.preview_changes = (f"--tp {s.tp} --pp {s.pp} --dp {s.dp}",)
