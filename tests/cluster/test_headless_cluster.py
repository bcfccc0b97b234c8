"""Headless commands against the real test cluster: doctor, record/replay, and
the controller going away (one line, non-zero) and coming back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clusterlib import cancel, run, submit, wait_for

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


@pytest.fixture
def metrics_url(cluster) -> str:
    """slurmctld's /metrics base URL: tests/cluster/up sets MetricsType=metrics/openmetrics from 25.11 on.
    Run them in the 26.05 chroot: COCKPIT_OTHER_RELEASE=sid tests/cluster/other-debian --python --
    pytest tests/cluster/test_headless_cluster.py -k metrics"""
    if _version(cluster) < (25, 11):
        pytest.skip(f"Slurm {cluster['COCKPIT_TEST_SLURM_VERSION']} has no /metrics (25.11+); run in the 26.05 chroot")
    url = cluster.get("COCKPIT_TEST_METRICS_URL", "")
    # up writes it for every 25.11+ cluster: its absence is a broken setup, not a reason to skip
    assert url.startswith("http://127."), f"env.sh of a {cluster['COCKPIT_TEST_SLURM_VERSION']} cluster: {url!r}"
    return url


def _sdiag_json() -> dict:
    """sdiag --json's statistics, read here with json alone (not cockpit's reader), to compare with."""
    return json.loads(run(["sdiag", "--json"]).stdout)["statistics"]


def _n(v) -> int:
    return v["number"] if isinstance(v, dict) else int(v)


def _bf_cycles() -> int:
    return _n(_sdiag_json()["bf_cycle_counter"])


def test_check_scheduler_judges_the_live_metrics_as_sdiag_reads_them(cluster, metrics_url):
    # something to schedule: one job runs, one waits behind it for all four nodes (Resources)
    ids = [submit("sleep 300", job_name="metrics-run", nodes=1),
           submit("sleep 30", job_name="metrics-wait", nodes=4, exclusive=True)]
    try:
        wait_for(lambda: run(["squeue", "-h", "-j", ids[0], "-o", "%T"]).stdout.strip() == "RUNNING", timeout=90)
        # backfill runs every bf_interval (30 s) while a job is pending: wait for its first cycle
        wait_for(lambda: _bf_cycles() > 0, timeout=120)
        before = _sdiag_json()
        proc = cockpit(cluster, "check", "scheduler", "--metrics-url", f"{metrics_url}/scheduler", "--json")
        after = _sdiag_json()
    finally:
        for j in ids:
            cancel(j)
    doc = json.loads(proc.stdout)
    assert proc.returncode == doc["exit_code"] and doc["status"] in ("OK", "WARN", "CRIT"), proc.stderr
    assert doc["data"]["source"] == "/metrics" and doc["data"]["origin"] == "live"
    judged = {f["rule"] for f in doc["findings"] if f["severity"] in ("OK", "WARN", "CRIT")}
    assert {"sched.threads", "sched.agent-queue", "sched.dbd-queue", "sched.bf-cycle", "sched.bf-age"} <= judged
    st = doc["data"]["stats"]
    # the figures lie between two sdiag reads taken just before and just after
    pairs = {"taken_at": "req_time", "agent_queue": "agent_queue_size", "dbd_queue": "dbd_agent_queue_size",
             "jobs_pending": "jobs_pending", "jobs_running": "jobs_running", "bf_cycles": "bf_cycle_counter",
             "bf_last_when": "bf_when_last_cycle", "sched_cycle_max_us": "schedule_cycle_max"}
    for ours, theirs in pairs.items():
        lo, hi = sorted((_n(before[theirs]), _n(after[theirs])))
        assert lo <= st[ours] <= hi, (ours, st[ours], lo, hi)
    assert st["jobs_running"] >= 1 and st["bf_cycles"] >= 1
    # sdiag's own request occupies a server thread (1 in both reads); the HTTP GET was recorded as 0
    assert 0 <= st["server_threads"] <= max(_n(before["server_thread_count"]), _n(after["server_thread_count"]))


@pytest.mark.parametrize("path", ["", "/jobs"])
def test_check_scheduler_refuses_another_metrics_endpoint_in_one_line(cluster, metrics_url, path):
    proc = cockpit(cluster, "check", "scheduler", "--metrics-url", metrics_url + path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 3 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "/metrics/scheduler" in lines[0] and "OK" not in proc.stdout
