"""Processes of a real Slurm job, listed on its node over SSH."""

from __future__ import annotations

import asyncio

import pytest

from cockpit.core.jobprocs import job_processes, parse_compute_apps, parse_listpids, parse_ranks
from cockpit.remote.pool import SshPool
from cockpit.remote.runner import SshRunner


def test_listpids_and_compute_apps_parsers():
    # layout as printed by scontrol listpids on the test cluster (22.05)
    text = "PID      JOBID    STEPID   LOCALID GLOBALID\n7103     8        batch    0       0       \n7104     8        batch    -       -       \n"
    assert parse_listpids(text) == [(7103, "batch"), (7104, "batch")]
    assert parse_ranks(text) == {}  # the batch script's GLOBALID 0 is no rank
    # an srun step's task: a line written here in the layout above (the recorded output has no srun step)
    step = "PID      JOBID    STEPID   LOCALID GLOBALID\n7200     8        0        1       9       \n"
    assert parse_ranks(step) == {7200: "9"}
    assert parse_compute_apps("12, GPU-b\n13, GPU-x\n", "0, GPU-a\n1, GPU-b\n") == {12: 1}


@pytest.mark.cluster
@pytest.mark.ssh
async def test_job_processes_on_its_node(cluster_env, cluster_settings):
    head = SshRunner("head", SshPool(cluster_settings))
    sub = await head.run(["sbatch", "--parsable", "--job-name=cockpit-ssh-jobprocs-test", "-w", "node02", "-p", "gpu",
                          "--wrap", "sleep 97"])
    assert sub.ok, sub.err_text()
    job_id = int(sub.text().split(";")[0])
    pool = SshPool(cluster_settings)
    try:
        for _ in range(40):
            procs, errors = await job_processes(pool, job_id, ["node02"])
            if any("sleep 97" in p.command for p in procs.get("node02", [])):
                break
            await asyncio.sleep(0.5)
        assert errors == {}
        sleeper = [p for p in procs["node02"] if p.command == "sleep 97"]
        assert sleeper and sleeper[0].state.startswith("S") and sleeper[0].step == "batch"
        assert sleeper[0].gpu_index is None  # no GPU driver on the test nodes
    finally:
        await head.run(["scancel", str(job_id)])
        await pool.close()
        await head.close()
