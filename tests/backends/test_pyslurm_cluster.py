"""The pyslurm backend against the real Slurm test cluster (tests/cluster/up).

The CLI backend's acceptance checks (tests/backends/test_slurm_cli_cluster.py)
run here unchanged on pyslurm: the 2-node 2-GPU job with its GPU indexes
per node, the drained node's reason, user and time, pending/held/requeued jobs,
the topology, the partitions. Then what only pyslurm has: ``--backend auto``
and doctor, a field-by-field comparison with the CLI backend's snapshot JSON,
actions through pyslurm behind the gate, and its failures (controller down,
permission refused, libslurm mismatch at run time), each one line.

pyslurm comes from tests/run, which builds it from ../shared/vendor/pyslurm;
without it these tests skip and say which path is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import clusterlib
from cockpit.backends.pyslurm_backend import PyslurmBackend, probe
from cockpit.backends.pyslurm_map import major_minor
from cockpit.backends.pyslurm_worker import PyslurmWorker
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.config import Config
from cockpit.core.actions import actions_for_backend, yes_policy
from cockpit.core.audit import read_audit
from cockpit.core.joblog import expand_pattern
from cockpit.runner import LocalRunner
from test_slurm_cli_cluster import (  # noqa: F401 - collected here, on the pyslurm backend
    _job,
    test_drained_node_shows_reason_user_and_time,
    test_partitions,
    test_pending_held_and_requeued_jobs,
    test_snapshot_is_complete,
    test_topology_leafs,
    test_two_node_gpu_job_has_nodes_and_indexes,
    test_version_matches_installed_slurm,
)

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT.parent / "shared" / "vendor" / "pyslurm"


def require_pyslurm(cluster) -> None:
    """Skip (naming the missing path) where tests/run could not install pyslurm."""
    if importlib.util.find_spec("pyslurm") is None:
        where = f"{VENDOR} is missing" if not VENDOR.is_dir() else f"from {VENDOR}"
        pytest.skip(f"pyslurm is not installed in this venv (tests/run builds it {where})")


async def open_backend(cluster, worker: PyslurmWorker | None = None) -> PyslurmBackend:
    """A PyslurmBackend on the test cluster; fails when the installed pyslurm should match but does not."""
    require_pyslurm(cluster)
    env = {"SLURM_CONF": cluster["SLURM_CONF"]}
    cli = SlurmCliBackend(LocalRunner(env=dict(os.environ, **env)), timeout=20)
    found = await probe(cli, worker=worker or PyslurmWorker(env=env))
    if not found.usable:
        from importlib.metadata import version

        if major_minor(version("pyslurm")) == major_minor(cluster["COCKPIT_TEST_SLURM_VERSION"]):
            pytest.fail(f"pyslurm {version('pyslurm')} should work on Slurm "
                        f"{cluster['COCKPIT_TEST_SLURM_VERSION']}: {found.why}")
        pytest.skip(f"pyslurm unusable here: {found.why}")
    return PyslurmBackend(cli=cli, probed=found)


@pytest.fixture
async def backend(cluster):
    b = await open_backend(cluster)
    yield b
    await b.close()


def cockpit(cluster, *args, env=None, timeout=120):
    full = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME="/nonexistent-cockpit-test")
    full.update(env or {})
    full.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=full, timeout=timeout, cwd=ROOT)


_WORKER_CHECK = """
import asyncio, os, sys
from pathlib import Path
from cockpit.backends.pyslurm_backend import PyslurmBackend, probe
from cockpit.backends.pyslurm_worker import PyslurmWorker
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.runner import LocalRunner

async def main():
    env = {"SLURM_CONF": os.environ["SLURM_CONF"]}
    cli = SlurmCliBackend(LocalRunner(env=dict(os.environ)), timeout=20)
    backend = PyslurmBackend(cli=cli, probed=await probe(cli, worker=PyslurmWorker(env=env)))
    await backend.fetch_jobs()
    pid = backend.worker.pid
    print(pid != os.getpid(), "libslurm" in Path(f"/proc/{pid}/maps").read_text(), "pyslurm" in sys.modules)
    await backend.close()

asyncio.run(main())
"""


def test_calls_run_in_the_worker_process(cluster):
    """In a process of its own: another test of this session may have imported pyslurm here."""
    require_pyslurm(cluster)
    proc = subprocess.run([sys.executable, "-c", _WORKER_CHECK], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"]), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    other_pid, libslurm_there, pyslurm_here = proc.stdout.split()
    assert (other_pid, libslurm_there, pyslurm_here) == ("True", "True", "False")


def test_auto_picks_pyslurm_and_doctor_says_why(cluster):
    require_pyslurm(cluster)
    proc = cockpit(cluster, "doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    version = cluster["COCKPIT_TEST_SLURM_VERSION"]
    assert info["backend"] == "pyslurm", info
    assert info["backend_reason"].startswith(f"auto: pyslurm {info['pyslurm']['version']} matches Slurm {version}")
    assert info["pyslurm"]["chosen"] is True and info["pyslurm"]["slurm"] == version
    assert info["pyslurm"]["adapter"] == major_minor(version)
    assert info["source"].startswith("pyslurm ") and info["controller"].startswith("answering (")


# -- the same cluster state through both backends, field by field ------------------
# Where the two sources say the same thing in two ways (and nothing else may differ):
# pyslurm gives output paths expanded (slurm_get_job_stdout) and stderr as the file
# it goes to (stdout's when unset); squeue --json on 22.05 gives sbatch's pattern and
# "" for an unset stderr. cockpit.core.joblog.path_for reads both the same way.
def _same_paths(cli_job: dict, py_job: dict) -> bool:
    out = expand_pattern(cli_job["stdout"], _Job(cli_job))
    err = expand_pattern(cli_job["stderr"] or cli_job["stdout"], _Job(cli_job))
    return (py_job["stdout"], py_job["stderr"]) == (out, err)


class _Job:
    """What expand_pattern reads of a job, from the snapshot JSON."""

    def __init__(self, d):
        self.job_id, self.array_job_id, self.array_task_id = d["job_id"], d["array_job_id"], d["array_task_id"]
        self.user, self.name, self.nodes = d["user"], d["name"], tuple(d["nodes"])


def _snapshot(cluster, backend_name):
    proc = cockpit(cluster, "--backend", backend_name, "snapshot", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _stable_cli_and_pyslurm(cluster, tag: str):
    """CLI, pyslurm, CLI again until the two CLI reads agree on nodes and our jobs
    (other tests change the cluster meanwhile). Returns (cli, pyslurm)."""
    def key(s):
        return s["nodes"], [j for j in s["jobs"] if j["name"].startswith(tag)]

    for _ in range(8):
        before, py, after = _snapshot(cluster, "slurm-cli"), _snapshot(cluster, "pyslurm"), _snapshot(cluster, "slurm-cli")
        if key(before) == key(after):
            return after, py
    raise AssertionError("the cluster never held still for three snapshots")


def test_snapshot_json_matches_the_cli_backend_field_by_field(cluster):
    require_pyslurm(cluster)
    tag = f"cockpit-cmp-{uuid.uuid4().hex[:6]}"
    jobs = [
        clusterlib.submit("sleep 300", nodes=2, gres=clusterlib.gpu_gres(2), job_name=f"{tag}-gpu2"),
        clusterlib.submit("sleep 60", job_name=f"{tag}-held", hold=True),
        clusterlib.submit("sleep 60", job_name=f"{tag}-later", begin="now+1hour", time=30),
        clusterlib.submit("sleep 300", job_name=f"{tag}-arr", array="0-3%1", output="/tmp/%x-%A_%a.out"),
    ]
    reason = f"{tag} drained for the comparison"
    clusterlib.run(["scontrol", "update", "NodeName=node04", "State=DRAIN", f"Reason={reason}"])
    try:
        clusterlib.wait_for(lambda: "RUNNING" in clusterlib.run(["squeue", "-h", "-j", jobs[0], "-o", "%T"]).stdout)
        cli, py = _stable_cli_and_pyslurm(cluster, tag)
        ours = {j["job_id"] for j in cli["jobs"] if j["name"].startswith(tag)}
        assert py["source"].startswith("pyslurm ") and cli["source"].startswith("slurm-cli")
        for field in ("schema_version", "simulated", "slurm_version", "partitions", "topology"):
            assert py[field] == cli[field], field
        assert py["nodes"] == cli["nodes"]
        mine = {j["job_id"]: j for j in cli["jobs"] if j["job_id"] in ours}
        theirs = {j["job_id"]: j for j in py["jobs"] if j["job_id"] in ours}
        assert set(theirs) == set(mine) and len(mine) >= 5
        for job_id, want in mine.items():
            got = theirs[job_id]
            assert _same_paths(want, got), (job_id, want["stdout"], want["stderr"], got["stdout"], got["stderr"])
            differ = {f: (want[f], got[f]) for f in want if f not in ("stdout", "stderr") and want[f] != got[f]}
            assert not differ, (job_id, want["name"], differ)
        gpu2 = theirs[int(jobs[0])]
        assert gpu2["state"] == "RUNNING" and len(gpu2["gpus"]) == 2 and all(len(g["indexes"]) == 2 for g in gpu2["gpus"])
        assert theirs[int(jobs[1])]["held"] and theirs[int(jobs[2])]["reason"] == "BeginTime"
        node04 = next(n for n in py["nodes"] if n["name"] == "node04")
        assert node04["reason"] == reason and node04["reason_user"] == "root"
    finally:
        clusterlib.run(["scontrol", "update", "NodeName=node04", "State=RESUME"], check=False)
        for j in jobs:
            clusterlib.cancel(j)
