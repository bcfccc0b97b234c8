"""A multi-step job on the real test cluster (srun steps inside sbatch): the
utilisation report, the steps' TotalCPU and their TRES usage against numbers
this test computes from sacct itself. Sampled step usage prints CPU as a
duration (``cpu=00:00:01``), the shape that broke the report; a short step may
record only ``energy=0`` (tests/data/sacct-tres holds the sampled shape, from
this cluster). Every wait polls a state, never a fixed sleep."""

from __future__ import annotations

import json
import uuid

import pytest

from clusterlib import run, wait_for
from test_accounting_history import cockpit, sbatch, utilization_json, wait_state

pytestmark = pytest.mark.cluster

# Busy work that takes CPU time (a sleep step would record cpu=00:00:00 only).
BURN = "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"


def _seconds(text: str) -> float:
    """[D-]HH:MM:SS[.fff] or MM:SS.fff, by hand (not cockpit's parser)."""
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [float(p) for p in text.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    return days * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def _sacct(job: str, fields: str) -> list[list[str]]:
    out = run(["sacct", "-P", "-n", "--allusers", "-j", job, "-o", fields],
              env={"SLURM_TIME_FORMAT": "%s"}).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def test_multi_step_job_report_and_step_tres_match_sacct(cluster, tmp_path):
    if cluster.get("COCKPIT_TEST_ACCOUNTING") != "1":
        pytest.skip("the test cluster runs without accounting")
    account = f"cockpit-m{uuid.uuid4().hex[:6]}"
    name = cluster["COCKPIT_TEST_CLUSTER_NAME"]
    gpu = cluster["COCKPIT_TEST_GPU_TYPE"]
    run(["sacctmgr", "-i", "add", "account", account, f"cluster={name}"])
    run(["sacctmgr", "-i", "add", "user", "root", f"account={account}", f"cluster={name}"])
    job = ""
    try:
        wait_for(lambda: account in run(["scontrol", "show", "assoc_mgr", "flags=assoc", f"accounts={account}"],
                                        check=False).stdout, timeout=30)
        job = sbatch(f"cockpit-multistep-{account}", f"srun -n1 sh -c '{BURN}'; srun -n1 sh -c '{BURN}'; {BURN}",
                     "-A", account, "--gres", f"gpu:{gpu}:2")
        wait_state(job, ("COMPLETED",), timeout=180)

        def steps_recorded():  # slurmdbd gets the steps' usage a moment after the job ends
            rows = _sacct(job, "JobID,TRESUsageInTot")
            done = {r[0] for r in rows if r[1]}
            return rows if {f"{job}.0", f"{job}.1", f"{job}.batch"} <= done else None
        steps_recorded.__name__ = f"job {job}'s steps in accounting"
        wait_for(steps_recorded, timeout=90, interval=1)

        doc = utilization_json(tmp_path, account, jobs=1)
        shown = cockpit(tmp_path, "job", "show", job, "--json")
    finally:
        run(["scancel", job], check=False) if job else None
        run(["sacctmgr", "-i", "delete", "user", "root", f"account={account}"], check=False)
        run(["sacctmgr", "-i", "delete", "account", account], check=False)

    # By hand from sacct: GPUs of the allocation x its elapsed seconds.
    (alloc, elapsed) = next((r[1], r[2]) for r in _sacct(job, "JobID,AllocTRES,ElapsedRaw") if r[0] == job)
    gpus = int(dict(kv.split("=", 1) for kv in alloc.split(","))["gres/gpu"])
    expect_h = gpus * int(elapsed) / 3600
    assert gpus == 2 and expect_h > 0
    assert doc["rows"][0]["allocated_gpu_h"] == pytest.approx(expect_h, abs=0.001)
    assert doc["warnings"] == []

    # The steps' TotalCPU and TRES usage, by hand, against cockpit's reading of them.
    # (What the usage holds depends on the node's gather: cpu=HH:MM:SS once sampled,
    # else only energy=0; the recorded unit tests hold the duration shape for sure.)
    assert shown.returncode == 0, shown.stderr
    steps = {s["step_id"]: s for s in json.loads(shown.stdout)["steps"]}
    by_hand = {r[0].split(".", 1)[1]: r for r in _sacct(job, "JobID,TotalCPU,TRESUsageInMax,TRESUsageInAve")
               if "." in r[0]}
    for step_id in ("0", "1", "batch"):
        assert steps[step_id]["total_cpu_s"] == pytest.approx(_seconds(by_hand[step_id][1]), abs=0.001)
    from cockpit.backends.accounting_text import SACCT_FIELDS, parse_sacct_parsable

    raw = run(["sacct", "-P", "-n", "--allusers", "-j", job, "-o", ",".join(SACCT_FIELDS)],
              env={"SLURM_TIME_FORMAT": "%s"}).stdout
    (rec,) = parse_sacct_parsable(raw)
    parsed = {s.step_id: s for s in rec.steps}
    for step_id in ("0", "1", "batch"):
        assert parsed[step_id].tres_in_max == _tres_by_hand(by_hand[step_id][2])
        assert parsed[step_id].tres_in_ave == _tres_by_hand(by_hand[step_id][3])


def _tres_by_hand(text: str) -> dict[str, float]:
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=", 1)
        if value in ("", "N/A"):
            continue
        out[key] = _seconds(value) if ":" in value else _mib(value)
    return out


def _mib(value: str) -> float:
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 ** 2}
    return float(value[:-1]) * units[value[-1]] if value[-1] in units else float(value)
