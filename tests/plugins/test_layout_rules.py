"""Each layout rule, CRIT and WARN, with its fix; tree, block and superpod topologies."""

from __future__ import annotations

from pathlib import Path

from cockpit.backends.slurm_text import parse_topology_conf
from cockpit.models import Block, Switch, Topology
from cockpit.plugins.api import Severity
from cockpit_layout.alloc import NodeAlloc, fabric_from_topology, planned_count, planned_nodes, with_virtual_leaf
from cockpit_layout.rules import Plan, analyze
from cockpit_layout.spec import TP_PP_DP_ORDER, LayoutSpec

DATA = Path(__file__).parent.parent / "data" / "layout"
# The test cluster's shape: leaf1 = node[01-02], leaf2 = node[03-04] under a spine.
TREE = Topology("tree", switches=(
    Switch("leaf1", 0, ("node01", "node02")),
    Switch("leaf2", 0, ("node03", "node04")),
    Switch("spine", 1, (), ("leaf1", "leaf2")),
))
BLOCKS = Topology("block", blocks=(
    Block("b1", tuple(f"node{i:02d}" for i in range(1, 5)), 0),
    Block("b2", tuple(f"node{i:02d}" for i in range(5, 9)), 1),
))


def run(names, topo=TREE, gpn=8, distribution="block", deepspeed=False, **spec):
    nodes = planned_nodes(names, gpn)
    plan = Plan(tuple(nodes), LayoutSpec(**spec), fabric_from_topology(topo), distribution, deepspeed)
    return analyze(plan)


def by_rule(report):
    return {f.rule: f for f in report.findings}


ALL4 = ["node01", "node02", "node03", "node04"]


def test_good_layout_has_no_findings():
    # TP 8 inside each node, PP 2 inside leaf1 / leaf2 with tp-pp-dp order, DP pairs cross the spine
    # but no candidate keeps both PP and DP inside a leaf, so nothing to warn about.
    rep = run(ALL4, tp=8, pp=2, order=TP_PP_DP_ORDER)
    assert rep.findings == []
    assert {g.level for g in rep.layout.groups["tp"]} == {"nvlink"}
    assert {g.level for g in rep.layout.groups["pp"]} == {"leaf"}
    assert {g.level for g in rep.layout.groups["dp"]} == {"spine"}


def test_world_size_mismatch_is_crit_with_node_count_and_split_fix():
    rep = run(["node01", "node02"], tp=4, pp=2, dp=3)
    f = by_rule(rep)["world-size"]
    assert f.severity == Severity.CRIT and "16" in f.title and "24" in f.title
    assert "--nodes 3" in f.fix and "--tp 4 --pp 2 --dp 2" in f.fix
    assert rep.layout is None and rep.preview is not None and rep.preview.sizes.world == 16


def test_world_not_divisible_when_dp_is_derived():
    rep = run(["node01", "node02"], tp=3)
    f = by_rule(rep)["world-size"]
    assert "not divisible by TP x PP x CP = 3" in f.title
    assert f.fix.startswith("use a split that fits 16 GPUs: --tp 4")


def test_tp_larger_than_node_is_crit_and_group_crossing_is_shown():
    rep = run(["node01", "node02"], tp=16)
    rules = by_rule(rep)
    assert rules["tp-fits-node"].severity == Severity.CRIT
    assert "--tp 8" in rules["tp-fits-node"].fix
    tpx = rules["tp-within-nvlink"]
    assert tpx.severity == Severity.CRIT
    assert tpx.evidence[0].startswith("TP group 0 ranks 0-15: node01 GPU 0,1,2,3,4,5,6,7 + node02")


def test_moe_expert_groups_across_nodes_are_warn_not_crit():
    # Megatron-LM's default expert TP is TP: 4 x EP 4 = 16-GPU expert groups over two nodes.
    # Their all-to-all crosses the network, as every EP beyond a node does: WARN (docs/verdicts.md).
    rep = run(["node01", "node02"], tp=4, ep=4)
    assert "tp-fits-node" not in by_rule(rep)
    f = by_rule(rep)["ep-tp-within-nvlink"]
    assert f.severity == Severity.WARN and "span nodes" in f.title
    assert rep.sizes.etp == 4


def test_ms_swift_expert_tp_defaults_to_1():
    # ms-swift's MegatronArguments: expert_tensor_parallel_size = 1. TP2/EP8 on 8 GPUs is sound.
    nodes = planned_nodes(["node01"], 8)
    swift = analyze(Plan(tuple(nodes), LayoutSpec(tp=2, ep=8, launcher="ms-swift"), fabric_from_topology(TREE)))
    assert swift.findings == [] and swift.sizes.etp == 1
    megatron = analyze(Plan(tuple(nodes), LayoutSpec(tp=2, ep=8), fabric_from_topology(TREE)))
    f = by_rule(megatron)["world-size"]  # expert TP 2 x EP 8 = 16 does not divide 8 GPUs
    assert f.severity == Severity.CRIT and "expert TP 2 x EP 8" in f.title
    assert "--tp 1" in f.fix


def test_nvlink_domain_smaller_than_node():
    nodes = planned_nodes(["node01"], 8)
    fab = fabric_from_topology(TREE, domain_size=4)
    rep = analyze(Plan(tuple(nodes), LayoutSpec(tp=8), fab))
    assert "tp-fits-node" not in by_rule(rep)  # TP 8 fits the node: over PCIe between the domains
    f = by_rule(rep)["tp-within-nvlink"]
    assert f.severity == Severity.WARN and "PCIe" in f.title and f.evidence  # the one TP group spans both domains
    ok = analyze(Plan(tuple(nodes), LayoutSpec(tp=4), fab))
    assert ok.findings == [] and {g.level for g in ok.layout.groups["tp"]} == {"nvlink"}


def test_cyclic_distribution_splits_tp_and_the_fix_is_block():
    rep = run(ALL4, tp=8, pp=2, distribution="cyclic")
    f = by_rule(rep)["tp-within-nvlink"]
    assert f.severity == Severity.CRIT and "4 TP groups" in f.title
    assert "node01 GPU 0,1 + node02 GPU 0,1 + node03 GPU 0,1 + node04 GPU 0,1" in f.evidence[0]
    assert "srun --distribution=block" in f.fix
    assert rep.preview is not None and rep.preview.cost()[0] == 0


def test_pipeline_across_spine_warns_and_order_fix_keeps_it_in_a_leaf():
    rep = run(ALL4, tp=8, pp=2)  # default order: stage 0 on node01-02, stage 1 on node03-04
    f = by_rule(rep)["pp-neighbours-leaf"]
    assert f.severity == Severity.WARN and f.title.startswith("16 pipeline hops")
    assert f.evidence[0] == "rank 0 (node01, leaf1) -> rank 16 (node03, leaf2)"
    assert "--use-tp-pp-dp-mapping" in f.fix
    assert rep.preview.pp_neighbour_pairs() == []


def test_pipeline_split_over_two_leaves_is_moved_under_one():
    rep = run(["node02", "node03"], tp=8, pp=2)
    rules = by_rule(rep)
    assert "--switches=1" in rules["pp-neighbours-leaf"].fix
    assert "--nodelist=node[01-02]" in rules["pp-neighbours-leaf"].fix
    assert rules["one-switch"].severity == Severity.WARN
    assert {n.name for n in rep.preview.nodes} == {"node01", "node02"}


def test_dp_groups_spread_over_more_leaves_than_needed():
    rep = run(["node02", "node03"], tp=8)  # DP pairs node02/node03 cross the spine
    f = by_rule(rep)["dp-leaf-spread"]
    assert f.severity == Severity.WARN and "16" in f.title and "8 would do" in f.title
    assert "--switches=1" in f.fix


def test_one_switch_for_a_planned_count_and_not_when_asked():
    nodes = tuple(planned_count(2, 8))
    fab = fabric_from_topology(TREE)
    rep = analyze(Plan(nodes, LayoutSpec(tp=8), fab))
    assert by_rule(rep)["one-switch"].fix.startswith("sbatch --switches=1")
    asked = analyze(Plan(nodes, LayoutSpec(tp=8), with_virtual_leaf(fab, nodes), switches=1))
    assert "one-switch" not in by_rule(asked)
    assert {g.level for g in asked.layout.groups["dp"]} == {"leaf"}


def test_block_topology_segment():
    rep = run(["node03", "node04", "node05", "node06"], topo=BLOCKS, tp=8)
    f = by_rule(rep)["one-switch"]
    assert "--segment=4" in f.fix and "fit under b1" in f.title
    ok = analyze(Plan(tuple(planned_nodes(["node03", "node04", "node05", "node06"], 8)), LayoutSpec(tp=8),
                      fabric_from_topology(BLOCKS), segment=2))
    assert "one-switch" not in by_rule(ok)


def test_nvl72_block_is_one_nvlink_domain():
    nodes = tuple(planned_nodes(["node01", "node02"], 4))
    fab = fabric_from_topology(BLOCKS, nvlink_spans_block=True)
    rep = analyze(Plan(nodes, LayoutSpec(tp=8), fab))
    assert "tp-fits-node" not in by_rule(rep) and "tp-within-nvlink" not in by_rule(rep)
    assert rep.layout.groups["tp"][0].level == "nvlink"


def test_superpod_fixture_topology():
    topo = parse_topology_conf((DATA / "nvidia-circe-dgx-superpod_topology.conf").read_text())
    rep = run(["circe-n015", "circe-n016", "circe-n017", "circe-n018"], topo=topo, tp=8, pp=4)
    rules = by_rule(rep)
    # n015/n016 sit under s0, n017/n018 under s1: the middle pipeline hop crosses switches.
    assert rules["pp-neighbours-leaf"].evidence[0] == "rank 8 (circe-n016, s0) -> rank 16 (circe-n017, s1)"
    assert "--nodelist=circe-n[001-002,015-016] (all under s0)" in rules["pp-neighbours-leaf"].fix
    assert rules["one-switch"].severity == Severity.WARN
    assert {g.level for g in rep.layout.groups["tp"]} == {"nvlink"}


def test_layers_and_heads_must_divide():
    rep = run(ALL4, tp=8, pp=4, layers=30, heads=12, query_groups=8)
    rules = by_rule(rep)
    assert rules["layers-divisible-by-pp"].severity == Severity.CRIT
    assert "[1, 2, 3, 5, 6, 10, 15, 30]" not in rules["layers-divisible-by-pp"].fix  # only PPs that fit 32 GPUs
    assert "PP one of [1, 2]" in rules["layers-divisible-by-pp"].fix
    heads = [f for f in rep.findings if f.rule == "heads-divisible-by-tp"]
    assert [f.title for f in heads] == ["12 attention heads are not divisible by TP 8"]
    assert "--tp 4 --pp 2 --dp 4" in heads[0].fix


def test_experts_must_divide_by_ep():
    rep = run(["node01", "node02"], tp=2, ep=4, experts=6)
    assert by_rule(rep)["experts-divisible-by-ep"].fix == "EP one of [1, 2, 3, 6]"


def test_megatron_global_batch():
    rep = run(ALL4, tp=8, pp=1, micro_batch=1, global_batch=102)  # DP 4
    f = by_rule(rep)["megatron-batch"]
    assert f.severity == Severity.CRIT and "micro batch 1 x DP 4 = 4" in f.title
    assert f.fix == "--global-batch-size 100 or 104"
    ok = run(ALL4, tp=8, micro_batch=2, global_batch=64)
    assert "megatron-batch" not in by_rule(ok)


def test_memory_estimate_warns_and_offers_a_split_that_fits():
    # 70B-class: 80 layers x hidden 8192 (~64B params by 12*L*h^2), on 32 GPUs with TP 8 only.
    rep = run(ALL4, tp=8, layers=80, hidden=8192, heads=64, seq_length=4096, micro_batch=1)
    f = by_rule(rep)["gpu-memory"]
    assert f.severity == Severity.WARN
    assert rep.memory.total / 2**30 > 80
    assert "--tp 8 --pp 2" in f.fix or "--tp 8 --pp 4" in f.fix
    fits = run(ALL4, tp=8, pp=4, layers=80, hidden=8192, heads=64, seq_length=4096, micro_batch=1)
    assert "gpu-memory" not in by_rule(fits) and fits.memory.total / 2**30 < 80


def test_memory_falls_with_zero_stage():
    base = dict(tp=8, layers=80, hidden=8192, seq_length=4096, micro_batch=1)
    totals = [run(ALL4, zero_stage=z, **base).memory.total for z in (0, 1, 2, 3)]
    assert totals[0] > totals[1] > totals[2] > totals[3]


def test_uneven_job_allocation_uses_real_gpu_indexes():
    nodes = (NodeAlloc("node01", (4, 5, 6, 7)), NodeAlloc("node02", (0, 1, 2, 3)))
    rep = analyze(Plan(nodes, LayoutSpec(tp=8), fabric_from_topology(TREE)))
    assert rep.layout.slots[0] == ("node01", 4) and rep.layout.slots[4] == ("node02", 0)
    assert by_rule(rep)["tp-fits-node"].severity == Severity.CRIT
    assert by_rule(rep)["tp-within-nvlink"].evidence[0].endswith("node01 GPU 4,5,6,7 + node02 GPU 0,1,2,3")
