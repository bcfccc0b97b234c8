"""GRES as sites print it (tests/data/slurm-gres, real lines from public threads):
untyped GPUs, several types on one node, GPU-less nodes, GPUs only in TRES; and
in the pyslurm mapping the same untyped spelling."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from cockpit.backends.pyslurm_map import node_from_pyslurm
from cockpit.backends.slurm_json_gres import gpu_items, parse_item
from cockpit.backends.slurm_json_nodes import gpu_groups
from cockpit.errors import ParseError
from cockpit.models import GpuGroup

GRES = Path(__file__).resolve().parents[1] / "data" / "slurm-gres"


def _text(name: str) -> str:
    return (GRES / name).read_text()


def test_sherlock_untyped_gpus_with_null_type():
    rec = json.loads(_text("slurmcommander-issue5-sherlock-sinfo-json-gres-EXCERPT.json"))
    assert gpu_groups(rec["gres"], rec["gres_used"], "t") == (GpuGroup(None, 4, (0, 1, 2, 3)),)


@pytest.mark.parametrize("name, gres, count", [
    ("deepops-pr1157-scontrol-node-gres-EXCERPT.txt", None, 1),
    ("slurm-usage-issue11-sinfo-gres-EXCERPT.txt", None, 8),
    ("cranesched-issue296-scontrol-node-EXCERPT.txt", None, 2),
])
def test_untyped_gres_of_three_sites(name, gres, count):
    line = next(ln for ln in _text(name).splitlines() if "gpu:" in ln and "TRES" not in ln)
    value = line.strip().removeprefix("Gres=").split(",", 1)[-1] if "," in line else line.strip().removeprefix("Gres=")
    (group,) = gpu_groups(value, "", "t")
    assert (group.type, group.count, group.alloc_count) == (gres, count, 0)


def test_several_gpu_types_on_one_node_and_none_in_use():
    used = {ln.split()[1]: ln.split()[0] for ln in _text("labshare-issue114-sinfo-gres-used-EXCERPT.txt").splitlines()[1:]}
    mixed = gpu_items(used["resterampe"], "t")
    assert [(i.type, i.count, i.indexes) for i in mixed] == [("1080ti", 1, (0,)), ("980gtx", 1, (1,))]
    (titanx,) = gpu_items(used["fb10dl[04-05]"], "t")
    assert (titanx.type, titanx.count, titanx.indexes) == ("titanx", 0, ())
    (three,) = gpu_items(used["fb10dl06"], "t")
    assert three.indexes == (0, 1, 2)


def test_typed_and_gpu_less_nodes_of_one_listing():
    rows = [ln.split() for ln in _text("prometheus-slurm-exporter-pr83-sinfo-gres-EXCERPT.txt").splitlines()]
    got = {r[0]: gpu_groups(r[5], r[6], "t") for r in rows}
    assert got["gpu-04"] == (GpuGroup("tesla", 4, (0, 2, 3)),)
    assert got["gpu-05"] == (GpuGroup("tesla", 4, ()),)
    assert [got[f"cpu-0{i}"] for i in range(1, 5)] == [()] * 4
    assert sum(g.alloc_count for groups in got.values() for g in groups) == 4 + 4 + 4 + 3 + 0 + 1 + 2 + 4


@pytest.mark.parametrize("tres, total", [
    (_text("slurmcommander-issue5-sherlock-scontrol-tres-EXCERPT.txt").split()[0].removeprefix("CfgTRES="), 4),
    ([ln for ln in _text("cranesched-issue296-scontrol-node-EXCERPT.txt").splitlines()
      if ln.startswith("CfgTRES=")][0].removeprefix("CfgTRES="), 2),
    (_text("graphite-issue5-cfgtres-alloctres-EXCERPT.txt").splitlines()[1].split()[1].lstrip("="), 8),
])
def test_gpus_found_only_in_tres(tres, total):
    # Sherlock's node JSON had "gres": "" and "gres_used": "gpu:0" beside such a TRES
    (group,) = gpu_groups("", "gpu:0", "t", tres)
    assert (group.type, group.count) == (None, total)
    assert gpu_groups("", "gpu:0", "t", "cpu=32,mem=250G,billing=154") == ()


def test_typed_tres_is_not_counted_twice():
    (group,) = gpu_groups("", "", "t", "cpu=8,gres/gpu=4,gres/gpu:a100=4")
    assert group.count == 4


def test_sharing_gres_and_mig_profile_types_are_read_without_a_recording():
    # Shapes from Slurm's gres.html (no public node output found, see SOURCES.md).
    assert gpu_groups("gpu:4(S:0-1),shard:16(S:0-1)", "gpu:(null):1(IDX:0),shard:(null):0", "t") \
        == (GpuGroup(None, 4, (0,)),)
    (mig,) = gpu_items("gpu:1g.10gb:7", "t")
    assert (mig.type, mig.count) == ("1g.10gb", 7)


def test_a_bad_untyped_count_is_named_as_slurm_printed_it():
    with pytest.raises(ParseError, match=r"'gpu:\(null\):x\(IDX:0-7\)'"):
        parse_item("gpu:(null):x(IDX:0-7)", "t")


def test_pyslurm_untyped_gpus_keep_no_type():
    n = SimpleNamespace(name="sh03-12n09", state="MIXED", reason=None, reason_user=None, reason_time=None,
                        total_cpus=32, allocated_cpus=15, real_memory=256000, allocated_memory=49152,
                        partitions=["gpu"], configured_gres={"gpu:(null)": 4}, address=None,
                        active_features=[], available_features=[], boot_time=None)
    node = node_from_pyslurm(n, {None: {0, 1, 2}})
    assert node.gpus == (GpuGroup(None, 4, (0, 1, 2)),)


def test_untyped_gpus_in_use_without_indexes_as_slurm_2205_prints_them():
    """Recorded on the site-profile cluster (tests/data/slurm-22.05/site-untyped-gres-used.txt):
    GresUsed=gpu:2 says 2 of the 8 untyped GPUs are held, not which: 2 in use, no indexes
    invented, and the shard beside it is no GPU."""
    text = (Path(__file__).resolve().parents[1] / "data/slurm-22.05/site-untyped-gres-used.txt").read_text()
    fields = dict(w.split("=", 1) for line in text.splitlines() if not line.startswith("#") for w in line.split())
    (group,) = gpu_groups(fields["Gres"], fields["GresUsed"], "node01")
    assert (group.type, group.count, group.alloc_indexes, group.used) == (None, 8, (), 2)


def test_the_jobs_say_which_untyped_gpus_a_node_counts_in_use():
    """The recorded node (GresUsed=gpu:2, no indexes) beside the job that held two of its GPUs:
    the snapshot names them, as pyslurm's node does; a job list that disagrees with the count
    (one ended between the reads) leaves the count alone; a typed node is not touched."""
    from cockpit.backends.slurm_json_nodes import join_gpu_use
    from cockpit.models import Job, JobGpus, Node

    text = (Path(__file__).resolve().parents[1] / "data/slurm-22.05/site-untyped-gres-used.txt").read_text()
    fields = dict(w.split("=", 1) for line in text.splitlines() if not line.startswith("#") for w in line.split())
    node = Node("node01", "mixed", gpus=gpu_groups(fields["Gres"], fields["GresUsed"], "node01"))
    typed = Node("node04", "mixed", gpus=gpu_groups("gpu:h100:4", "gpu:h100:1(IDX:3)", "node04"))
    job = Job(7, state="RUNNING", nodes=("node01", "node04"),
              gpus=(JobGpus("node01", None, 2, (0, 1)), JobGpus("node04", "h100", 1, (3,))))
    joined, same_typed = join_gpu_use((node, typed), [job])
    assert joined.gpus == (GpuGroup(type=None, count=8, alloc_indexes=(0, 1)),) and joined.gpu_alloc == 2
    assert same_typed is typed
    one = Job(8, state="RUNNING", nodes=("node01",), gpus=(JobGpus("node01", None, 1, (5,)),))
    (kept,) = join_gpu_use((node,), [one])
    assert kept.gpus == node.gpus and kept.gpu_alloc == 2
    assert join_gpu_use((typed,), [job]) == (typed,)


def test_a_type_the_job_holds_none_of_is_no_gpu_of_the_job():
    """Recorded on the site profile (tests/data/slurm-22.05/site-job-two-gpu-types.txt): node02
    lists ``gpu:1g.10gb:0(IDX:)`` beside the two a100 the job got. Read from squeue's
    gres_detail and from scontrol -d text alike: two GPUs on each node, no 0-GPU entry."""
    from cockpit.backends.slurm_json import _alloc_gpus
    from cockpit.backends.slurm_text import gres_from_scontrol_detail
    from cockpit.models import JobGpus

    text = (Path(__file__).resolve().parents[1] / "data/slurm-22.05/site-job-two-gpu-types.txt").read_text()
    detail = json.loads("{" + text[text.index('"gres_detail"'):].rstrip().rstrip(",") + "}")["gres_detail"]
    want = (JobGpus("node01", None, 2, (0, 1)), JobGpus("node02", "a100", 2, (0, 1)))
    assert _alloc_gpus(detail, ("node01", "node02"), 7, "squeue", None) == want
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("Nodes=")]
    assert gres_from_scontrol_detail("JobId=7 JobName=x\n   " + "\n   ".join(lines)).jobs[7] == want


def test_a_node_with_two_gpu_types_held_is_one_node_with_every_index():
    """Slurm gives one gres_detail entry per type: an untyped ``--gres=gpu:8`` on node02
    (gpu:a100:4 and gpu:1g.10gb:4) is two entries for one node. A dict by node kept the
    last: GPU use now asked Prometheus for GPUs 4-7 only (the recorded GPU 0 was never
    read: "no series for job's GPUs", seen on 24.11), the layout check saw 4 GPUs."""
    from cockpit.models import Job, JobGpus, gpus_by_node
    from plugins.cockpit_layout.alloc import from_job

    two = (JobGpus("node01", None, 2, (0, 1)), JobGpus("node02", "a100", 4, (0, 1, 2, 3)),
           JobGpus("node02", "1g.10gb", 4, (4, 5, 6, 7)))
    merged = gpus_by_node(two)
    assert list(merged) == ["node01", "node02"] and merged["node01"] is two[0]
    assert merged["node02"] == JobGpus("node02", "a100+1g.10gb", 8, tuple(range(8)))
    job = Job(9, state="RUNNING", nodes=("node01", "node02"), gpus=two)
    assert [(a.name, a.gpus) for a in from_job(job)] == [("node01", (0, 1)), ("node02", tuple(range(8)))]
    # an entry that holds GPUs but names no indexes: which of the node's GPUs is not known
    vague = gpus_by_node((JobGpus("n", "a100", 2, (0, 1)), JobGpus("n", "h100", 1, ())))
    assert vague["n"] == JobGpus("n", "a100+h100", 3, ())
    assert gpus_by_node(()) == {}


def test_the_recorded_job_on_both_types_of_a_node_is_eight_gpus_there():
    """tests/data/slurm-24.11/site-job-two-gpu-types-all.txt: Slurm 24.11.5 gave an untyped
    --gres=gpu:8 on node02 both its types, one entry per type, from squeue --json and from
    scontrol -d text alike; merged, node02 holds GPUs 0-7."""
    from cockpit.backends.slurm_json import _alloc_gpus
    from cockpit.backends.slurm_text import gres_from_scontrol_detail
    from cockpit.models import JobGpus, gpus_by_node

    text = (Path(__file__).resolve().parents[1] / "data/slurm-24.11/site-job-two-gpu-types-all.txt").read_text()
    detail = json.loads(text[text.index("{"):])["jobs"][0]["gres_detail"]
    want = (JobGpus("node02", "a100", 4, (0, 1, 2, 3)), JobGpus("node02", "1g.10gb", 4, (4, 5, 6, 7)))
    assert _alloc_gpus(detail, ("node02",), 185, "squeue", None) == want
    scontrol = text[text.index("JobId=185"):text.index("{")]
    assert gres_from_scontrol_detail(scontrol).jobs[185] == want
    assert gpus_by_node(want) == {"node02": JobGpus("node02", "a100+1g.10gb", 8, tuple(range(8)))}
