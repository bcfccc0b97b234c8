"""Inputs of the layout check: Megatron args, DeepSpeed configs, topo -m, and the Check itself."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from cockpit.errors import ParseError, UsageError
from cockpit.models import Job, JobGpus, Node, GpuGroup, Switch, Topology
from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from cockpit_layout import plugin
from cockpit_layout.alloc import from_job, parse_topo_m, planned_nodes
from cockpit_layout.rules import Plan, analyze
from cockpit_layout.spec import TP_PP_DP_ORDER, LayoutSpec, merge, parse_deepspeed_config, parse_megatron_args
from cockpit.backends.base import Capabilities

DATA = Path(__file__).parent.parent / "data" / "layout"
TREE = Topology("tree", switches=(
    Switch("leaf1", 0, ("node01", "node02")), Switch("leaf2", 0, ("node03", "node04")),
    Switch("spine", 1, (), ("leaf1", "leaf2")),
))


def test_megatron_args_both_spellings_and_mapping_flag():
    spec = parse_megatron_args(
        "pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size=2 "
        "--num-layers 32 --num-attention-heads 32 --hidden-size 4096 --seq-length 4096 "
        "--micro-batch-size 1 --global-batch-size 512 --use-tp-pp-dp-mapping --bf16 "
        "--context-parallel-size 2 --expert-model-parallel-size 1 --data-path '/data/my corpus'"
    )
    assert (spec.tp, spec.pp, spec.cp, spec.ep) == (4, 2, 2, 1)
    assert (spec.layers, spec.heads, spec.hidden, spec.seq_length) == (32, 32, 4096, 4096)
    assert (spec.micro_batch, spec.global_batch) == (1, 512)
    assert spec.order == TP_PP_DP_ORDER


def test_megatron_args_bad_values():
    with pytest.raises(UsageError, match="--num-layers: 'x'"):
        parse_megatron_args("--num-layers x")
    with pytest.raises(UsageError, match="no value"):
        parse_megatron_args("--tensor-model-parallel-size")
    with pytest.raises(UsageError, match="cannot split"):
        parse_megatron_args("--seq-length '4096")
    with pytest.raises(UsageError, match="positive"):
        parse_megatron_args("--tensor-model-parallel-size 0")


def test_flags_conflicting_with_megatron_args_are_refused():
    with pytest.raises(UsageError, match="tp = 2 from --megatron-args conflicts with 4 from flags"):
        merge(("flags", LayoutSpec(tp=4)), ("--megatron-args", LayoutSpec(tp=2)))
    assert merge(("a", LayoutSpec(tp=4)), ("b", LayoutSpec(tp=4, pp=2))).pp == 2


def ds(cfg, dp=8, pp=1):
    """Judge a DeepSpeed config on dp x pp single-GPU 'nodes' of 8 GPUs with TP 1."""
    spec = merge(("flags", LayoutSpec(tp=1, pp=pp)), ("ds", parse_deepspeed_config(cfg)))
    nodes = planned_nodes([f"n{i}" for i in range(dp * pp // 8 or 1)], min(8, dp * pp))
    return {f.rule: f for f in analyze(Plan(tuple(nodes), spec, deepspeed=True)).findings}


def test_deepspeed_right():
    assert ds({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}) == {}
    assert ds({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2}) == {}  # ga derived = 4
    assert ds({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 3}) == {}
    assert ds({"zero_optimization": {"stage": 1}, "pipeline": {"stages": 2}, "train_batch_size": 32,
               "train_micro_batch_size_per_gpu": 4}, dp=4, pp=2) == {}


def test_deepspeed_product_wrong():
    f = ds({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2})["deepspeed-batch"]
    assert f.severity == Severity.CRIT and "= 32" in f.title
    assert '"gradient_accumulation_steps": 4' in f.fix and '"train_batch_size": 32' in f.fix


def test_deepspeed_derived_value_not_whole():
    f = ds({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 4})["deepspeed-batch"]
    assert "not divisible by micro 4 x DP 8" in f.title
    f2 = ds({"train_batch_size": 60, "gradient_accumulation_steps": 4})["deepspeed-batch"]
    assert "not divisible by grad_accum 4 x DP 8" in f2.title


def test_deepspeed_zero_2_and_3_with_pipeline():
    for stage in (2, 3):
        rules = ds({"zero_optimization": {"stage": stage}, "pipeline": {"stages": 2}}, dp=4, pp=2)
        assert rules["zero-with-pp"].severity == Severity.CRIT
        assert '"stage": 1' in rules["zero-with-pp"].fix
    assert "zero-with-pp" not in ds({"zero_optimization": {"stage": 3}})  # no pipeline: fine


def test_deepspeed_bad_values():
    with pytest.raises(UsageError, match="train_batch_size = -1"):
        parse_deepspeed_config({"train_batch_size": -1})
    with pytest.raises(UsageError, match="stage = 5"):
        parse_deepspeed_config({"zero_optimization": {"stage": 5}})
    with pytest.raises(UsageError, match="JSON object"):
        parse_deepspeed_config([1, 2])


def test_topo_m_fixture_a100_is_one_nvlink_domain():
    domains = parse_topo_m((DATA / "topo-m-dgx-a100-NV12-and-h100-NV18-ml-engineering.txt").read_text())
    assert domains == {g: 0 for g in range(8)}


def test_topo_m_with_ansi_and_tabs_single_gpu():
    text = (DATA / "nvidia_gpu_exporter-capture-h100-80gb-hbm3-590.48.01.txt").read_text()
    start = text.index("# $ nvidia-smi topo -m")
    assert parse_topo_m(text[start:]) == {0: 0}


def test_topo_m_two_domains_from_a_constructed_matrix():
    # Constructed in the test (not a recording): two NVLink pairs joined only over PCIe.
    text = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\nGPU0\t X \tNV4\tSYS\tSYS\t0-7\nGPU1\tNV4\t X \tSYS\tSYS\t0-7\n" \
           "GPU2\tSYS\tSYS\t X \tNV4\t8-15\nGPU3\tSYS\tSYS\tNV4\t X \t8-15\n"
    assert parse_topo_m(text) == {0: 0, 1: 0, 2: 1, 3: 1}
    with pytest.raises(ParseError):
        parse_topo_m("no matrix here")


def test_pending_job_gets_placeholder_nodes():
    job = Job(job_id=7, state="PENDING", node_count=2, gpus_per_node=8)
    nodes = from_job(job)
    assert [n.name for n in nodes] == ["(1)", "(2)"] and all(n.placeholder for n in nodes)
    with pytest.raises(UsageError, match="job 8 holds no GPUs"):
        from_job(Job(job_id=8, state="PENDING", node_count=1))


class FakeBackend:
    """A test double holding cockpit models, as a real backend would return them."""

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    name = "fake"
    description = "fake"

    def __init__(self, jobs=(), nodes=(), topo=TREE):
        self.jobs, self.nodes, self.topo = tuple(jobs), tuple(nodes), topo

    async def fetch_jobs(self):
        return self.jobs

    async def fetch_nodes(self):
        return self.nodes

    async def fetch_topology(self):
        return self.topo


def parse(argv):
    p = argparse.ArgumentParser()
    plugin.checks[0].add_arguments(p)
    return p.parse_args(argv)


NODES = tuple(Node(f"node{i:02d}", "idle", partitions=("train",), gpus=(GpuGroup("h100", 8),)) for i in range(1, 5))


async def test_check_on_a_running_job_with_megatron_args():
    job = Job(job_id=42, state="RUNNING", partition="train", nodes=("node02", "node03"), node_count=2,
              gpus=(JobGpus("node02", "h100", 8, tuple(range(8))), JobGpus("node03", "h100", 8, tuple(range(8)))))
    ctx = make_ctx(FakeBackend([job], NODES))
    args = parse(["--job", "42", "--megatron-args", "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2"])
    res = await plugin.checks[0].run(ctx, args)
    assert res.severity == Severity.WARN and res.exit_code == 1
    d = res.to_dict()
    assert {f["rule"] for f in d["findings"]} == {"pp-neighbours-leaf", "one-switch", "nvlink-domains", "inputs-ignored"}
    # the test context has no Slurm host to read the job's batch script on: said, not guessed
    assert d["data"]["ignored"][0].startswith("job 42's batch script not read")
    # no topo -m and no nvlink_domain_size: the verdict says the domains were assumed
    assert d["data"]["nvlink_domains"] == {"source": "assumed", "gpus_per_node": 8}
    assert d["summary"].endswith("NVLink domains assumed: one per node of 8 GPUs (no --topo-m, no nvlink_domain_size)")
    assert d["data"]["layout"]["ranks"][8] == {"rank": 8, "node": "node03", "gpu": 0, "tp": 0, "cp": 0, "dp": 0, "pp": 1, "ep": 0}
    assert d["data"]["preview"]["nodes"][0]["name"] == "node01"
    assert d["data"]["topology"]["leaves"] == {"leaf1": "spine", "leaf2": "spine"}
    json.dumps(d)  # JSON-able


async def test_check_planned_count_and_deepspeed_file(tmp_path):
    cfg = tmp_path / "ds.json"
    cfg.write_text(json.dumps({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2,
                               "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 3}}))
    ctx = make_ctx(FakeBackend((), NODES))
    res = await plugin.checks[0].run(ctx, parse(["--nodes", "2", "--partition", "train", "--tp", "8",
                                                 "--pp", "2", "--deepspeed", str(cfg), "--switches", "1"]))
    rules = {f.rule for f in res.findings}
    assert res.severity == Severity.CRIT
    assert rules == {"deepspeed-batch", "zero-with-pp", "nvlink-domains"}  # --switches 1: no one-switch warning


async def test_check_bad_inputs_raise_usage_errors(tmp_path):
    ctx = make_ctx(FakeBackend((), NODES))
    chk = plugin.checks[0]
    with pytest.raises(UsageError, match="exactly one"):
        await chk.run(ctx, parse(["--tp", "8"]))
    with pytest.raises(UsageError, match="job 99 not found"):
        await chk.run(ctx, parse(["--job", "99"]))
    with pytest.raises(UsageError, match="node05 is not known"):
        await chk.run(ctx, parse(["--nodes", "node[04-05]"]))
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ParseError, match="bad.json"):
        await chk.run(ctx, parse(["--nodes", "node01", "--deepspeed", str(bad)]))
    with pytest.raises(UsageError, match="cannot read"):
        await chk.run(ctx, parse(["--nodes", "node01", "--deepspeed", str(tmp_path / "missing.json")]))


def test_headless_check_imports_no_textual():
    import subprocess
    import sys

    code = "import sys, cockpit_layout, cockpit_layout.check; assert 'textual' not in sys.modules, 'textual imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
