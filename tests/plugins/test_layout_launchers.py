"""The layout check judged with the launch's own launcher (ms-swift's expert TP 1 against
Megatron-LM's expert TP = TP), with the launch counts read from the script (torchrun,
NNODES=/NPROC_PER_NODE=, srun/#SBATCH), and TP over PCIe where `topo -m` shows no NVLink.
Every recording is listed in tests/data/*/SOURCES.md; the expected values were read
off the recordings by hand."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from test_layout_inputs import NODES, FakeBackend, parse
from cockpit_layout import plugin
from cockpit_layout.megatron import parse_megatron_args, parse_megatron_script

DATA = Path(__file__).resolve().parents[1] / "data"
CFG = DATA / "training-configs"
TOPO = DATA / "layout"


class RecordingBackend(FakeBackend):
    """The test backend, recording every question the check asks it."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.asked: list[str] = []

    async def fetch_jobs(self):
        self.asked.append("fetch_jobs")
        return await super().fetch_jobs()

    async def fetch_nodes(self):
        self.asked.append("fetch_nodes")
        return await super().fetch_nodes()

    async def fetch_topology(self):
        self.asked.append("fetch_topology")
        return await super().fetch_topology()


def check(argv, backend=None):
    backend = backend or RecordingBackend((), NODES)
    res = asyncio.run(plugin.checks[0].run(make_ctx(backend), parse(argv)))
    return res, {f.rule: f for f in res.findings}, backend


SWIFT = {  # file: (launcher, tp, ep, etp as written, nnodes, nproc_per_node)
    "ms-swift-qwen3-235b-lora-megatron-sft-tp4-etp1-ep8.sh": ("ms-swift", 4, 8, 1, None, 8),
    "ms-swift-issue4030-qwen3-30b-a3b-megatron-sft-tp2-ep8-no-etp.sh": ("ms-swift", 2, 8, None, None, None),
    "qwen3-issue1278-ms-swift-qwen3-30b-a3b-2x8-a800-tp2-ep8-EXCERPT.sh": ("ms-swift", 2, 8, None, None, None),
    "laocheyujie-ms-swift-debug-glm45-air-2x8-tp4-pp2-cp2-ep4-etp1.sh": ("ms-swift", 4, 4, 1, 2, 8),
    "megatron-lm-llama3-8b-h100-fp8-tp1-cp1-args-EXCERPT.sh": ("megatron-lm", 1, None, None, 1, 8),
}


@pytest.mark.parametrize("name", sorted(SWIFT))
def test_launcher_and_counts_are_read(name):
    s = parse_megatron_script((CFG / name).read_text(), name)
    assert (s.launcher, s.tp, s.ep, s.etp, s.nnodes, s.nproc_per_node) == SWIFT[name]
    assert not [x for x in s.ignored if x.endswith(("--nnodes", "--nproc-per-node"))]


@pytest.mark.parametrize("name,gpus", [
    ("ms-swift-issue4030-qwen3-30b-a3b-megatron-sft-tp2-ep8-no-etp.sh", ["--nodes", "1", "--gpus-per-node", "8"]),
    ("qwen3-issue1278-ms-swift-qwen3-30b-a3b-2x8-a800-tp2-ep8-EXCERPT.sh", ["--nodes", "2", "--gpus-per-node", "8"]),
    ("ms-swift-qwen3-235b-lora-megatron-sft-tp4-etp1-ep8.sh", ["--nodes", "1"]),
    ("laocheyujie-ms-swift-debug-glm45-air-2x8-tp4-pp2-cp2-ep4-etp1.sh", []),
])
def test_ms_swift_launches_are_judged_with_expert_tp_1(name, gpus):
    res, rules, backend = check(["--megatron-script", str(CFG / name), *gpus])
    assert res.severity == Severity.OK, [f.title for f in res.findings]
    assert res.data["layout"]["sizes"]["etp"] == 1
    assert backend.asked == []  # every input given: Slurm is never asked
    assert rules["switch-topology"].title.startswith("switch topology and free nodes not asked")


def test_the_same_tp2_ep8_line_under_megatron_lm_defaults_is_crit():
    # ms-swift#4030's sizes with Megatron-LM's default expert TP (= TP 2): 2 x 8 = 16 on 8 GPUs
    spec = parse_megatron_args("--tensor-model-parallel-size 2 --expert-model-parallel-size 8")
    assert spec.launcher is None
    res, rules, _ = check(["--megatron-args", "--tensor-model-parallel-size 2 --expert-model-parallel-size 8",
                           "--nodes", "1", "--gpus-per-node", "8"])
    assert rules["world-size"].severity == Severity.CRIT
    assert "expert TP 2 x EP 8" in rules["world-size"].title


def test_script_counts_fill_the_plan_and_flags_win():
    name = CFG / "laocheyujie-ms-swift-debug-glm45-air-2x8-tp4-pp2-cp2-ep4-etp1.sh"
    res, _, _ = check(["--megatron-script", str(name)])
    assert res.summary.startswith("TP=4 PP=2 DP=1 CP=2 EP=4 on 16 GPUs")  # NNODES=2 x NPROC_PER_NODE=8
    res, rules, _ = check(["--megatron-script", str(name), "--nodes", "4"])
    assert res.summary.startswith("TP=4 PP=2 DP=2 CP=2 EP=4 on 32 GPUs")
    assert "launch script: 2 for --nodes (--nodes 4 of the command line was used)" in rules["inputs-ignored"].evidence


def test_torchrun_srun_and_sbatch_counts():
    script = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --gres=gpu:8  # eight\n"
              "srun --ntasks-per-node=1 torchrun --nnodes 4 --nproc_per_node=8 pretrain_gpt.py "
              "--tensor-model-parallel-size 8\n")
    s = parse_megatron_script(script)
    assert (s.launcher, s.nnodes, s.nproc_per_node, s.tp) == ("megatron-lm", 4, 8, 8)
    elastic = parse_megatron_script("torchrun --nnodes 1:4 --nproc-per-node gpu train.py")
    assert elastic.nnodes is None and elastic.nproc_per_node is None
    assert any("--nnodes 1:4" in x for x in elastic.ignored) and any("gpu" in x for x in elastic.ignored)
    assert parse_megatron_script("srun -N 2 --gpus-per-node=h100:4 python x.py").nproc_per_node == 4


PCIE = {  # file: GPUs in the matrix (all PCIe, no NV#)
    "nccl-tests-issue307-8x-rtx4090-pcie-only-pix-sys-nic-tabs.txt": 8,
    "pytorch-issue47885-6-gpu-pcie-only-pix-node-sys-EXCERPT.txt": 6,
    "club-3090-issue46-5-gpu-pcie-only-sys-phb-node.txt": 5,
    "club-3090-issue1229-2x-rtx5090-phb-tabs-gpu-numa-id.txt": 2,
}


@pytest.mark.parametrize("name", sorted(PCIE))
def test_tp_over_pcie_is_warn_never_an_assumed_nvlink(name):
    gpus = PCIE[name]
    res, rules, _ = check(["--nodes", "1", "--gpus-per-node", str(gpus), "--tp", str(gpus), "--topo-m", str(TOPO / name)])
    assert res.severity == Severity.WARN
    f = rules["tp-within-nvlink"]
    assert f.severity == Severity.WARN and "PCIe" in f.title and "tp-fits-node" not in rules
    assert "no NVLink (PCIe only)" in rules["nvlink-domains"].title
    ok, rules1, _ = check(["--nodes", "1", "--gpus-per-node", str(gpus), "--tp", "1", "--topo-m", str(TOPO / name)])
    assert ok.severity == Severity.OK and "tp-within-nvlink" not in rules1


def test_tp_across_nodes_stays_crit_on_a_pcie_box():
    name = TOPO / "nccl-tests-issue307-8x-rtx4090-pcie-only-pix-sys-nic-tabs.txt"
    res, rules, _ = check(["--nodes", "2", "--gpus-per-node", "8", "--tp", "16", "--topo-m", str(name)])
    assert res.severity == Severity.CRIT
    assert rules["tp-fits-node"].severity == Severity.CRIT
    assert rules["tp-within-nvlink"].severity == Severity.CRIT and "span nodes" in rules["tp-within-nvlink"].title


def test_a_hostlist_or_a_job_asks_slurm():
    _, _, backend = check(["--nodes", "node[01-02]", "--tp", "8"])
    assert "fetch_nodes" in backend.asked and "fetch_topology" in backend.asked


def _demo_ctx():
    from cockpit.backends.demo import DemoBackend
    from cockpit.config import Config
    from cockpit.core.actions import Actions
    from cockpit.plugins.host import check_context

    b = DemoBackend()
    return b, check_context(backend=b, actions=Actions(b), probes=b.probe_runner(Config()), config={})


async def test_the_form_and_the_check_take_the_sizes_from_the_jobs_launch_line():
    # the simulated llama-70b job runs `srun python -u pretrain_gpt.py --tensor-model-parallel-size 8
    # --pipeline-model-parallel-size 4 ...` (its batch script, read with scontrol write batch_script)
    backend, ctx = _demo_ctx()
    job = next(j for j in (await backend.snapshot()).jobs if j.name == "llama-70b-pretrain")
    assert await plugin.checks[0].prefill(ctx, job) == {"tp": 8, "pp": 4, "dp": ""}
    res = await plugin.checks[0].run(ctx, parse(["--job", str(job.job_id)]))
    assert res.summary.startswith("TP=8 PP=4 DP=2 on 64 GPUs")
    given = await plugin.checks[0].run(ctx, parse(["--job", str(job.job_id), "--pp", "1"]))
    assert given.summary.startswith("TP=8 PP=1 DP=8")  # what is given wins, and the job's 4 is listed
    ignored = next(f for f in given.findings if f.rule == "inputs-ignored").evidence
    assert f"job {job.job_id}'s batch script: pp 4 (the given 1 was used)" in ignored


async def test_a_job_without_a_launch_line_keeps_the_old_prefill():
    backend, ctx = _demo_ctx()
    job = next(j for j in (await backend.snapshot()).jobs if j.command == "bash" and j.gpus)
    values = await plugin.checks[0].prefill(ctx, job)
    assert values["pp"] == 1 and values["tp"] == max(g.count for g in job.gpus)
