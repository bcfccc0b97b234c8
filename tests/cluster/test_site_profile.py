"""The "site" test-cluster profile (tests/cluster/lib-profile.sh) on real Slurm: every backend
reads each node's GPUs as the site configured them (untyped, two types on one node, shards as
shards, a CPU-only node with 0 GPUs, not unknown), and on a real accounting history
(tests/cluster/site-history: multi-step jobs, an array, a het job, a requeued, a preempted and
a timed-out job) the utilisation report equals GPU-hours this test computes itself from
``sacct --parsable2``'s raw fields, without cockpit's parser.

The host's /etc/hosts maps the default cluster, so this profile runs in a chroot:
``COCKPIT_OTHER_PROFILE=site tests/cluster/other-debian --python -- pytest tests/cluster/test_site_profile.py``
(COCKPIT_OTHER_RELEASE=bookworm/trixie/sid: Slurm 22.05/24.11/26.05). Elsewhere every test skips
saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterlib import require_cluster, run

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
HOW = ("COCKPIT_TEST_SITE_PROFILE=1 tests/run, or COCKPIT_OTHER_PROFILE=site tests/cluster/other-debian "
       "--python -- pytest tests/cluster/test_site_profile.py")


@pytest.fixture(scope="module")
def site() -> dict[str, str]:
    env = require_cluster()
    profile = env.get("COCKPIT_TEST_PROFILE", "default")
    if profile != "site":
        pytest.skip(f"the running test cluster is profile {profile!r}, not 'site': run {HOW}")
    return env


@pytest.fixture(scope="module")
def history(site, tmp_path_factory) -> dict[str, str]:
    """One real history per module run: ``account``, ``start`` and KIND -> job id."""
    if site.get("COCKPIT_TEST_ACCOUNTING") != "1":
        pytest.skip("the test cluster runs without accounting")
    out = tmp_path_factory.mktemp("site") / "history"
    proc = subprocess.run([str(ROOT / "tests/cluster/site-history"), str(out)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(" ", 1) for line in out.read_text().splitlines())


def cockpit(env: dict[str, str], home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, SLURM_CONF=env["SLURM_CONF"], XDG_CONFIG_HOME=str(home / "cfg"),
                XDG_STATE_HOME=str(home / "state"))
    full.pop("COCKPIT_CONFIG", None)
    if "SLURMRESTD_URL" in env:
        full.update(SLURMRESTD_URL=env["SLURMRESTD_URL"], SLURM_JWT=env["COCKPIT_TEST_SLURM_JWT"])
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=full, timeout=120, cwd=ROOT)


# What lib-profile.sh configures, per node: GPUs by type (None: untyped), MIG slices by
# profile type (cockpit lists a MIG profile apart from whole GPUs), shards, partitions.
WANT = {
    "node01": ({None: 8}, {}, 0, {"gpu", "debug"}),
    "node02": ({"a100": 4}, {"1g.10gb": 4}, 0, {"gpu", "debug"}),
    "node03": ({}, {}, 0, {"gpu", "debug"}),
    "node04": ({"h100": 4}, {}, 16, {"gpu", "urgent"}),
}


@pytest.mark.parametrize("backend", ["slurm-cli", "pyslurm", "slurmrestd"])
def test_every_backend_reads_each_nodes_gpus_as_configured(site, backend, tmp_path):
    if backend == "pyslurm":
        pytest.importorskip("pyslurm", reason="pyslurm is not installed here (tests/pyslurm-wheel)")
    if backend == "slurmrestd" and "SLURMRESTD_URL" not in site:
        pytest.skip("the test cluster's env.sh names no slurmrestd (SLURMRESTD_URL)")
    proc = cockpit(site, tmp_path, "--backend", backend, "snapshot", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["errors"] == []
    nodes = {n["name"]: n for n in doc["nodes"]}
    seen = {name: ({g["type"]: g["count"] for g in n["gpus"]}, {g["type"]: g["count"] for g in n["mig"]},
                   n["shard_total"], set(n["partitions"])) for name, n in nodes.items()}
    assert seen == WANT  # shards are shards, never GPUs; node03 has none of either
    assert nodes["node03"]["gpu_total"] == 0 and nodes["node03"]["gpus"] == []
    for n in nodes.values():  # 0 GPUs read as 0, not as a field that could not be read
        assert not any("gpu" in u or "gres" in u for u in n["unknown"]), (n["name"], n["unknown"])


def _sacct(*args: str) -> list[list[str]]:
    out = run(["sacct", "-n", "-P", "--allusers", *args], env={"SLURM_TIME_FORMAT": "%s"}).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


@pytest.mark.timeout(600)  # the first test to use the history waits for it (site-history: ~2 min)
def test_the_history_holds_every_job_kind(history):
    def states(kind: str) -> list[str]:  # every run of the job (-D), oldest first
        return [r[1].split()[0] for r in _sacct("-X", "-D", "-j", history[kind], "-o", "JobID,State")]

    assert "TIMEOUT" in states("timeout")
    assert "REQUEUED" in states("requeue")
    assert {"PREEMPTED", "REQUEUED"} & set(states("preempt")), states("preempt")
    assert states("urgent") == ["COMPLETED"]
    het = {r[0] for r in _sacct("-X", "-j", history["het"], "-o", "JobID")}
    assert het == {f"{history['het']}+0", f"{history['het']}+1"}
    tasks = {r[0] for r in _sacct("-X", "-j", history["array"], "-o", "JobID")}
    assert tasks == {f"{history['array']}_{i}" for i in (1, 2, 3)}
    steps = {r[0] for r in _sacct("-j", history["multistep"], "-o", "JobID")}
    assert {f"{history['multistep']}.{s}" for s in ("0", "1", "batch")} <= steps
    cpu_node = _sacct("-X", "-j", history["cpu"], "-o", "NodeList,Partition,AllocTRES")
    assert cpu_node[0][:2] == ["node03", "debug"] and "gres/gpu" not in cpu_node[0][2]


def _gpus(alloc_tres: str) -> int:
    """gres/gpu=N of an AllocTRES string, by hand (0 when there is none)."""
    for item in alloc_tres.split(","):
        key, _, value = item.partition("=")
        if key == "gres/gpu":
            return int(value)
    return 0


def _gpu_seconds_by_hand(account: str, since: str, *, every_run: bool) -> float:
    """gres/gpu x (End - Start) summed over the account's allocations (-X), from the raw
    --parsable2 fields (SLURM_TIME_FORMAT=%s); a run that never started counts 0.
    every_run: -D, each run of a requeued job (its earlier runs held GPUs too); else what
    sacct prints by default, the last run of each job."""
    rows = _sacct("-X", *(["-D"] if every_run else []), "-A", account, "-S", since,
                  "-o", "JobID,AllocTRES,Start,End")
    assert rows
    return sum(_gpus(tres) * (int(end) - int(start)) for _job, tres, start, end in rows
               if start.isdigit() and end.isdigit())


def _report(site, tmp_path, account: str) -> dict:
    proc = cockpit(site, tmp_path, "--backend", "slurm-cli", "report", "utilization", "--since", "1h",
                   "--account", account, "--json")
    assert proc.returncode == 0, proc.stderr  # the history is settled in accounting (site-history waits)
    doc = json.loads(proc.stdout)
    assert doc["warnings"] == []
    return doc


@pytest.mark.timeout(600)
def test_the_utilisation_report_equals_gpu_hours_computed_from_sacct(site, history, tmp_path):
    """Multi-step, array, het, MIG/typed/untyped, shard and CPU-only jobs: the report's
    allocated GPU-hours are sacct's AllocTRES gres/gpu x elapsed, as it documents."""
    last = _gpu_seconds_by_hand(history["account"], history["start"], every_run=False) / 3600
    every = _gpu_seconds_by_hand(history["account"], history["start"], every_run=True) / 3600
    doc = _report(site, tmp_path, history["account"])
    got = doc["rows"][0]["allocated_gpu_h"]
    why = f"report {got} GPU-h; by hand: {last:.5f} (sacct), {every:.5f} (sacct -D); rows {doc['rows']}"
    assert last > 0, why
    assert got == pytest.approx(last, abs=0.0006), why  # the report rounds to 3 decimals
