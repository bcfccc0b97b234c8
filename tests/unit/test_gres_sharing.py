"""Shards, MPS and MIG slices as sites print them (tests/data/slurm-gres/SOURCES.md, issue 21).

Each recording goes through the reader that meets it in production (a node record of the
JSON readers, the text replay, grouped sinfo, pyslurm's mapping); the expected values were
checked by hand against the recorded lines."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from cockpit.backends.pyslurm_map import node_from_pyslurm, sharing_in_use
from cockpit.backends.replay_text import node_record
from cockpit.backends.slurm_json_nodes import node_from_record, node_gres, parse_sinfo, sharing_gres
from cockpit.backends.slurm_text import parse_scontrol_kv
from cockpit.backends.slurm_textcap import read_capture
from cockpit.commands._tables import node_columns, node_rows, text_lines
from cockpit.core.whyparts import _free
from cockpit.models import GpuGroup, Node, SharedGres
from cockpit.models.cluster import mig_profile
from cockpit.models.serialize import node_to_dict

DATA = Path(__file__).resolve().parents[1] / "data"
GRES = DATA / "slurm-gres"


def _frida(name: str) -> dict[str, Node]:
    """The site's ``slurm`` table (an sinfo format: GRES and GRES_USED columns), one node a row."""
    text = (GRES / name).read_text().split("\n", 1)[1]  # the prompt line is the capture's, not sinfo's
    rows = read_capture(text).rows
    return {r["NODELIST"]: node_from_record({"name": r["NODELIST"], "state": "idle", "gres": r["GRES"],
                                             "gres_used": r["GRES_USED"]}, "t", []) for r in rows}


@pytest.mark.parametrize("capture", ["frida-ulfri-docs-slurm-gres-shard-2023-12-EXCERPT.txt",
                                     "frida-ulfri-docs-slurm-gres-shard-2024-01-EXCERPT.txt"])
def test_frida_shards_beside_eight_a100s_in_both_forms_of_use(capture):
    nodes = _frida(capture)
    ana = nodes["ana"]
    # in use as shard:A100_80GB:0(IDX:N/A) (2023-12) and as 0(0/80,...,0/80) (2024-01): both 0 of 640
    assert ana.sharing == (SharedGres("shard", "A100_80GB", 640, 0),)
    assert (ana.gpu_total, ana.gpu_alloc, ana.shared("shard"), ana.mig) == (8, 0, (640, 0), ())
    assert ana.gres_extra == "+0/640 shard" and ana.gpu_summary == "0/8 +0/640 shard"
    # axa and ixh print "shard:0" in use of a shard they were not given: no shards, no column text
    for name in ("axa", "ixh"):
        assert nodes[name].sharing == () and nodes[name].gres_extra == "" and nodes[name].gpu_total == 8


def test_a_node_whose_use_was_not_saved_has_its_shards_in_use_unknown():
    # sinfo -o "%N %G" saves the totals only
    lines = (GRES / "nn-pipelines-readme-sinfo-gres-shard-EXCERPT.txt").read_text().splitlines()
    gres = dict(ln.split(" ", 1) for ln in lines if ln.startswith("gpu-"))
    assert sharing_gres(gres["gpu-33-28"], "", "t") == (SharedGres("shard", "V100-PCIE-32GB", 40, None),)
    assert sharing_gres(gres["gpu-42-00"], "", "t") == ()
    got = node_gres(gres["gpu-33-28"], "", "t")
    assert [(g.type, g.count) for g in got.gpus] == [("V100-PCIE-32GB", 2)] and got.mig == ()
    n = Node("gpu-33-28", "idle", **got.fields())
    assert n.shared("shard") == (40, None) and n.gres_extra == "+?/40 shard"


def test_a_pasted_gres_with_shards_and_the_sites_mig_types():
    text = (GRES / "explicit-commonsense-sbatch-comment-gres-shard-mig-EXCERPT.txt").read_text()
    pasted = re.search(r"# (gpu:nvidia_a100-sxm4-40gb:4\(S:0-1\),shard:\S+)", text).group(1)
    got = node_gres(pasted, "", "t")
    assert [(g.type, g.count) for g in got.gpus] == [("nvidia_a100-sxm4-40gb", 4)]
    assert got.sharing == (SharedGres("shard", "nvidia_a100-sxm4-40gb", 28, None),)
    assert {mig_profile(t) for t in re.findall(r"gpu:(\dg\.\d+gb)", text)} == {"7g.40gb", "3g.20gb"}


def _slurmd_g_types() -> list[str]:
    text = (GRES / "stackhpc-slurm-appliance-mig-slurmd-G-EXCERPT.txt").read_text()
    return re.findall(r"Gres Name=gpu Type=(\S+) Count=1 ", text)


def test_autodetected_mig_devices_are_slices_not_gpus():
    types = _slurmd_g_types()
    assert len(types) == 10  # what Slurm counts as gres/gpu on this node of 4 H100s
    slices = [mig_profile(t) for t in types if mig_profile(t)]
    assert sorted(slices) == ["1g.10gb"] * 6 + ["4g.40gb"] * 2
    assert [t for t in types if not mig_profile(t)] == ["nvidia_h100_80gb_hbm3"] * 2
    # the gres the site configured from that output, as Slurm prints a node's Gres back
    conf = (GRES / "stackhpc-slurm-appliance-mig-gres-conf-EXCERPT.txt").read_text()
    gres = ",".join(re.findall(r'conf: "([^"]+)"', conf))
    n = Node("io-io-gpu-02", "idle", **node_gres(gres, "", "t").fields())
    assert (n.gpu_total, n.mig_total) == (2, 8)
    assert [(g.type, g.count) for g in n.mig] == [("nvidia_h100_80gb_hbm3_4g.40gb", 2),
                                                  ("nvidia_h100_80gb_hbm3_1g.10gb", 6)]
    assert n.gres_extra == "+0/2 4g.40gb +0/6 1g.10gb"
    doc = node_to_dict(n)
    assert (doc["gpu_total"], doc["mig_total"], doc["mig"][0]["profile"]) == (2, 8, "4g.40gb")


def test_a_node_of_slices_only_has_no_whole_gpu():
    text = (GRES / "deepops-issue1214-slurmd-log-mig-EXCERPT.txt").read_text()
    assert set(re.findall(r"system device `(\S+)`", text)) == {"nvidia_a100_1g.5gb"}
    assert mig_profile("nvidia_a100_1g.5gb") == "1g.5gb"
    gres = re.search(r"Gres=\*\*(\S+?)\*\*", text).group(1)  # the poster's bold marks around it
    n = Node("hostname-c", "idle", **node_gres(gres, "gpu:1g.5gb:3(IDX:0-2)", "t").fields())
    assert (n.gpu_total, n.gpu_cell, n.mig_total, n.mig_alloc) == (0, "0/0", 28, 3)
    assert n.gpu_summary == "0/0 +3/28 1g.5gb"


def test_whole_a100s_beside_slices_of_two_more():
    text = (GRES / "cloudac7-blog-slurm-mig-conf-EXCERPT.txt").read_text()
    gres = re.search(r"\bGres=(\S+)", text).group(1)
    n = Node("c51-g002", "idle", **node_gres(gres, "gpu:a100:1(IDX:0),gpu:1g.10gb:2(IDX:2-3)", "t").fields())
    assert [(g.type, g.count, g.alloc_indexes) for g in n.gpus] == [("a100", 2, (0,))]
    assert [(g.type, g.count, g.alloc_indexes) for g in n.mig] == [("1g.10gb", 14, (2, 3))]
    assert (n.gpu_total, n.gpu_alloc, n.mig_total, n.mig_alloc) == (2, 1, 14, 2)
    # a pending job asking gpu or gpu:1g.10gb can be given a slice, as Slurm schedules it
    assert _free(n, "1g.10gb") == 12 and _free(n, None) == 13 and _free(n, "a100") == 1


def _printed_gres(name: str, sep: str) -> list[tuple[str, str]]:
    """(first column, GRES column) of each row of an sinfo capture of one of the files below."""
    return [tuple(ln.split(sep)[:2]) for ln in (GRES / name).read_text().splitlines() if ln.strip()]


# MIG slices as sinfo prints a node's GRES (%G) at three sites; counted by hand off the lines
@pytest.mark.parametrize("name, sep, row, whole, slices", [
    # Rorqual (Alliance): H100s cut 3g.40gb + 2g.20gb + 2 x 1g.10gb, 3 and 4 GPUs' worth
    ("mila-cluv-test-vram-rorqual-sinfo-f-G-EXCERPT.txt", "|", 1, 0,
     [("3g.40gb", 3), ("2g.20gb", 3), ("1g.10gb", 6)]),
    ("mila-cluv-test-vram-rorqual-sinfo-f-G-EXCERPT.txt", "|", 2, 0,
     [("3g.40gb", 4), ("2g.20gb", 4), ("1g.10gb", 8)]),
    # Narval (Alliance): sockets printed as lists, "(S:1,3,7)", a comma inside the parentheses
    ("mila-cluv-test-vram-narval-sinfo-f-G-EXCERPT.txt", "|", 1, 0,
     [("3g.20gb", 3), ("4g.20gb", 1), ("2g.10gb", 4), ("1g.5gb", 7)]),
    # Demetra's lovelace nodes: one whole A100 beside 1g.20gb and 1g.10gb slices
    ("pandasgi-vllm-runbook-demetra-sinfo-P-G-N-EXCERPT.txt", None, 0, 1, [("1g.20gb", 2), ("1g.10gb", 3)]),
])
def test_mig_slices_in_a_nodes_printed_gres(name, sep, row, whole, slices):
    _, gres = _printed_gres(name, sep)[row]
    n = Node("n", "idle", **node_gres(gres, "", "t").fields())
    assert [(mig_profile(g.type), g.count) for g in n.mig] == slices
    assert (n.gpu_total, n.mig_total, n.mig_alloc) == (whole, sum(c for _, c in slices), 0)


def test_whole_gpus_and_gpu_less_rows_beside_the_mig_rows():
    rows = dict(_printed_gres("mila-cluv-test-vram-narval-sinfo-f-G-EXCERPT.txt", "|")[1:3])
    n = Node("n", "idle", **node_gres(rows["milan,a100,nvlink"], "", "t").fields())
    assert (n.gpu_total, n.mig) == (4, ())
    genoa = Node("n", "idle", **node_gres("(null)", "", "t").fields())
    assert (genoa.gpu_total, genoa.mig_total) == (0, 0)


def test_mps_from_a_scontrol_show_node_text():
    text = (DATA / "slurm-text" / "scontrol-show-node-findstring-13216167298-22.05.2-kill-task-failed.txt").read_text()
    (rec,) = parse_scontrol_kv(text)
    n = node_from_record(node_record(rec), "scontrol show node", [])
    assert n.gpu_total == 6 and n.sharing == (SharedGres("mps", "nvidiah100pcie", 600, None),)
    assert n.shared("mps") == (600, None) and n.gres_extra == "+?/600 mps"


@pytest.mark.parametrize("gtype, profile", [
    ("1g.10gb", "1g.10gb"), ("nvidia_h100_80gb_hbm3_4g.40gb", "4g.40gb"), ("a100_3g.39gb", "3g.39gb"),
    ("nvidia_a100_80gb_pcie_3g.39gb", "3g.39gb"), ("a100l.2g.20gb", "2g.20gb"), ("1g.10gb+me", "1g.10gb+me"),
    ("1c.3g.40gb", "1c.3g.40gb"), ("nvidia_h100_80gb_hbm3", ""), ("A100_80GB", ""), ("V100-PCIE-32GB", ""),
    ("nvidia_a100-sxm4-40gb", ""), ("h100", ""), (None, ""), ("", ""),
])
def test_which_gpu_types_are_mig_profiles(gtype, profile):
    # the types of the recordings above, MIG names from NVIDIA's guide, and whole GPUs' names
    assert mig_profile(gtype) == profile


def test_typed_total_and_untyped_use_are_the_same_shards():
    assert sharing_gres("gpu:4(S:0-1),shard:16(S:0-1)", "gpu:(null):1(IDX:0),shard:(null):3", "t") == \
        (SharedGres("shard", None, 16, 3),)
    assert sharing_gres("shard:h100:16", "shard:3", "t") == (SharedGres("shard", "h100", 16, 3),)
    # two types of shards, and a use Slurm did not list for one of them: that one is not known
    assert sharing_gres("shard:a:8,shard:b:8", "shard:a:2(1/4,1/4)", "t") == \
        (SharedGres("shard", "a", 8, 2), SharedGres("shard", "b", 8, None))


def test_unread_gres_make_every_sharing_field_null_in_json():
    warnings: list[str] = []
    n = node_from_record({"name": "n1", "state": "idle", "gres": "gpu:a100:2,shard:a100:x", "gres_used": ""},
                         "t", warnings)
    assert n.unknown == {"gpus"} and n.sharing == () and n.mig == () and n.gres_extra == ""
    assert any("n1" in w and "gpus" in w for w in warnings)
    doc = node_to_dict(n)
    for key in ("gpus", "gpu_total", "mig", "mig_total", "mig_alloc", "sharing", "shard_total", "shard_used",
                "mps_total", "mps_used"):
        assert doc[key] is None, key
    read = node_to_dict(_frida("frida-ulfri-docs-slurm-gres-shard-2024-01-EXCERPT.txt")["ana"])
    assert (read["shard_total"], read["shard_used"], read["mps_total"], read["mps_used"]) == (640, 0, 0, 0)
    assert read["sharing"] == [{"name": "shard", "type": "A100_80GB", "total": 640, "used": 0}]
    assert read["mig"] == [] and read["mig_total"] == 0
    json.dumps(read)


def _group(names: list[str], used: str) -> dict:
    return {"node": {"state": ["MIXED"]}, "nodes": {"nodes": names}, "cpus": {"total": 64 * len(names)},
            "gres": {"total": "gpu:A100_80GB:8(S:0-1),shard:A100_80GB:640(S:0-1)", "used": used},
            "partition": {"name": "frida"}}


def test_a_grouped_sinfo_record_of_several_nodes_does_not_say_each_nodes_shards():
    used = "gpu:A100_80GB:1(IDX:0),shard:A100_80GB:40(40/80,0/80,0/80,0/80,0/80,0/80,0/80,0/80)"
    one, _ = parse_sinfo(json.dumps({"sinfo": [_group(["ana"], used)]}), "sinfo --json", [])
    assert one[0].sharing == (SharedGres("shard", "A100_80GB", 640, 40),)
    warnings: list[str] = []
    two, _ = parse_sinfo(json.dumps({"sinfo": [_group(["ana", "anb"], used)]}), "sinfo --json", warnings)
    assert [n.sharing for n in two] == [(SharedGres("shard", "A100_80GB", 640, None),)] * 2
    assert all(n.gres_extra == "+?/640 shard" for n in two) and warnings


def _pyslurm_node(**kw):
    base = dict(name="ana", state="MIXED", reason=None, reason_user=None, reason_time=None, total_cpus=112,
                allocated_cpus=8, real_memory=1_000_000, allocated_memory=0, partitions=["frida"],
                configured_gres={"gpu:A100_80GB": 6, "gpu:1g.10gb": 14, "shard:A100_80GB": 480}, address=None,
                active_features=[], available_features=[], boot_time=None)
    return SimpleNamespace(**{**base, **kw})


def test_pyslurm_shards_in_use_come_from_the_tres_or_are_not_known():
    gres = {"gpu": 1, "gpu:A100_80GB": 1, "shard": 40, "shard:A100_80GB": 40}
    assert sharing_in_use(gres) == {"shard": 40}
    assert sharing_in_use({"shard:a": 2, "shard:b": 3}) == {"shard": 5}
    n = node_from_pyslurm(_pyslurm_node(), {"A100_80GB": {0}, "1g.10gb": {7, 8}}, [], allocated_gres=gres)
    assert [(g.type, g.count, g.alloc_indexes) for g in n.gpus] == [("A100_80GB", 6, (0,))]
    assert [(g.type, g.count, g.alloc_indexes) for g in n.mig] == [("1g.10gb", 14, (7, 8))]
    assert n.sharing == (SharedGres("shard", "A100_80GB", 480, 40),)
    # TRES that do not track gres/shard (AccountingStorageTRES) do not say "none in use"
    unknown = node_from_pyslurm(_pyslurm_node(), None, [], allocated_gres={"gpu": 1})
    assert unknown.shared("shard") == (480, None)
    # a node holding no CPUs holds no shards: 0 however little the TRES say
    idle = node_from_pyslurm(_pyslurm_node(allocated_cpus=0), None, [], allocated_gres=None)
    assert idle.shared("shard") == (480, 0)


def test_pyslurm_bad_shard_count_is_the_nodes_gpus_unknown():
    warnings: list[str] = []
    n = node_from_pyslurm(_pyslurm_node(configured_gres={"gpu:h100": 4, "shard:h100": "many"}), None, warnings)
    assert n.unknown == {"gpus"} and n.gpus == () and n.sharing == () and warnings


def test_headless_table_has_a_shared_column_only_where_a_node_has_some():
    frida = list(_frida("frida-ulfri-docs-slurm-gres-shard-2024-01-EXCERPT.txt").values())
    plain = [n for n in frida if not n.sharing]
    assert [c.head for c in node_columns(plain)][-1] == "AGE" and len(node_rows(plain, 0)[0]) == 9
    cols, rows = node_columns(frida), node_rows(frida, 0)
    assert cols[-1].head == "SHARED/MIG" and [r[-1] for r in rows] == ["+0/640 shard", "", ""]
    wide = text_lines(cols, rows, 200)
    assert wide[0].endswith("SHARED/MIG") and wide[1].endswith("+0/640 shard")
    narrow = text_lines(cols, rows, 40)  # left out where even cut it does not fit, never wrapped
    assert "SHARED" not in narrow[0] and "shard" not in narrow[1]


def test_the_parse_workers_compact_pickle_keeps_shards_and_slices():
    import pickle

    from cockpit.backends.slurm_delta import dumps

    conf = (GRES / "cloudac7-blog-slurm-mig-conf-EXCERPT.txt").read_text()
    gres = re.search(r"\bGres=(\S+)", conf).group(1) + ",shard:a100:16"
    n = Node("c51-g002", "idle", **node_gres(gres, "gpu:1g.10gb:2(IDX:2-3),shard:a100:4(4/8,0/8)", "t").fields())
    back = pickle.loads(dumps(n))
    assert back == n and back.sharing == (SharedGres("shard", "a100", 16, 4),) and back.mig_alloc == 2
