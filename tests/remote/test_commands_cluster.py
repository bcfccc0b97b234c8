"""``cockpit exec`` and ``cockpit gpus`` as a user runs them, against the test cluster's sshd."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.ssh]
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "nvidia-smi"


def _cockpit(tmp_path, cluster_env, *args, extra_ssh: str = ""):
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f'[ssh]\nconfig_file = "{cluster_env["COCKPIT_TEST_SSH_CONFIG"]}"\nconnect_timeout = 3.0\n{extra_ssh}')
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "xdg"), SLURM_CONF=cluster_env["SLURM_CONF"])
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(cfg), "--backend", "slurm-cli", *args],
                          capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def test_exec_folds_identical_output_and_reports_bad_nodes(cluster_env, tmp_path):
    nodes = cluster_env["COCKPIT_TEST_NODES"].split()
    proc = _cockpit(tmp_path, cluster_env, "exec", f"node[01-0{len(nodes)}],nosuchnode", "--", "uname", "-s")
    assert proc.returncode == 1
    assert f"node[01-0{len(nodes)}] ({len(nodes)})\n---------------\nLinux\n" in proc.stdout
    assert "nosuchnode: error: ssh nosuchnode:" in proc.stdout
    assert "1 of 5 nodes failed: nosuchnode" in proc.stderr


def test_exec_json_keeps_arguments_verbatim(cluster_env, tmp_path):
    proc = _cockpit(tmp_path, cluster_env, "exec", "node01", "--json", "--", "printf", "%s|", "$(id)", "a b")
    assert proc.returncode == 0, proc.stderr
    (res,) = json.loads(proc.stdout)
    assert (res["host"], res["returncode"], res["stdout"], res["error"]) == ("node01", 0, "$(id)|a b|", None)


def test_gpus_json_reads_the_standin_on_the_nodes(cluster_env, tmp_path):
    d = tmp_path / "standin-bin"
    d.mkdir()
    shutil.copy(DATA / "standin" / "nvidia-smi", d / "nvidia-smi")
    (d / "capture").symlink_to(DATA / "query-gpu-h100-load.csv")
    proc = _cockpit(tmp_path, cluster_env, "gpus", "--nodes", "node[01-02]", "--json",
                    extra_ssh=f'remote_path_prepend = "{d}"\n')
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    got = {(g["node"], g["index"]): g for g in out["gpus"] if g["telemetry"]}
    assert set(got) >= {("node01", 0), ("node02", 0)}
    t = got[("node01", 0)]["telemetry"]
    assert (t["util_gpu"], t["mem_used_mib"], t["power_w"], t["name"]) == (100.0, 19818.0, 631.95, "NVIDIA H100 80GB HBM3")
    assert out["errors"] == {}
