"""Rank arithmetic: Megatron's two orders, CP/EP folding, Slurm block/cyclic placement.

Every expected map below is worked out by hand from
rank = tp_r + (next axis)_r * tp + ... (first axis of the order fastest).
"""

from __future__ import annotations

import pytest

from cockpit.errors import UsageError
from cockpit_layout.alloc import Fabric, NodeAlloc, planned_nodes
from cockpit_layout.layout import Sizes, build_layout
from cockpit_layout.ranks import coords_of, groups, place_tasks, rank_of
from cockpit_layout.spec import DEFAULT_ORDER, TP_PP_DP_ORDER, normalise_order

DEFAULT = normalise_order(DEFAULT_ORDER)
TPPPDP = normalise_order(TP_PP_DP_ORDER)


def test_default_order_tp2_pp4_matches_megatron_docstring():
    # 16 GPUs, TP 2, PP 4 -> DP 2 (the example in Megatron-Core's initialize_model_parallel).
    sizes = {"tp": 2, "cp": 1, "ep": 1, "dp": 2, "pp": 4}
    assert groups(sizes, DEFAULT, "tp") == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    assert groups(sizes, DEFAULT, "dp") == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert groups(sizes, DEFAULT, "pp") == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]


def test_tp_pp_dp_mapping_tp2_pp4_dp2():
    # rank = tp + pp*2 + dp*8
    sizes = {"tp": 2, "cp": 1, "ep": 1, "dp": 2, "pp": 4}
    assert groups(sizes, TPPPDP, "tp")[:2] == [[0, 1], [2, 3]]
    assert groups(sizes, TPPPDP, "pp") == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    assert groups(sizes, TPPPDP, "dp") == [[0, 8], [1, 9], [2, 10], [3, 11], [4, 12], [5, 13], [6, 14], [7, 15]]
    assert coords_of(13, sizes, TPPPDP) == {"tp": 1, "cp": 0, "ep": 0, "pp": 2, "dp": 1}


def test_coords_and_rank_are_inverse_for_both_orders():
    sizes = {"tp": 4, "cp": 2, "ep": 1, "dp": 3, "pp": 2}
    for order in (DEFAULT, TPPPDP):
        for r in range(48):
            assert rank_of(coords_of(r, sizes, order), sizes, order) == r
    # default: rank = tp + cp*4 + dp*8 + pp*24
    assert coords_of(4 * 1 + 3 + 8 * 2 + 24, sizes, DEFAULT) == {"tp": 3, "cp": 1, "ep": 0, "dp": 2, "pp": 1}


def test_context_parallel_groups_default_order():
    # TP 2, CP 2, DP 2: rank = tp + cp*2 + dp*4
    sizes = {"tp": 2, "cp": 2, "ep": 1, "dp": 2, "pp": 1}
    assert groups(sizes, DEFAULT, "cp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert groups(sizes, DEFAULT, "dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_expert_groups_use_the_expert_generator():
    # 16 GPUs, TP 2, EP 4: expert generator tp=2, ep=4, dp=16/(2*4)=2: rank = tp + ep*2 + edp*8
    nodes = planned_nodes(["a", "b"], 8)
    lay = build_layout(nodes, Sizes(tp=2, dp=8, ep=4, etp=2), DEFAULT, "block", Fabric())
    assert [list(g.ranks) for g in lay.groups["ep"]] == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    assert [list(g.ranks) for g in lay.groups["ep_tp"]] == [list(range(8)), list(range(8, 16))]
    assert lay.coords[6]["ep"] == 3 and lay.coords[9]["ep"] == 0
    # the dense DP group still spans all 8 TP replicas: rank = tp + dp*2
    assert list(lay.groups["dp"][0].ranks) == [0, 2, 4, 6, 8, 10, 12, 14]


def test_unknown_axis_in_order_is_refused():
    with pytest.raises(UsageError, match="'xp'"):
        normalise_order("tp-xp-pp")
    with pytest.raises(UsageError, match="twice"):
        normalise_order("tp-tp-pp")
    assert normalise_order("tp-pp-dp") == ("tp", "pp", "dp", "cp", "ep")


NODES = [NodeAlloc("n1", (0, 1, 2, 3)), NodeAlloc("n2", (4, 5, 6, 7))]


def test_block_distribution_fills_a_node_first():
    assert place_tasks(NODES, 8, "block") == [
        ("n1", 0), ("n1", 1), ("n1", 2), ("n1", 3), ("n2", 4), ("n2", 5), ("n2", 6), ("n2", 7)
    ]


def test_cyclic_distribution_deals_round_robin():
    assert place_tasks(NODES, 8, "cyclic") == [
        ("n1", 0), ("n2", 4), ("n1", 1), ("n2", 5), ("n1", 2), ("n2", 6), ("n1", 3), ("n2", 7)
    ]
    # uneven nodes: a full node is skipped
    uneven = [NodeAlloc("a", (0,)), NodeAlloc("b", (0, 1, 2))]
    assert place_tasks(uneven, 4, "cyclic") == [("a", 0), ("b", 0), ("b", 1), ("b", 2)]


def test_bad_distribution_and_too_many_ranks():
    with pytest.raises(UsageError, match="plane"):
        place_tasks(NODES, 8, "plane")
    with pytest.raises(UsageError, match="9 ranks"):
        place_tasks(NODES, 9, "block")


def test_full_rank_map_two_nodes_tp4_pp2_both_orders():
    nodes = planned_nodes(["node01", "node02"], 8)
    lay = build_layout(nodes, Sizes(tp=4, pp=2, dp=2), DEFAULT, "block", Fabric())
    # default: rank = tp + dp*4 + pp*8 -> node01 holds stage 0 (both replicas), node02 stage 1
    assert [(lay.coords[r]["pp"], lay.coords[r]["dp"]) for r in (0, 4, 8, 12)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [g.level for g in lay.groups["pp"]] == ["network"] * 8  # node01 -> node02, switch unknown
    lay2 = build_layout(nodes, Sizes(tp=4, pp=2, dp=2), TPPPDP, "block", Fabric())
    # tp-pp-dp: rank = tp + pp*4 + dp*8 -> each node holds one whole pipeline
    assert [(lay2.coords[r]["pp"], lay2.coords[r]["dp"]) for r in (0, 4, 8, 12)] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert {g.level for g in lay2.groups["pp"]} == {"nvlink"}
    assert lay2.slots[12] == ("node02", 4)
