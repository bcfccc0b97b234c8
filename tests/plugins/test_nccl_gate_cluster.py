"""`cockpit check nccl` on the real cluster passes the one gate: without --yes it prints
the planned sbatch and submits nothing; with --yes the submission and the cleanup
cancel are audited with Slurm's answers; in read-only mode it is refused and audited."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterlib import cancel, run, submit, wait_for
from cockpit.core.audit import read_audit

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, **nccl) -> Path:
    values = {"engine": "torch", "torch_backend": "gloo", "torch_python": sys.executable, "gpus_per_node": 0,
              "torch_tasks_per_node": 1, "exclusive": False, "poll_interval": 0.3, "job_timeout": 600.0,
              "time_limit": "00:05:00", "output_dir": str(tmp_path / "out"),
              "history_file": str(tmp_path / "history.jsonl"), **nccl}
    lines = ["[plugins.nccl]"] + [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    path = tmp_path / "cockpit.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def cockpit(cluster, tmp_path, *args, config: Path, timeout: float = 180, backend: str = "slurm-cli"):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(config), "--backend", backend, *args],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def _audit(tmp_path: Path) -> list[dict]:
    path = tmp_path / "state" / "cockpit" / "audit.jsonl"
    return read_audit(path) if path.exists() else []


def _nccl_jobs() -> list[str]:
    out = run(["squeue", "-h", "-t", "all", "-o", "%i %j"]).stdout
    return [line.split()[0] for line in out.splitlines() if "cockpit-nccl" in line]


def test_without_yes_the_plan_is_printed_and_nothing_is_submitted(cluster, tmp_path):
    before = _nccl_jobs()
    proc = cockpit(cluster, tmp_path, "check", "nccl", "--nodes", "node[01-02]", config=_config(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "sbatch --parsable  < script on stdin" in proc.stdout
    assert "#SBATCH --nodelist=node[01-02]" in proc.stdout and f"mkdir -p -- {tmp_path / 'out'}" in proc.stdout
    assert "add --yes" in proc.stderr
    assert _nccl_jobs() == before  # squeue read back: nothing new
    assert _audit(tmp_path) == []
    as_json = cockpit(cluster, tmp_path, "check", "nccl", "--nodes", "node[01-02]", "--json", config=_config(tmp_path))
    doc = json.loads(as_json.stdout)
    assert as_json.returncode == 2 and doc["status"] == "NOT_CONFIRMED"
    assert doc["plan"]["would_run"][-1] == ["sbatch", "--parsable"] and "#SBATCH" in doc["plan"]["scripts"][0]


def test_read_only_refuses_the_submission_and_audits_the_refusal(cluster, tmp_path):
    before = _nccl_jobs()
    proc = cockpit(cluster, tmp_path, "--read-only", "check", "nccl", "--nodes", "node[01-02]", "--yes",
                   config=_config(tmp_path))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "read-only mode: refusing to submit node[01-02]" in proc.stderr
    assert _nccl_jobs() == before
    (rec,) = _audit(tmp_path)
    assert (rec["action"], rec["result"], rec["targets"]) == ("submit", "refused", ["node[01-02]"])


# The cleanup cancel is the backend's own: scancel on the CLI backend, pyslurm's
# job cancel in process (the argv the audit records names it). CI runs both where
# tests/run installed a pyslurm that matches the cluster.
@pytest.mark.parametrize(("backend", "cancel_argv0"), [("slurm-cli", "scancel"), ("pyslurm", "pyslurm")])
def test_yes_audits_the_submission_and_the_cleanup_cancel(cluster, tmp_path, backend, cancel_argv0):
    if backend == "pyslurm" and importlib.util.find_spec("pyslurm") is None:
        pytest.skip("pyslurm is not installed in this venv (tests/run builds it from ../shared/vendor/pyslurm)")
    # node01 is held whole by another job, so the benchmark pends until the check's
    # time limit and is cancelled by the check: deterministic, no timing race.
    blocker = submit("sleep 300", nodelist="node01", exclusive=True, job_name="blocker")
    try:
        wait_for(lambda: run(["squeue", "-h", "-j", blocker, "-o", "%T"]).stdout.strip() == "RUNNING", timeout=60)
        proc = cockpit(cluster, tmp_path, "check", "nccl", "--nodes", "node[01-02]", "--yes",
                       config=_config(tmp_path, exclusive=True, job_timeout=3.0), backend=backend)
    finally:
        cancel(blocker)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "cancelled" in proc.stderr
    recs = _audit(tmp_path)
    assert [(r["action"], r["argv"][0], r["result"]) for r in recs] == [
        ("submit", "mkdir", "done"), ("submit", "sbatch", "done"), ("cancel", cancel_argv0, "done")]
    job = recs[1]["value"]
    # pyslurm has no submit call: the gate ran sbatch and its output says so
    assert job.isdecimal() and recs[1]["output"].split(" (as a Slurm command:")[0] == f"Submitted batch job {job}"
    assert "#SBATCH --nodelist=node[01-02]" in recs[1]["stdin"]
    assert recs[2]["target"] == job and "limit" in recs[2]["note"]
    state = run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"]).stdout.strip()
    assert state in ("CANCELLED", "")  # gone from squeue once Slurm forgets it
