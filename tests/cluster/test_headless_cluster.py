"""Headless commands against the real test cluster: doctor, record/replay, and
the controller going away (one line, non-zero) and coming back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def cockpit(cluster, *args, timeout=60):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME="/nonexistent-cockpit-test")
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def test_doctor_reports_version_backend_and_controller(cluster):
    proc = cockpit(cluster, "doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["slurm_version"] == cluster["COCKPIT_TEST_SLURM_VERSION"]
    # auto: pyslurm where tests/run installed one that matches, else slurm-cli; the reason says which
    assert info["backend"] in ("pyslurm", "slurm-cli") and "pyslurm" in info["backend_reason"]
    assert info["controller"].startswith("answering (")


def test_record_then_replay_gives_the_same_snapshot(cluster, tmp_path):
    rec = tmp_path / "rec"
    proc = cockpit(cluster, "record", str(rec))
    assert proc.returncode == 0, proc.stderr
    files = {p.name for p in rec.iterdir()}
    assert {"version.txt", "squeue.json", "topology.txt", "sdiag.txt"} <= files
    assert "sinfo.json" in files or "scontrol-nodes.json" in files
    live = json.loads(cockpit(cluster, "--replay", str(rec), "snapshot", "--format", "json").stdout)
    assert {n["name"] for n in live["nodes"]} == set(cluster["COCKPIT_TEST_NODES"].split())
    assert live["slurm_version"] == cluster["COCKPIT_TEST_SLURM_VERSION"]
    assert live["source"].startswith("replay of ")


def _ctld_pid(cluster) -> int:
    return int(Path(cluster["COCKPIT_TEST_CLUSTER_RUN"], "pids", "head.slurmctld.pid").read_text().split()[0])


def test_controller_down_is_one_line_then_recovers(cluster):
    pid = _ctld_pid(cluster)
    os.kill(pid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + 120  # an event, not a time: slurmctld has exited (slow when loaded)
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{pid}").exists(), "slurmctld did not exit within 120 s of SIGTERM"
        proc = cockpit(cluster, "snapshot", timeout=120)
        assert proc.returncode == 3, (proc.returncode, proc.stderr)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "Traceback" not in proc.stderr
        assert "cannot read the cluster" in lines[0] and "controller" in lines[0]
    finally:
        subprocess.run([str(ROOT / "tests" / "cluster" / "up")], check=True, capture_output=True, timeout=180)
    proc = cockpit(cluster, "snapshot", "--format", "json")
    assert proc.returncode == 0, proc.stderr


# --- cockpit check scheduler (read-only: sdiag and squeue), and 25.11+ /metrics/scheduler

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
