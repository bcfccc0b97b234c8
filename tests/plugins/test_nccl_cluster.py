"""The torch engine (gloo on CPUs) as real Slurm jobs on the test cluster, and pair
bisection finding a node that this test slows from outside (SIGSTOP/SIGCONT duty
cycle on that node's benchmark processes: what a straggler looks like to its peers)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cockpit.plugins.api import CheckContext, Severity
from cockpit_nccl import plugin

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
ENV_SH = Path("/run/cockpit-cluster/env.sh")


@pytest.fixture(scope="module")
def slurm_env():
    """The test cluster's environment; skips with the reason when it is not up."""
    pytest.importorskip("torch", reason="torch not installed: pip install -e '.[test-torch]'")
    if not ENV_SH.exists():
        pytest.skip("test cluster not up: run tests/cluster/up")
    env = {}
    for line in ENV_SH.read_text().splitlines():
        if line.startswith("export ") and "=" in line:
            k, _, v = line[7:].partition("=")
            env[k] = v.strip('"')
    try:
        ok = subprocess.run(["sinfo", "-h"], env={**os.environ, **env}, capture_output=True,
                            timeout=15).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        pytest.skip("test cluster not answering (sinfo failed): run tests/cluster/up")
    return env


def run_check(slurm_env, tmp_path, argv, **cfg):
    os.environ.update(slurm_env)
    check = plugin.checks[0]
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    config = {"engine": "torch", "torch_backend": "gloo", "torch_python": sys.executable,
              "torch_tasks_per_node": 1, "gpus_per_node": 0, "exclusive": False,
              "torch_min_bytes": "256K", "torch_max_bytes": "2M", "iters": 5, "warmup": 1,
              "poll_interval": 0.5, "job_timeout": 240.0, "time_limit": "00:05:00",
              "output_dir": str(tmp_path / "out"), "history_file": str(tmp_path / "h.jsonl"), **cfg}
    ctx = CheckContext(backend=None, config=config)
    return asyncio.run(check.run(ctx, parser.parse_args(argv)))


@pytest.mark.parametrize("hostlist,n", [("node[01-02]", 2), ("node[01-04]", 4)])
def test_torch_gloo_across_nodes(slurm_env, tmp_path, hostlist, n):
    res = run_check(slurm_env, tmp_path, ["--nodes", hostlist, "--mode", "all"])
    run = res.data["runs"][0]
    assert run["job_state"] == "COMPLETED", res.summary
    assert run["nranks"] == n and len(run["hosts"]) == n
    assert run["engine"] == "torch" and run["launch_problem"] is False
    assert run["busbw_gbps"] > 0 and all(r[1] > 0 and r[2] > 0 and r[3] == 0 for r in run["rows"])
    # No expected figure and no history yet: measured but not judged.
    assert res.severity == Severity.UNKNOWN
    assert (tmp_path / "h.jsonl").read_text().count('"busbw"') == 1


def _bench_pids(node: str) -> list[int]:
    """This test's benchmark processes running as tasks on ``node``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if (b"torch_bench.py" in cmd and f"SLURMD_NODENAME={node}".encode() in environ
                and any(e.startswith(b"SLURM_JOB_NAME=cockpit-nccl-pair") for e in environ)):
            pids.append(int(proc.name))
    return pids


def _duty_cycle(node: str, stop: threading.Event, off=0.08, on=0.02):
    while not stop.is_set():
        pids = _bench_pids(node)
        for sig, pause in ((signal.SIGSTOP, off), (signal.SIGCONT, on)):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            time.sleep(pause)


def test_pair_bisection_names_the_slowed_node(slurm_env, tmp_path):
    stop = threading.Event()
    slower = threading.Thread(target=_duty_cycle, args=("node03", stop), daemon=True)
    slower.start()
    try:
        res = run_check(slurm_env, tmp_path, ["--nodes", "node[01-04]", "--mode", "pair"],
                        max_parallel_jobs=1, torch_max_bytes="4M")
    finally:
        stop.set()
        slower.join()
        for pid in _bench_pids("node03"):  # never leave a task stopped
            os.kill(pid, signal.SIGCONT)
    suspect = res.data["suspect"]
    assert suspect["nodes"] == ["node03"], (res.summary, suspect["evidence"])
    assert not suspect["ambiguous"] and res.severity == Severity.CRIT
    assert any("node03" in e and "slow in" in e for e in suspect["evidence"])
