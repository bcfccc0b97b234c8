"""The pre-flight checks on the real Slurm test cluster.

* storage: a real Slurm job on two nodes measures real fio figures on a local and a
  "shared" path; then one node's scratch is throttled from outside (its slurmd, and so
  every task of its jobs, in a blkio cgroup limited on a loop device that both nodes use
  as scratch) and the check names that node. The throttle is removed in a finally.
* burnin: the torch matmul load (CPU torch here) runs on two nodes as a real job while
  nvidia-smi is the STAND-IN of tests/data/nvidia-smi-load, replaying a real recording
  per node; the node whose recording shows HW Slowdown is flagged, and drained through
  the gate with --drain --yes (resumed in a finally).
* fabric: each node's HCAs are read over SSH (the probes) from a real recorded
  /sys/class/infiniband tree laid out per node, judged against a 64-GPU job.
* the gate: without --yes the plan is printed and nothing is submitted; read-only mode
  refuses and audits; a job that cannot start is cancelled at the check's limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from clusterlib import cancel, node_slurmd_pid, parse_scontrol, require_profile, run, submit, wait_for
from cockpit.core.audit import AuditLog, read_audit
from cockpit.plugins.api import Severity
from cockpit.runner import LocalRunner
from cockpit_preflight import plugin
from pluginctx import make_ctx

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CHECKS = {c.name: c for c in plugin.checks}
LIMIT_BPS, LIMIT_IOPS = 5 << 20, 300  # the throttled node's scratch: 5 MiB/s, 300 IOPS


def small(tmp_path: Path, **extra) -> dict:
    # Small and short: the whole cluster shares this machine's 2 cores.
    return {"output_dir": str(tmp_path / "out"), "exclusive": False, "poll_interval": 0.5, "time_limit": "00:05:00",
            "job_timeout": 300.0, "storage_size": "16M", "storage_runtime": 2, "storage_numjobs": 1,
            "storage_iodepth": 4, "storage_meta_files": 200, **extra}


def check(cluster, tmp_path, name: str, argv: list[str], config: dict):
    os.environ.update(cluster)  # the backend's LocalRunner runs sbatch/squeue with SLURM_CONF
    parser = argparse.ArgumentParser()
    CHECKS[name].add_arguments(parser)
    ctx = make_ctx(runner=LocalRunner(), config=config, audit=AuditLog(tmp_path / "audit.jsonl"))
    return asyncio.run(CHECKS[name].run(ctx, parser.parse_args(argv)))


def need_fio():
    if not shutil.which("fio"):
        pytest.skip("fio is not installed (tests/run installs Debian's fio)")


# ---------------------------------------------------------------- storage


def test_storage_runs_fio_as_a_slurm_job_on_two_nodes(cluster, tmp_path):
    need_fio()
    (tmp_path / "scratch").mkdir()
    (tmp_path / "shared").mkdir()
    res = check(cluster, tmp_path, "storage", ["--nodes", "node[01-02]", "--local", str(tmp_path / "scratch"),
                                               "--shared", str(tmp_path / "shared"), "--params", "7B"], small(tmp_path))
    print(res.summary, json.dumps(res.data["nodes"], indent=1))  # the figures, for the log (pytest -rP)
    assert res.data["job_state"] == "COMPLETED" and sorted(res.data["nodes"]) == ["node01", "node02"]
    for node in ("node01", "node02"):
        nd = res.data["nodes"][node]
        assert nd["tool"] == "fio"
        local, shared = nd["paths"]["local"], nd["paths"]["shared"]
        assert local["fstype"] and shared["fstype"] and not local["problems"] and not shared["problems"]
        # real figures: well above nothing, below what this machine's memory could do
        for p in (local, shared):
            assert 1e6 < p["seqread_bytes_per_s"] < 1e11 and 1e6 < p["seqwrite_bytes_per_s"] < 1e11
        assert local["randread_iops"] > 10 and shared["meta_ops_per_s"]["create"] > 10
    assert res.data["checkpoint"]["local_seconds"] > 0 and res.data["checkpoint"]["shared_seconds"] > 0
    recs = read_audit(tmp_path / "audit.jsonl")
    assert [(r["action"], r["argv"][0], r["result"]) for r in recs] == [("submit", "mkdir", "done"),
                                                                         ("submit", "sbatch", "done")]
    assert "#SBATCH --nodelist=node[01-02]" in recs[1]["stdin"] and "--output-format=json" in recs[1]["stdin"]
    assert not list(tmp_path.glob("scratch/cockpit-preflight-*"))  # the job removed its files


def _cgroup_v1() -> Path | None:
    root = Path("/sys/fs/cgroup/blkio")
    return root if (root / "blkio.throttle.read_bps_device").exists() else None


@contextmanager
def loop_scratch(tmp_path: Path):
    """An ext4 loop device mounted at tmp_path/scratch; yields (mountpoint, "MAJ:MIN")."""
    img, mnt = tmp_path / "scratch.img", tmp_path / "scratch"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    dev = subprocess.run(["losetup", "--find", "--show", str(img)], capture_output=True, text=True, check=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True)
        try:
            yield mnt, Path(f"/sys/block/{Path(dev).name}/dev").read_text().strip()
        finally:
            subprocess.run(["umount", str(mnt)], check=False, capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
        img.unlink(missing_ok=True)


@contextmanager
def blkio_throttle(pid: int, device: str, name: str):
    """``pid`` (and every process it starts afterwards) in a blkio cgroup limited to
    LIMIT_BPS and LIMIT_IOPS on ``device``; everything in it goes back to the root
    cgroup and the cgroup is removed after the block, also when the block fails."""
    root = _cgroup_v1()
    cg = root / name
    cg.mkdir()
    try:
        for knob, value in (("read_bps_device", LIMIT_BPS), ("write_bps_device", LIMIT_BPS),
                            ("read_iops_device", LIMIT_IOPS), ("write_iops_device", LIMIT_IOPS)):
            (cg / f"blkio.throttle.{knob}").write_text(f"{device} {value}\n")
        (cg / "cgroup.procs").write_text(f"{pid}\n")
        yield cg
    finally:
        for _ in range(50):
            for p in (cg / "cgroup.procs").read_text().split():
                try:
                    (root / "cgroup.procs").write_text(f"{p}\n")
                except OSError:
                    pass  # it exited meanwhile
            try:
                cg.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def test_storage_names_the_node_whose_scratch_is_throttled(cluster, tmp_path):
    need_fio()
    if os.geteuid() != 0 or _cgroup_v1() is None or not (shutil.which("losetup") and shutil.which("mkfs.ext4")):
        pytest.skip("needs root, losetup, mkfs.ext4 and the cgroup v1 blkio throttle (/sys/fs/cgroup/blkio)")
    pid = node_slurmd_pid(cluster, "node04")
    with loop_scratch(tmp_path) as (mnt, device):
        with blkio_throttle(pid, device, f"cockpit-test-{os.getpid()}") as cg:
            res = check(cluster, tmp_path, "storage", ["--nodes", "node[02,04]", "--local", str(mnt)],
                        small(tmp_path, storage_default_local_read_gbps=0.02))
        assert not cg.exists()
    assert f"/{cg.name}" not in Path(f"/proc/{pid}/cgroup").read_text()  # slurmd is back where it was
    nodes = res.data["nodes"]
    print(res.summary, {n: nd["paths"]["local"] for n, nd in nodes.items()})
    slow, fast = nodes["node04"]["paths"]["local"], nodes["node02"]["paths"]["local"]
    # The limit holds (fio measured it) and the other node is not held by it.
    assert slow["seqread_bytes_per_s"] <= 1.2 * LIMIT_BPS and slow["seqwrite_bytes_per_s"] <= 1.2 * LIMIT_BPS
    assert fast["seqread_bytes_per_s"] > 10 * LIMIT_BPS and fast["seqwrite_bytes_per_s"] > 10 * LIMIT_BPS
    assert res.data["slow_nodes"] == ["node04"] and res.severity == Severity.CRIT
    assert {f.title.split()[0] for f in res.findings if f.rule == "storage-slow-node"} == {"node04"}
    assert any(f.title.startswith("node04: local sequential read") for f in res.findings
               if f.rule == "storage-expectation")


# ---------------------------------------------------------------- burnin


def test_burnin_runs_the_torch_load_and_flags_the_throttled_recording(cluster, tmp_path):
    pytest.importorskip("torch", reason="torch not installed: pip install -e '.[test-torch]'")
    smi = tmp_path / "smi"
    smi.mkdir()
    shutil.copy(DATA / "nvidia-smi-load" / "standin" / "nvidia-smi", smi / "nvidia-smi")
    shutil.copy(DATA / "nvidia-smi-load" / "q-h100-80gb-hbm3-under-gpu-burn-590.48.01.txt", smi / "capture.node02")
    shutil.copy(DATA / "nvidia-smi-load" / "q-excerpt-v100-sxm2-32gb-c4130-hw-power-brake-l4rz.txt",
                smi / "capture.node04")
    cfg = small(tmp_path, burnin_nvidia_smi=str(smi / "nvidia-smi"), burnin_python=sys.executable,
                burnin_engine="torch", burnin_interval=1.5, burnin_gpus_per_node=0)
    try:
        res = check(cluster, tmp_path, "burnin", ["--nodes", "node[02,04]", "--duration", "6", "--drain"], cfg)
        node = parse_scontrol(run(["scontrol", "show", "node", "node04"]).stdout)
    finally:
        run(["scontrol", "update", "NodeName=node04", "State=RESUME"], check=False)
    print(res.summary, [f.title for f in res.findings])
    assert res.data["job_state"] == "COMPLETED"
    for name in ("node02", "node04"):
        nd = res.data["nodes"][name]
        (final,) = nd["load"]
        assert final["device"] == "cpu" and final["tflops"] > 0 and final["seconds"] >= 5.9  # the load ran 6 s
        assert any(s["phase"] == "load" for s in nd["samples"])
    assert res.data["failing_nodes"] == ["node04"]
    assert not [f for f in res.findings if f.title.startswith("node02") and f.severity != Severity.OK]
    job = res.data["job_id"]
    reason = f"preflight-burnin throttled: gpu0 hw_power_brake_slowdown+hw_slowdown sm=382MHz job={job}"
    assert res.data["proposed_drains"][0]["params"]["reason"] == reason
    # --drain: through the gate, audited, read back by Slurm.
    assert "DRAIN" in node["State"] and node["Reason"].startswith("preflight-burnin throttled")
    drains = [r for r in read_audit(tmp_path / "audit.jsonl") if r["action"] == "drain"]
    assert [(r["targets"] if "targets" in r else [r["target"]], r["result"]) for r in drains] == [(["node04"], "done")]


# ---------------------------------------------------------------- fabric and the gate (headless)


def _config(tmp_path: Path, cluster, **preflight) -> Path:
    lines = ["[ssh]", f'config_file = "{cluster["COCKPIT_TEST_SSH_CONFIG"]}"',
             f'known_hosts = "{cluster["COCKPIT_TEST_SSH_KNOWN_HOSTS"]}"', "command_timeout = 60.0",
             "[plugins.preflight]"] + [f"{k} = {json.dumps(v)}" for k, v in {**small(tmp_path), **preflight}.items()]
    path = tmp_path / "cockpit.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def cockpit(cluster, tmp_path, *args, timeout: float = 240):
    env = dict(os.environ, **cluster, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(tmp_path / "cockpit.toml"),
                           "--backend", "slurm-cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def test_fabric_reads_recorded_trees_on_each_node_over_ssh(cluster, tmp_path):
    # The judged minimum follows the GPUs in the job's nodes: the figures below are 4 x 8 GPUs.
    require_profile("default", "the fabric figures below are for 4 nodes x 8 GPUs")
    trees = {"node01": "gpud-h100-8xndr", "node02": "gpud-h100-8xndr", "node03": "procfs-fixture-hfi1-mlx4-mlx5",
             "node04": "gpud-h100-8xndr"}
    for node, tree in trees.items():
        shutil.copytree(DATA / "ib-sysfs" / tree, tmp_path / "ib" / node / "infiniband")
    _config(tmp_path, cluster)
    root = f"{tmp_path}/ib/{{node}}/infiniband"
    proc = cockpit(cluster, tmp_path, "check", "fabric", "--partition", "gpu", "--gpus", "64", "--ib-root", root,
                   "--json")
    doc = json.loads(proc.stdout)
    print(doc["summary"], proc.stderr[-2000:])
    assert proc.returncode == 2 and doc["status"] == "CRIT"
    nodes = doc["data"]["nodes"]
    assert {n: (nd["source"], nd["link"], nd["rate_gbps"], nd["rails"]) for n, nd in nodes.items()} == {
        "node01": ("sysfs", "infiniband", 400.0, 8), "node02": ("sysfs", "infiniband", 400.0, 8),
        "node03": ("sysfs", "infiniband", 100.0, 1), "node04": ("sysfs", "infiniband", 400.0, 8)}
    assert all(nd["ethernet"] for nd in nodes.values())  # the node's own /sys/class/net, read over SSH
    by = {(f["rule"], f["title"].split(":")[0]): f for f in doc["findings"]}
    assert by[("fabric-slow-node", "node03")]["severity"] == "CRIT"
    assert by[("fabric-table", "node03")]["title"] == "node03: slowest link 100 Gb/s, below the 400 Gb/s minimum for 64 GPUs"
    assert by[("fabric-table", "node01")]["severity"] == "WARN"  # 400 meets the minimum, not the recommended 800
    assert "gpu: mixed link rates: 400 Gb/s (node01, node02, node04); 100 Gb/s (node03)" in {
        f["title"] for f in doc["findings"]}
    # The partition as it is (4 nodes x 8 GPUs = 32): the 8-32 band asks for 200 Gb/s.
    small32 = json.loads(cockpit(cluster, tmp_path, "check", "fabric", "--partition", "gpu", "--ib-root", root,
                                 "--json").stdout)
    assert small32["data"]["groups"]["gpu"]["gpus"] == 32 and small32["data"]["groups"]["gpu"]["need_gbps"] == [200, 200]
    assert not [f for f in small32["findings"] if f["rule"] == "fabric-table" and f["severity"] != "CRIT"]


def _preflight_jobs() -> list[str]:
    out = run(["squeue", "-h", "-t", "all", "-o", "%i %j"]).stdout
    return [ln.split()[0] for ln in out.splitlines() if "cockpit-storage" in ln or "cockpit-burnin" in ln]


def test_without_yes_the_plan_is_printed_and_read_only_refuses(cluster, tmp_path):
    _config(tmp_path, cluster)
    before = _preflight_jobs()
    proc = cockpit(cluster, tmp_path, "check", "storage", "--nodes", "node[01-02]", "--local", "/tmp")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "sbatch --parsable  < script on stdin" in proc.stdout and "#SBATCH --nodelist=node[01-02]" in proc.stdout
    assert "add --yes" in proc.stderr and _preflight_jobs() == before
    ro = cockpit(cluster, tmp_path, "--read-only", "check", "burnin", "--nodes", "node[01-02]", "--yes")
    assert ro.returncode == 3 and "read-only mode: refusing to submit node[01-02]" in ro.stderr
    assert _preflight_jobs() == before
    (rec,) = read_audit(tmp_path / "state" / "cockpit" / "audit.jsonl")
    assert (rec["action"], rec["result"], rec["targets"]) == ("submit", "refused", ["node[01-02]"])


def test_a_job_that_cannot_start_is_cancelled_at_the_limit(cluster, tmp_path):
    # node02 is held whole by another job: the storage job pends until the check's limit.
    blocker = submit("sleep 300", nodelist="node02", exclusive=True, job_name="blocker")
    try:
        wait_for(lambda: run(["squeue", "-h", "-j", blocker, "-o", "%T"]).stdout.strip() == "RUNNING", timeout=60)
        _config(tmp_path, cluster, exclusive=True, job_timeout=3.0)
        proc = cockpit(cluster, tmp_path, "check", "storage", "--nodes", "node02", "--local", "/tmp", "--yes")
    finally:
        cancel(blocker)
    assert proc.returncode == 3 and "cancelled" in proc.stderr, proc.stdout + proc.stderr
    recs = read_audit(tmp_path / "state" / "cockpit" / "audit.jsonl")
    assert [(r["action"], r["argv"][0], r["result"]) for r in recs] == [
        ("submit", "mkdir", "done"), ("submit", "sbatch", "done"), ("cancel", "scancel", "done")]
    assert "limit" in recs[2]["note"]
