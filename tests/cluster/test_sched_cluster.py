"""``cockpit check scheduler`` on the real test cluster (read-only: sdiag and squeue),
and Slurm 25.11+'s /metrics/scheduler where the controller serves it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def cockpit(cluster, *args, timeout=120):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME="/nonexistent-cockpit-test")
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def test_check_scheduler_judges_the_live_controller(cluster):
    proc = cockpit(cluster, "check", "scheduler", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == doc["exit_code"] and doc["status"] in ("OK", "WARN", "CRIT"), proc.stderr
    rules = {f["rule"] for f in doc["findings"]}
    assert {"sched.threads", "sched.agent-queue", "sched.dbd-queue"} <= rules
    assert doc["data"]["source"] == "sdiag" and doc["data"]["stats"]["server_threads"] >= 1


def _version(cluster) -> tuple[int, int]:
    major, minor = cluster["COCKPIT_TEST_SLURM_VERSION"].split(".")[:2]
    return int(major), int(minor)


def test_metrics_scheduler_of_a_25_11_controller(cluster):
    if _version(cluster) < (25, 11):
        pytest.skip(f"Slurm {cluster['COCKPIT_TEST_SLURM_VERSION']} has no /metrics (25.11+); run in the 26.05 chroot")
    url = f"http://{cluster['COCKPIT_TEST_HEAD_ADDR']}:{cluster['COCKPIT_TEST_CTLD_PORT']}/metrics/scheduler"
    assert cluster["COCKPIT_TEST_HEAD_ADDR"].startswith("127."), "loopback only"
    try:
        urllib.request.urlopen(url, timeout=10).close()
    except urllib.error.HTTPError as exc:
        pytest.skip(f"{url}: HTTP {exc.code}: the controller does not serve /metrics (MetricsType=metrics/openmetrics)")
    except OSError as exc:
        pytest.skip(f"{url}: {exc}")
    proc = cockpit(cluster, "check", "scheduler", "--metrics-url", url, "--json")
    doc = json.loads(proc.stdout)
    assert doc["data"]["source"] == "/metrics" and "sched.threads" in {f["rule"] for f in doc["findings"]}, proc.stderr
