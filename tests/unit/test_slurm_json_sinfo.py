"""The >= 23.02 grouped ``sinfo --json`` shape.

No public recording of this shape exists in ../shared/fixtures, so these inputs
are built by hand from the field list of data_parser v0.0.42 (PARSER_ARRAY
(SINFO_DATA) in SchedMD/slurm parsers.c); they are test inputs, not recordings.
Real 24.11 output is covered in test_slurm_recorded.py once it is recorded.
"""

from __future__ import annotations

import json

from cockpit.backends.slurm_json import parse_sinfo


def _group(partition, nodes, state, *, alloc=0, gres="gpu:h100:8(S:0-1)", used="gpu:h100:0(IDX:N/A)",
           reason=None, default=False):
    return {
        "node": {"state": state},
        "nodes": {"total": len(nodes), "nodes": nodes, "hostnames": nodes, "addresses": []},
        "cpus": {"allocated": alloc, "idle": 16 * len(nodes) - alloc, "other": 0,
                 "total": 16 * len(nodes), "minimum": 16, "maximum": 16},
        "memory": {"minimum": 64000, "maximum": 64000, "allocated": 1000 * (alloc // 2),
                   "free": {"minimum": {"set": True, "infinite": False, "number": 1}}},
        "gres": {"total": gres, "used": used},
        "features": {"total": "", "active": ""},
        "reason": reason or {"description": "", "time": 0, "user": ""},
        "partition": {
            "name": partition,
            "nodes": {"configured": "node[01-04]" if partition == "gpu" else "node[01-02]"},
            "partition": {"state": ["UP"]},
            "maximums": {"time": {"set": True, "infinite": True, "number": 0}},
            "flags": ["DEFAULT"] if default else [],
        },
    }


def test_groups_merge_into_unique_nodes_with_all_partitions():
    doc = {"sinfo": [
        _group("gpu", ["node01"], ["MIXED"], alloc=4, used="gpu:h100:2(IDX:0-1)", default=True),
        _group("gpu", ["node02"], ["IDLE", "DRAIN"],
               reason={"description": "bad gpu", "time": 1700000000, "user": "root"}),
        _group("gpu", ["node03", "node04"], ["IDLE"]),
        _group("debug", ["node01"], ["MIXED"], alloc=4, used="gpu:h100:2(IDX:0-1)"),
        _group("debug", ["node02"], ["IDLE", "DRAIN"],
               reason={"description": "bad gpu", "time": 1700000000, "user": "root"}),
    ]}
    nodes, parts = parse_sinfo(json.dumps(doc))
    by = {n.name: n for n in nodes}
    assert sorted(by) == ["node01", "node02", "node03", "node04"]
    assert by["node01"].partitions == ("gpu", "debug")
    assert by["node03"].partitions == ("gpu",)
    n1 = by["node01"]
    assert (n1.state, n1.cpus, n1.alloc_cpus) == ("mixed", 16, 4)
    assert [(g.type, g.count, g.alloc_indexes) for g in n1.gpus] == [("h100", 8, (0, 1))]
    n2 = by["node02"]
    assert (n2.display_state, n2.reason, n2.reason_user, n2.reason_time) == (
        "drained", "bad gpu", "root", 1700000000)
    assert {p.name: (len(p.nodes), p.is_default, p.max_time) for p in parts} == {
        "gpu": (4, True, None), "debug": (2, False, None)}


def test_multi_node_group_drops_group_wide_gpu_indexes_with_a_warning():
    doc = {"sinfo": [_group("gpu", ["node03", "node04"], ["MIXED"], alloc=8,
                            used="gpu:h100:2(IDX:0-1)")]}
    w: list[str] = []
    nodes, _ = parse_sinfo(json.dumps(doc), warnings=w)
    assert [n.alloc_cpus for n in nodes] == [4, 4]  # split evenly
    assert all(g.alloc_indexes == () and g.count == 8 for n in nodes for g in n.gpus)
    assert len(w) == 1 and "scontrol show node" in w[0]
