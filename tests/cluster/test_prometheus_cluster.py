"""``cockpit --prometheus URL gpus --json`` and ``cockpit job`` against the real Slurm
test cluster and a real Prometheus (Debian's) scraping the dcgm-exporter stand-in,
which replays recorded dcgm-exporter outputs relabelled to node01..node04
(tests/promlib.py, tests/data/dcgm/SOURCES.md). Run under /tmp/cockpit-heavy.lock.

On either test-cluster profile: the jobs ask ``gpu_gres`` (typed h100 on the default
profile, untyped on the site profile, where node02 has 4 a100 and MIG slices) and the
GPU counts follow ``gpus_of``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import promlib
from clusterlib import cancel, gpu_gres, gpus_of, run, submit, wait_for

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed")]
ROOT = Path(__file__).resolve().parents[2]
NODES = list(promlib.RECORDINGS)


def cockpit(cluster, *args, timeout=90):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME="/nonexistent-cockpit-test")
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


@pytest.fixture()
def prom(tmp_path):
    standin = promlib.StandIn({n: promlib.relabelled(f, n) for n, f in promlib.RECORDINGS.items()})
    p = promlib.Prometheus(promlib.scrape_config(standin, NODES), tmp_path / "prom")
    try:
        p.wait_ready()
        p.wait_series('count by (Hostname, instance) ({__name__=~"DCGM_.+"})', len(NODES))
        yield p
    finally:
        p.stop()
        standin.stop()


def _state(job_id: str) -> str:
    return run(["squeue", "-h", "-j", job_id, "-o", "%T"], check=False).stdout.strip()


def test_gpus_json_joins_prometheus_to_a_running_job_then_prometheus_stops(cluster, prom):
    job = submit("sleep 300", gres=gpu_gres(2), nodelist="node01", job_name="prom-idle")
    try:
        wait_for(lambda: _state(job) == "RUNNING", timeout=60)
        proc = cockpit(cluster, "--prometheus", prom.url, "gpus", "--json", "--nodes", "node[01-02]")
        out = json.loads(proc.stdout)
        rows = {(r["node"], r["index"]): r for r in out["gpus"]}
        held = [r for r in rows.values() if r["job_id"] == int(job)]
        assert len(held) == 2 and all(r["node"] == "node01" for r in held)
        assert all(r["source"] == "prometheus" for r in rows.values())
        assert all(r["telemetry"]["util_gpu"] == 0.0 for r in held)  # the recorded idle H100s
        assert rows[("node02", 0)]["telemetry"]["util_gpu"] == 1.0  # the RTX 6000 recording's own value
        assert rows[("node01", 0)]["telemetry"]["power_w"] == pytest.approx(113.611)
        # node02 has 8 GPUs in Slurm (4 on the site profile), one in its recording: the
        # others have no reading, not 0 %
        last = gpus_of("node02") - 1
        assert last >= 1 and rows[("node02", last)]["telemetry"] is None
        assert proc.returncode == 0, proc.stderr

        prom.stop()
        down = cockpit(cluster, "--prometheus", prom.url, "gpus", "--json", "--nodes", "node01")
        assert down.returncode == 3, down.stderr
        assert down.stdout == "" and len(down.stderr.strip().splitlines()) == 1
        assert "unreachable" in down.stderr and prom.url.split("//")[1] in down.stderr
    finally:
        cancel(job)


def test_finished_job_efficiency_reads_its_gpus_over_the_run(cluster, prom):
    job = submit("sleep 4", gres=gpu_gres(2), nodelist="node02", job_name="prom-eff")
    wait_for(lambda: _state(job) == "", timeout=90)

    def recorded():
        proc = cockpit(cluster, "--prometheus", prom.url, "job", "show", job, "--json")
        return proc if proc.returncode == 0 and json.loads(proc.stdout)["job"]["state"] == "COMPLETED" else None

    proc = wait_for(recorded, timeout=60, interval=1.0)  # until sacct has the end record
    gpu = json.loads(proc.stdout)["efficiency"]["gpu"]
    assert gpu["percent"] == 1.0  # node02's recorded GPU at 1 % all through the run
    assert "Prometheus" in gpu["source"] and "query_range" in gpu["source"]
    assert "every GPU of the job's nodes" in gpu["source"]


def test_running_job_gpu_use_now_is_aggregated_over_its_gpus(cluster, prom):
    # node02's recording (an RTX 6000 at 1 %) has GPU 0 only: of the job's 8 GPUs (every GPU
    # device of node02: 8 h100, or on the site profile 4 a100 and 4 MIG slices), 1 reports
    job = submit("sleep 300", gres=gpu_gres(8), nodelist="node02", job_name="prom-now")
    try:
        wait_for(lambda: _state(job) == "RUNNING", timeout=60)

        def shown():
            proc = cockpit(cluster, "--prometheus", prom.url, "job", "show", job, "--json")
            return proc if proc.stdout and json.loads(proc.stdout)["job"]["state"] == "RUNNING" else None

        proc = wait_for(shown, timeout=60, interval=1.0)  # until slurmdbd has its start record
        use = json.loads(proc.stdout)["gpu_use_now"]
        assert proc.returncode == 0, proc.stderr
        assert use["util_avg"] == 1.0 and use["util_min"] == 1.0 and use["gpus"] == 1  # never 0 % for the silent
        assert "Prometheus" in use["source"]
        text = cockpit(cluster, "--prometheus", prom.url, "job", "show", job)
        assert "GPU use now: 1% on average, lowest 1%, 1 GPU(s) reporting" in text.stdout

        prom.stop()
        down = cockpit(cluster, "--prometheus", prom.url, "job", "show", job, "--json")
        assert down.returncode == 1 and json.loads(down.stdout)["gpu_use_now"] is None
        assert "GPU use now unknown" in down.stderr and "unreachable" in down.stderr
    finally:
        cancel(job)
