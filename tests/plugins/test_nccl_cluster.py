"""The torch engine (gloo on CPUs) as real Slurm jobs on the test cluster, and pair
bisection finding a node that this test slows from outside the benchmark.

The slowdown is a slow link, what a bad NIC or cable looks like to the node's peers:
tests/cluster/slowlink rate-limits, with tc on loopback, everything to and from
node03's address and everything node03's processes send (its slurmd and so every
job task it starts). The rate, not this machine's CPU load, sets node03's speed.
Nothing inside cockpit knows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import pytest

from clusterlib import slow_class_bytes, slow_node, slowlink_status
from cockpit.hostlist import expand
from cockpit.plugins.api import Severity
from cockpit.runner import LocalRunner
from pluginctx import make_ctx
from cockpit_nccl import plugin

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def torch_cluster(cluster):
    """The cluster env with torch importable here (the jobs run this venv's python)."""
    pytest.importorskip("torch", reason="torch not installed: pip install -e '.[test-torch]'")
    return cluster


def run_check(cluster, tmp_path, argv, **cfg):
    os.environ.update(cluster)  # the backend's LocalRunner runs sbatch/squeue with SLURM_CONF
    check = plugin.checks[0]
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    # Small sizes and few iterations: the whole cluster shares this machine's 2 cores.
    config = {"engine": "torch", "torch_backend": "gloo", "torch_python": sys.executable,
              "torch_tasks_per_node": 1, "gpus_per_node": 0, "exclusive": False,
              "torch_min_bytes": "256K", "torch_max_bytes": "2M", "iters": 5, "warmup": 1,
              "poll_interval": 0.5, "job_timeout": 240.0, "time_limit": "00:05:00",
              "output_dir": str(tmp_path / "out"), "history_file": str(tmp_path / "h.jsonl"), **cfg}
    from cockpit.core.audit import AuditLog

    ctx = make_ctx(runner=LocalRunner(), config=config, audit=AuditLog(tmp_path / "audit.jsonl"))
    return asyncio.run(check.run(ctx, parser.parse_args(argv)))


@pytest.mark.parametrize("hostlist,n", [("node[01-02]", 2), ("node[01-04]", 4)])
def test_torch_gloo_across_nodes(torch_cluster, tmp_path, hostlist, n):
    res = run_check(torch_cluster, tmp_path, ["--nodes", hostlist, "--mode", "all"])
    run_ = res.data["runs"][0]
    assert run_["job_state"] == "COMPLETED", res.summary
    assert run_["nranks"] == n and sorted(run_["hosts"]) == [f"node{i:02d}" for i in range(1, n + 1)]
    assert run_["engine"] == "torch" and run_["launch_problem"] is False
    # 256K..2M doubling: four sizes, each with positive busbw both ways and nothing wrong.
    assert [r[0] for r in run_["rows"]] == [256 << 10, 512 << 10, 1 << 20, 2 << 20]
    assert all(r[1] > 0 and r[2] > 0 and r[3] == 0 for r in run_["rows"])
    # Loopback TCP on one machine: well above nothing, far below memory bandwidth.
    assert 0.01 < run_["busbw_gbps"] < 100
    assert run_["size_bytes"] in (512 << 10, 1 << 20, 2 << 20)  # judged among the largest sizes
    # No expected figure and no history yet: measured but not judged.
    assert res.severity == Severity.UNKNOWN
    assert (tmp_path / "h.jsonl").read_text().count('"busbw"') == 1


# 80mbit = 10 MB/s through node03's link. A 2-rank all_reduce sends about its size each way
# per call, so node03's pairs measure ~0.01 GB/s busbw (less when both directions share the
# class), whatever the load. Healthy pairs here measure 0.3-1 GB/s idle, and stay above
# ~0.05 GB/s with both cores busy: 5x or more above the slow pairs, far outside the 0.70
# rule. The slowed traffic per node03 job is ~100-170 MB: 10-20 s at this rate.
SLOW_RATE, SLOW_GBPS = "80mbit", 0.01


def test_pair_bisection_names_the_slowed_node(torch_cluster, tmp_path):
    # No pair_slow_ratio here: the plugin's default rule (0.70 x the median of the other
    # pairs) must name node03. Disjoint pairs run at the same time (the plugin's default).
    with slow_node(torch_cluster, "node03", SLOW_RATE):
        res = run_check(torch_cluster, tmp_path, ["--nodes", "node[01-04]", "--mode", "pair"],
                        warmup=3, iters=10, job_timeout=600.0, torch_min_bytes="512K")
        shaped = slow_class_bytes()
        link = slowlink_status()
    assert slowlink_status().startswith("off")  # removed (slow_link's finally)
    runs = res.data["runs"]
    suspect = res.data["suspect"]
    why = "\n".join([res.summary, *suspect["evidence"], link,
                     *(f"{r['nodes']} job {r['job_id']}: {r['busbw_gbps']} {r['rows']}" for r in runs)])
    print(why)  # the figures, for the log (pytest -rP)
    assert all(r["job_state"] == "COMPLETED" and r["nranks"] == 2 for r in runs), why
    # Round 1: 01+02 and 03+04; round 2: 03 and 04 each beside a node cleared in round 1.
    assert len({r["nodes"] for r in runs}) == 4, why
    # The slow link really carried node03's pairs, and only those were slow.
    assert shaped > 50 << 20, why
    slowed = [r for r in runs if "node03" in expand(r["nodes"])]
    assert len(slowed) == 2 and all(r["busbw_gbps"] <= 2 * SLOW_GBPS for r in slowed), why
    assert all(r["busbw_gbps"] > 3 * SLOW_GBPS for r in runs if r not in slowed), why
    assert suspect["nodes"] == ["node03"], why
    assert not suspect["ambiguous"] and res.severity == Severity.CRIT, why
    assert any(e.startswith("node03: slow in 2 of 2") for e in suspect["evidence"]), why
