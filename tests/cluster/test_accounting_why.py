"""Why a job is pending, on the real test cluster: held by the gpu8 QOS's GPU
limit (with its usage), and blocked by a maintenance reservation its time limit
crosses; then the same cluster seen as one without slurmdbd (scontrol show
config rewritten by a wrapper): every accounting view says so in one line and
job why still explains the rest. Also: the accounting daemons listen on
loopback only."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from clusterlib import gpu_gres, run, wait_for

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def acct(cluster):
    if cluster.get("COCKPIT_TEST_ACCOUNTING") != "1":
        pytest.skip("the test cluster runs without accounting (COCKPIT_CLUSTER_ACCOUNTING=0)")
    return cluster


def cockpit(tmp_path, *args, config: Path | None = None, timeout=120):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("COCKPIT_CONFIG", None)
    extra = ["--config", str(config)] if config else []
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *extra, "--backend", "slurm-cli", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def sbatch(name: str, *opts: str, script: str = "sleep 300") -> str:
    return run(["sbatch", "--parsable", "-J", name, "-o", "/dev/null", *opts, "--wrap", script]).stdout.strip().split(";")[0]


def reason_of(job: str) -> str:
    return run(["squeue", "-h", "-j", job, "-o", "%T|%r"], check=False).stdout.strip()


def wait_reason(job: str, prefix: str) -> str:
    def has():
        st = reason_of(job)
        return st if st.startswith(f"PENDING|{prefix}") else ""
    has.__name__ = f"job {job} pending on {prefix}"
    return wait_for(has, timeout=60, interval=0.5)


def why(tmp_path, job: str, *more: str) -> dict:
    proc = cockpit(tmp_path, "job", "why", job, "--json", *more)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_job_held_by_the_qos_gpu_limit_explains_it_with_usage(acct, tmp_path):
    qos, limit = acct["COCKPIT_TEST_QOS_GPU"], int(acct["COCKPIT_TEST_QOS_GPU_LIMIT"])
    tag = uuid.uuid4().hex[:6]
    hold = sbatch(f"cockpit-why-qos-run-{tag}", f"--qos={qos}", "-N1", f"--gres={gpu_gres(limit, acct)}")
    wait = None
    try:
        wait_for(lambda: reason_of(hold).startswith("RUNNING"), timeout=60)
        wait = sbatch(f"cockpit-why-qos-wait-{tag}", f"--qos={qos}", "-N1", f"--gres={gpu_gres(4, acct)}")
        wait_reason(wait, "QOSMaxGRESPerUser")
        doc = why(tmp_path, wait)
        text = cockpit(tmp_path, "job", "why", wait).stdout
    finally:
        run(["scancel", hold, *([wait] if wait else [])], check=False)
    assert doc["slurm_reason"] == "QOSMaxGRESPerUser"
    assert doc["summary"] == f"held back by a limit: QOS {qos}: MaxTRESPU gres/gpu={limit}, user root uses {limit}, this job asks 4"
    (lim,) = [x for x in doc["limits"] if x["blocks"]]
    assert (lim["scope"], lim["per"], lim["key"], lim["tres"]) == (f"QOS {qos}", "user root", "MaxTRESPU", "gres/gpu")
    assert (lim["limit"], lim["used"], lim["asks"]) == (limit, limit, 4)
    assert doc["priority"] is not None and doc["priority"]["factors"]["partition"] > 0
    assert doc["free_blocks"] and any(b["fits"] for b in doc["free_blocks"])  # GPUs are free: the limit holds it
    assert not any(c["command"].startswith("squeue --start") for c in doc["costs"])
    assert f"limit: QOS {qos}: MaxTRESPU gres/gpu={limit}, user root uses {limit}, this job asks 4 -> holds it back" in text


def test_a_time_limit_crossing_a_maintenance_reservation_says_so(acct, tmp_path):
    name = f"cockpit-why-maint-{uuid.uuid4().hex[:6]}"
    # node04 only, so other sessions' jobs keep the other nodes; IGNORE_JOBS: it may be busy.
    run(["scontrol", "create", f"ReservationName={name}", "StartTime=now+30minutes", "Duration=60",
         "Nodes=node04", "Flags=MAINT,IGNORE_JOBS", "Users=root"])
    job = None
    try:
        job = sbatch(f"{name}-job", "-w", "node04", "-t", "120", script="true")
        wait_reason(job, "ReqNodeNotAvail")
        doc = why(tmp_path, job, "--start")
    finally:
        if job:
            run(["scancel", job], check=False)
        run(["scontrol", "delete", f"ReservationName={name}"], check=False)
    (res,) = [r for r in doc["reservations"] if r["name"] == name]
    assert res["maintenance"] and res["all_nodes"] and res["covers"] == ["node04"]
    assert res["text"].startswith(f"its time limit (2 h) crosses maintenance reservation {name} (node04, from ")
    assert "with a time limit under" in res["text"]
    assert doc["summary"] == res["text"]
    assert any(c["command"].startswith("squeue --start") for c in doc["costs"])  # asked for: --start


@pytest.fixture
def no_dbd_config(tmp_path):
    """A slurm_bin_dir whose scontrol says accounting_storage/none in show config and is
    the real one otherwise; the other commands are the real ones."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for prog in ("squeue", "sinfo", "sprio", "sacct", "sacctmgr", "sshare"):
        (bindir / prog).symlink_to(shutil.which(prog))
    real = shutil.which("scontrol")
    (bindir / "scontrol").write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "show config" ]; then\n'
        f'  {real} "$@" | sed "s|accounting_storage/slurmdbd|accounting_storage/none|"\nelse exec {real} "$@"; fi\n')
    (bindir / "scontrol").chmod(0o755)
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[general]\nslurm_bin_dir = "{bindir}"\n')
    return cfg


def test_without_slurmdbd_each_view_says_so_in_one_line(acct, tmp_path, no_dbd_config):
    for argv in (["history"], ["node", "history", "node03"], ["report", "utilization", "--since", "1d"],
                 ["job", "show", "1"]):
        proc = cockpit(tmp_path, *argv, config=no_dbd_config)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 3 and proc.stdout == "", (argv, proc.stdout, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("cockpit: accounting is not configured on this cluster"), argv
    job = sbatch(f"cockpit-why-nodbd-{uuid.uuid4().hex[:6]}", "--hold", script="true")
    try:
        wait_reason(job, "JobHeld")
        proc = cockpit(tmp_path, "job", "why", job, config=no_dbd_config)
    finally:
        run(["scancel", job], check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"job {job}: held by its user: it starts only once released (cockpit job release {job})"
    assert sum("accounting is not configured" in ln for ln in proc.stdout.splitlines()) == 1
    snap = cockpit(tmp_path, "snapshot", "--format", "json", config=no_dbd_config)
    assert snap.returncode in (0, 1) and json.loads(snap.stdout)["nodes"]


def test_accounting_daemons_listen_on_loopback_only(acct):
    out = run(["ss", "-Hltnp"]).stdout
    lines = [ln for ln in out.splitlines() if '"slurmdbd"' in ln or '"mariadbd"' in ln]
    ports = {acct["COCKPIT_TEST_DBD_PORT"], acct["COCKPIT_TEST_DB_PORT"]}
    assert {ln.split()[3].rsplit(":", 1)[1] for ln in lines} >= ports, lines
    for ln in lines:
        assert ipaddress.ip_address(ln.split()[3].rsplit(":", 1)[0].strip("[]")).is_loopback, ln
