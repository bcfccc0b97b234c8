"""SSH against the real test cluster's sshd (one per node, plus head).

Shared cluster: every test restores what it changes (SIGCONT a frozen sshd,
`tests/cluster/up` restarts a stopped one, scancel its jobs).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterlib import proc_state
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.remote.fanout import fanout
from cockpit.remote.pool import SshPool
from cockpit.remote.runner import SshRunner
from cockpit.remote.settings import SshSettings
from cockpit.telemetry.collect import TelemetryCollector
from cockpit.telemetry.join import LowUtilTracker, gpu_owners, join

pytestmark = [pytest.mark.cluster, pytest.mark.ssh]
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "nvidia-smi"


def _nodes(env) -> list[str]:
    return env["COCKPIT_TEST_NODES"].split()


def _sshd_pid(env, host: str) -> int:
    return int(Path(env["COCKPIT_TEST_CLUSTER_RUN"], "pids", f"{host}.sshd.pid").read_text().split()[0])


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _cluster_up(env) -> None:
    subprocess.run([str(ROOT / "tests" / "cluster" / "up")], check=True, capture_output=True, timeout=300)


async def test_fanout_reaches_every_node_by_name(cluster_env, cluster_settings):
    hosts = ["head", *_nodes(cluster_env)]
    pool = SshPool(cluster_settings)
    try:
        res = await fanout(pool, hosts, ["hostname"])
    finally:
        await pool.close()
    # each sshd runs in its host's UTS namespace, so hostname proves which host answered
    assert {h: r.stdout.decode().strip() for h, r in res.items()} == {h: h for h in hosts}


async def test_stopped_and_frozen_sshd_are_errors_within_timeouts(cluster_env, cluster_settings):
    nodes = _nodes(cluster_env)
    dead, frozen = nodes[-2], nodes[-1]
    frozen_pids = [_sshd_pid(cluster_env, frozen)]
    frozen_pids += _children(frozen_pids[0])  # sessions that already exist freeze too
    os.kill(_sshd_pid(cluster_env, dead), signal.SIGTERM)
    pool = SshPool(cluster_settings)
    try:
        for pid in frozen_pids:
            os.kill(pid, signal.SIGSTOP)
        res = await fanout(pool, nodes, ["hostname"])
        # Bounded by cockpit's own timeouts, not by the node: its sshd is still stopped
        # (counted, not timed, so a loaded machine cannot fail it).
        still_frozen = proc_state(frozen_pids[0]) == "T"
    finally:
        for pid in frozen_pids:
            os.kill(pid, signal.SIGCONT)
        await pool.close()
        _cluster_up(cluster_env)
    assert still_frozen
    assert res[dead].error and "refused" in res[dead].error
    assert res[frozen].error and "no answer within" in res[frozen].error
    for n in nodes[:-2]:
        assert res[n].ok and res[n].stdout.decode().strip() == n
    # and the restored node answers again
    pool = SshPool(cluster_settings)
    try:
        again = await fanout(pool, [dead, frozen], ["hostname"])
    finally:
        await pool.close()
    assert all(r.ok for r in again.values()), again


async def test_unknown_host_key_of_a_node_is_refused(cluster_env, cluster_settings, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    settings = SshSettings(**{**cluster_settings.__dict__, "known_hosts": str(empty)})
    runner = SshRunner("node01", SshPool(settings))
    with pytest.raises(Exception) as exc:
        try:
            await runner.run(["true"])
        finally:
            await runner.close()
    assert "host key unknown or changed, refused" in str(exc.value)
    port, net = cluster_env["COCKPIT_TEST_SSH_PORT"], cluster_env["COCKPIT_TEST_NODE_NET"]
    assert f"ssh-keyscan -p {port} {net}.1" in str(exc.value)


def _standin(tmp_path: Path, per_host: dict[str, str], default: str) -> Path:
    d = tmp_path / "standin-bin"
    d.mkdir()
    shutil.copy(DATA / "standin" / "nvidia-smi", d / "nvidia-smi")
    (d / "capture").symlink_to(DATA / f"query-gpu-h100-{default}.csv")
    for host, which in per_host.items():
        (d / f"capture.{host}").symlink_to(DATA / f"query-gpu-h100-{which}.csv")
    return d


async def _wait_running(backend, job_id: int, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snap = await backend.snapshot()
        job = snap.job(job_id)
        if job is not None and job.state == "RUNNING" and job.gpus:
            return snap
        await asyncio.sleep(0.5)
    raise AssertionError(f"job {job_id} did not start with GPUs in {timeout} s")


async def test_gpu_telemetry_from_standin_joins_real_slurm_jobs(cluster_env, cluster_settings, tmp_path):
    standin = _standin(tmp_path, {"node01": "idle", "node02": "load"}, "idle")
    settings = SshSettings(**{**cluster_settings.__dict__, "remote_path_prepend": str(standin)})
    head = SshRunner("head", SshPool(cluster_settings))
    backend = SlurmCliBackend(head, timeout=20)
    sub = await head.run(["sbatch", "--parsable", "--job-name=cockpit-ssh-telemetry-test", "-w", "node01",
                          "--gres=gpu:h100:1", "-p", "gpu", "--wrap", "sleep 120"])
    assert sub.ok, sub.err_text()
    job_id = int(sub.text().strip().split(";")[0])
    collector = TelemetryCollector(settings)
    try:
        snap = await _wait_running(backend, job_id)
        (held,) = [k for k, j in gpu_owners(snap).items() if j.job_id == job_id]
        assert held[0] == "node01"
        tele = await collector.telemetry_for(["node01", "node02"])
        assert collector.errors == {}
        assert tele[("node01", 0)].util_gpu == 0.0 and tele[("node02", 0)].util_gpu == 100.0
        assert tele[("node02", 0)].power_w == 631.95  # the recorded load capture's value
        tracker = LowUtilTracker()
        owners = gpu_owners(snap)
        t0 = time.time()
        tracker.update(tele, owners, now=t0)
        tracker.update(await collector.telemetry_for(["node01", "node02"]), owners, now=t0 + 1200)
        rows = {(r.node, r.index): r for r in join(snap, tele, tracker)}
        if held == ("node01", 0):
            row = rows[held]
            assert row.job_id == job_id and row.user == "root" and row.telemetry.temp_gpu == 41.0
            assert row.describe(now=t0 + 1200) == f"job {job_id} (root) GPU 0: 0% util for 20 min"
        else:  # Slurm gave another index: the stand-in only recorded GPU 0
            assert rows[held].job_id == job_id and rows[held].telemetry is None
        assert rows[("node02", 0)].telemetry.util_gpu == 100.0
    finally:
        await head.run(["scancel", str(job_id)])
        await collector.close()
        await head.close()


def test_snapshot_through_host_head(cluster_env, tmp_path):
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f'[ssh]\nconfig_file = "{cluster_env["COCKPIT_TEST_SSH_CONFIG"]}"\n')
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    env.pop("COCKPIT_CONFIG", None)
    env.pop("SLURM_CONF", None)  # nothing local: everything must go over SSH
    proc = subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(cfg), "--host", "head",
                           "snapshot", "--format", "json"], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    import json

    snap = json.loads(proc.stdout)
    assert {n["name"] for n in snap["nodes"]} == set(_nodes(cluster_env))
    assert "ssh head" in snap["source"]
