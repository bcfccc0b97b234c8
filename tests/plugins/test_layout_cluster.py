"""The layout check on real jobs of the Slurm test cluster (leaf1 = node[01-02],
leaf2 = node[03-04] under a spine; 8 GPUs per node). Every job is cancelled."""

from __future__ import annotations

import argparse
import os
import time

import pytest

from cockpit.runner import LocalRunner
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from cockpit_layout import plugin
import clusterlib

pytestmark = pytest.mark.cluster
NAME = "cockpit-layout-test"


@pytest.fixture
def ctx(cluster):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"])
    return make_ctx(SlurmCliBackend(LocalRunner(env=env), timeout=20))


@pytest.fixture
def jobs():
    made: list[str] = []
    yield made
    for job_id in made:
        clusterlib.cancel(job_id)


async def wait_state(ctx, job_id: str, state: str, timeout: float = 90.0):  # Slurm schedules slower when loaded
    deadline = time.monotonic() + timeout
    while True:
        job = await ctx.cluster.job(job_id)
        if job is not None and job.state == state and (state != "RUNNING" or job.gpus):
            return job
        if time.monotonic() > deadline:
            pytest.fail(f"job {job_id} never reached {state}; last seen {job}")
        time.sleep(0.3)


async def check(ctx, *argv: str):
    p = argparse.ArgumentParser()
    chk = plugin.checks[0]
    chk.add_arguments(p)
    return await chk.run(ctx, p.parse_args(list(argv)))


@pytest.fixture(autouse=True)
def _default_profile():
    clusterlib.require_profile("default", "these layouts are 2 x 8 h100 GPUs on the default profile's "
                               "NVLink stand-in; the site profile has one h100 node with 4")


def start(jobs, **opts) -> str:
    job_id = clusterlib.submit("sleep 300", job_name=NAME, **opts)
    jobs.append(job_id)
    return job_id


async def test_good_layout_passes(ctx, jobs):
    job_id = start(jobs, nodelist="node[01-02]", nodes=2, gres="gpu:h100:8")
    await wait_state(ctx, job_id, "RUNNING")
    res = await check(ctx, "--job", job_id, "--tp", "8", "--pp", "2")
    assert res.severity == Severity.OK, res.to_dict()["findings"]
    layout = res.data["layout"]
    assert {g["level"] for g in layout["groups"]["tp"]} == {"nvlink"}
    assert {g["level"] for g in layout["groups"]["pp"]} == {"leaf"}
    assert layout["ranks"][8]["node"] == "node02" and layout["ranks"][8]["pp"] == 1


async def test_tp_forced_across_two_nodes_is_crit(ctx, jobs):
    job_id = start(jobs, nodes=2, gres="gpu:h100:4")
    job = await wait_state(ctx, job_id, "RUNNING")
    res = await check(ctx, "--job", job_id, "--tp", "8")
    rules = {f.rule: f for f in res.findings}
    assert res.severity == Severity.CRIT and res.exit_code == 2
    assert "tp-within-nvlink" in rules and "tp-fits-node" in rules
    # the evidence names the real nodes and GPU indexes Slurm gave the job
    first, second = job.nodes
    assert first in rules["tp-within-nvlink"].evidence[0] and second in rules["tp-within-nvlink"].evidence[0]


async def test_pipeline_across_leaves_warns_with_a_one_leaf_fix(ctx, jobs):
    job_id = start(jobs, nodelist="node[02-03]", nodes=2, gres="gpu:h100:8")
    await wait_state(ctx, job_id, "RUNNING")
    res = await check(ctx, "--job", job_id, "--tp", "8", "--pp", "2")
    rules = {f.rule: f for f in res.findings}
    assert res.severity == Severity.WARN
    pp = rules["pp-neighbours-leaf"]
    assert pp.evidence[0] == "rank 0 (node02, leaf1) -> rank 8 (node03, leaf2)"
    assert "sbatch --switches=1" in pp.fix
    preview_leaves = {n["leaf"] for n in res.data["preview"]["nodes"]}
    assert len(preview_leaves) == 1  # the fix puts both stages under one leaf
    assert res.data["preview"]["pp_cross_leaf_pairs"] == []


async def test_pending_job_is_validated_on_its_request(ctx, jobs):
    job_id = start(jobs, nodes=2, gres="gpu:h100:8", begin="now+1hour")
    await wait_state(ctx, job_id, "PENDING")
    res = await check(ctx, "--job", job_id, "--tp", "16")
    rules = {f.rule for f in res.findings}
    assert res.data["planned"] is True
    assert "tp-fits-node" in rules and res.severity == Severity.CRIT
    ok = await check(ctx, "--job", job_id, "--tp", "8")
    # 2 nodes fit under leaf1 or leaf2; every verdict also says where its NVLink domains came from.
    assert {f.rule for f in ok.findings} == {"one-switch", "nvlink-domains"}
