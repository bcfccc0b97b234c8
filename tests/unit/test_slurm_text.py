"""Slurm text parsers: topology (scontrol and topology.conf) and scontrol records.

topology.conf is a real file (tests/data/slurm-json/SOURCES.md). The scontrol
texts below follow the line formats documented in REFERENCE.md section 7 and
TESTCLUSTER.md (what smoke.sh saw); they are inputs built by hand, not
recordings. Real recordings are tested in test_slurm_recorded.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.backends.slurm_text import (
    gres_from_scontrol_detail,
    parse_scontrol_kv,
    parse_topology,
    parse_topology_conf,
    scontrol_lines,
)
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-json"


def test_superpod_topology_conf():
    topo = parse_topology_conf((DATA / "nvidia-circe-dgx-superpod_topology.conf").read_text())
    assert topo.kind == "tree"
    assert [s.name for s in topo.switches] == ["s0", "s1", "s2", "s3", "s4"]
    assert all(s.level == 0 and not s.switches for s in topo.switches)
    s0 = topo.switches[0]
    # "Nodes=circe-n[001-016],n[019-020]": 16 circe nodes plus n019, n020 as written
    assert len(s0.nodes) == 18 and s0.nodes[0] == "circe-n001" and "n020" in s0.nodes
    assert topo.leaf_of("circe-n040") == "s3"
    # The real file lists circe-n051 under both s2 (041-058) and s4; keep both as written.
    assert [s.name for s in topo.switches if "circe-n051" in s.nodes] == ["s2", "s4"]
    assert sum(len(s.nodes) for s in topo.switches) == 80


def test_scontrol_show_topology_tree_with_spine():
    text = (
        "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[01-02]\n"
        "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[03-04]\n"
        "SwitchName=spine Level=1 LinkSpeed=1 Nodes=node[01-04] Switches=leaf[1-2]\n"
    )
    topo = parse_topology(text)
    spine = topo.switches[2]
    assert (spine.level, spine.switches, spine.nodes) == (1, ("leaf1", "leaf2"), ())
    assert topo.leaf_of("node01") == topo.leaf_of("node02") == "leaf1"
    assert topo.path("node04") == ("leaf2", "spine")


def test_topology_conf_levels_are_computed():
    text = "# comment\nSwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n[3-4]\nSwitchName=top Switches=a,b\n"
    topo = parse_topology_conf(text)
    assert {s.name: s.level for s in topo.switches} == {"a": 0, "b": 0, "top": 1}


def test_block_topology_with_aggregated_block():
    text = (
        "BlockName=b1 BlockIndex=0 Nodes=n[1-4] BlockSize=4\n"
        "BlockName=b2 BlockIndex=1 Nodes=n[5-8] BlockSize=4\n"
        "AggregatedBlock=b[1-2] BlockIndex=2 Nodes=n[1-8] BlockSize=8\n"
    )
    topo = parse_topology(text)
    assert topo.kind == "block"
    assert [(b.name, b.index, b.size, len(b.nodes)) for b in topo.blocks] == [
        ("b1", 0, 4, 4), ("b2", 1, 4, 4), ("b[1-2]", 2, 8, 8)]
    assert topo.leaf_of("n6") == "b2"


def test_empty_topology_is_none():
    assert parse_topology("").kind == "none"


@pytest.mark.parametrize("text", [
    "SwitchName=a Level=x Nodes=n1",
    "SwitchName=a Nodes=n[1-",
    "SwitchName=a Switches=b\nSwitchName=b Switches=a",
    "SwitchName=a junk Nodes=n1",
])
def test_bad_topology_raises_parse_error(text):
    with pytest.raises(ParseError, match="scontrol show topology"):
        parse_topology(text)


JOB_TEXT = """JobId=12 JobName=two-node UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901757 Nice=0 Account=(null) QOS=(null)
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=node[01-02]
     Nodes=node[01-02] CPU_IDs=0-1 Mem=200 GRES=gpu:h100:2(IDX:0-1)
   Command=/bin/sleep 100 lr=3
   WorkDir=/tmp

JobId=13 JobName=held
   JobState=PENDING Reason=JobHeldAdmin Dependency=(null)
"""

NODE_TEXT = """NodeName=node01 Arch=x86_64 CoresPerSocket=1
   Gres=gpu:h100:8(S:0)
   GresUsed=gpu:h100:3(IDX:0-2)
   State=MIXED+DRAIN ThreadsPerCore=1
   Reason=gpu test [root@2025-01-01T00:00:00]
"""


def test_scontrol_kv_records():
    recs = parse_scontrol_kv(JOB_TEXT)
    assert [r["JobId"] for r in recs] == ["12", "13"]
    assert recs[0]["Command"] == "/bin/sleep 100 lr=3"  # rest of the line
    assert recs[0]["NodeList"] == "node[01-02]" and recs[1]["Reason"] == "JobHeldAdmin"
    assert len(scontrol_lines(JOB_TEXT)[0]) == 7


def test_gres_from_detail_jobs_and_nodes():
    g = gres_from_scontrol_detail(JOB_TEXT + "\n" + NODE_TEXT)
    assert [(x.node, x.type, x.count, x.indexes) for x in g.jobs[12]] == [
        ("node01", "h100", 2, (0, 1)), ("node02", "h100", 2, (0, 1))]
    assert g.jobs[13] == ()
    (grp,) = g.nodes["node01"]
    assert (grp.type, grp.count, grp.alloc_indexes) == ("h100", 8, (0, 1, 2))
    assert parse_scontrol_kv(NODE_TEXT)[0]["Reason"] == "gpu test [root@2025-01-01T00:00:00]"


def test_bad_scontrol_text():
    with pytest.raises(ParseError, match="Key=Value"):
        parse_scontrol_kv("this is not scontrol output")
    with pytest.raises(ParseError, match="JobId"):
        gres_from_scontrol_detail("JobId=abc JobName=x")
