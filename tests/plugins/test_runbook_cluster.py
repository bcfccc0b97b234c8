"""The hung-job runbook against a real hung distributed job on the test cluster.

A batch job (sbatch: Slurm requeues only batch jobs) runs two ranks of a torch
(CPU, gloo) program on two nodes with srun: rank 1 sleeps before the collective,
rank 0 blocks in all_reduce. The runbook must see the job not progressing, dump
both ranks with py-spy over SSH, name rank 1 and its node, and with --yes drain
that node and requeue the job without it. Slurm is read back; the test cancels its
job and resumes the node whatever happens. Avoids node03, which the actions tests
drain.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from clusterlib import cancel, parse_scontrol, run, wait_for

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
PY_SPY = Path(sys.executable).with_name("py-spy")

HANG = r'''
import datetime, faulthandler, os, signal, sys, time
import torch, torch.distributed as dist
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the "flight-recorder dump" on USR1
rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[1], rank=rank, world_size=world,
                        timeout=datetime.timedelta(minutes=30))
print(f"rank {rank} on {os.environ['SLURMD_NODENAME']} ready", flush=True)
if rank == 1:
    time.sleep(3600)  # the straggler never reaches the collective
t = torch.ones(4)
dist.all_reduce(t)
print("all_reduce done", flush=True)
'''


def _requirements():
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("torch is not installed (pip install torch==2.13.0, extra test-torch)")
    if not PY_SPY.exists() and not shutil.which("py-spy"):
        pytest.skip("py-spy is not installed (pip install py-spy, extra test-torch)")


def _slurm(*argv, check=True, input=None):
    return run(list(argv), check=check, input=input)


def _job(job_id: str) -> dict[str, str]:
    return parse_scontrol(_slurm("scontrol", "show", "job", job_id).stdout)


def _cockpit(tmp_path, *args, timeout=240):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(tmp_path / "cockpit.toml"),
                           "--backend", "slurm-cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def _config(tmp_path, cluster) -> None:
    spy = PY_SPY if PY_SPY.exists() else Path(shutil.which("py-spy"))
    (tmp_path / "cockpit.toml").write_text(
        "[ssh]\n"
        f'config_file = "{cluster["COCKPIT_TEST_SSH_CONFIG"]}"\n'
        f'known_hosts = "{cluster["COCKPIT_TEST_SSH_KNOWN_HOSTS"]}"\n'
        "command_timeout = 60.0\n"
        "[plugins.runbooks]\n"
        f'py_spy = "{spy}"\n'
    )


BATCH = """#!/bin/bash
export GLOO_SOCKET_IFNAME=lo
srun --ntasks-per-node=1 {python} {script} {port}
"""


def _submit_hung(cluster, tmp_path, name: str, out: Path) -> str:
    script = tmp_path / "hang.py"
    script.write_text(HANG)
    port = str(29500 + os.getpid() % 1000)
    batch = BATCH.format(python=sys.executable, script=script, port=port)
    res = _slurm("sbatch", "--parsable", "-J", name, "-N", "2", "--ntasks-per-node=1", "--exclude=node03",
                 "--requeue", "--open-mode=append", "-o", str(out), "--time=00:10:00", input=batch)
    return res.stdout.strip().split(";")[0]


def _ready_text(out: Path) -> str:
    text = out.read_text() if out.exists() else ""
    return text if text.count(" ready") >= 2 else ""


def _assert_proposed(rep: dict, job: str, rank1_node: str) -> None:
    steps = {s["id"]: s for s in rep["steps"]}
    assert any(f["rule"] == "progress.stalled" for f in steps["progress"]["findings"]), steps["progress"]
    stacks = steps["stacks"]
    assert stacks["status"] == "ran", stacks
    assert len(stacks["evidence"]) == 2, stacks  # two ranks, two different stacks
    straggler = [f for f in stacks["findings"] if f["rule"] == "stacks.straggler"]
    assert straggler and straggler[0]["title"] == f"straggler: rank 1 on {rank1_node}", stacks
    assert any("all_reduce" in e for e in stacks["evidence"]), stacks["evidence"]
    sleep_line = next(i for i, line in enumerate(HANG.split("\n"), 1) if "time.sleep(3600)" in line)
    assert any(f"[rank 1]: <module> (hang.py:{sleep_line})" in e for e in stacks["evidence"]), stacks["evidence"]
    assert rep["facts"]["straggler_node"] == rank1_node
    assert steps["drain-straggler"]["status"] == "proposed"
    assert steps["drain-straggler"]["argv"][0][:4] == ["scontrol", "update", f"NodeName={rank1_node}", "State=DRAIN"]
    # the job's own --exclude=node03 is kept: ExcNodeList replaces, so cockpit merges
    assert steps["requeue"]["argv"] == [["scontrol", "requeuehold", job],
                                        ["scontrol", "update", f"JobId={job}", f"ExcNodeList=node03,{rank1_node}"],
                                        ["scontrol", "release", job]]


def test_hung_job_runbook_names_the_straggler_drains_and_requeues(cluster, tmp_path):
    _requirements()
    _config(tmp_path, cluster)
    name = f"cockpit-rb-hung-{uuid.uuid4().hex[:6]}"
    out = Path("/tmp") / f"{name}.out"
    drained = None
    job = _submit_hung(cluster, tmp_path, name, out)
    try:
        text = wait_for(lambda: _ready_text(out), timeout=180, interval=1)
        rank1_node = next(line.split()[3] for line in text.splitlines() if line.startswith("rank 1 on"))
        assert rank1_node in _job(job)["NodeList"] or rank1_node in run(
            ["scontrol", "show", "hostnames", _job(job)["NodeList"]]).stdout
        time.sleep(6)  # silence longer than --stale-after

        proposed = _cockpit(tmp_path, "runbook", "run", "hung-job", "--job", job, "--job-log", str(out), "--stale-after", "4", "--json")
        assert proposed.returncode == 2, proposed.stderr
        _assert_proposed(json.loads(proposed.stdout), job, rank1_node)
        assert _job(job)["JobState"] == "RUNNING"  # nothing was done without --yes
        assert "DRAIN" not in parse_scontrol(_slurm("scontrol", "show", "node", rank1_node).stdout)["State"]

        drained = rank1_node
        acted = _cockpit(tmp_path, "runbook", "run", "hung-job", "--job", job, "--job-log", str(out), "--stale-after", "4", "--yes", "--json")
        rep = json.loads(acted.stdout)
        steps = {s["id"]: s for s in rep["steps"]}
        assert steps["stacks"]["status"] == "ran" and rep["facts"]["straggler_node"] == rank1_node, steps["stacks"]
        assert steps["dump"]["status"] == "done", steps["dump"]
        assert steps["drain-straggler"]["status"] == "done", steps["drain-straggler"]
        assert steps["requeue"]["status"] == "done", steps["requeue"]
        node = parse_scontrol(_slurm("scontrol", "show", "node", rank1_node).stdout)
        assert "DRAIN" in node["State"]
        assert node["Reason"].startswith(f"hung job {job}: straggler rank 1")
        # Requeued, read back from Slurm: one restart, the bad node excluded, and the job
        # back in the queue (pending, or started again elsewhere), not on the drained node.
        info = _job(job)
        assert info["Restarts"] == "1", info
        excluded = run(["scontrol", "show", "hostnames", info["ExcNodeList"]]).stdout.split()
        assert sorted(excluded) == sorted({"node03", rank1_node}), info
        assert info["JobState"] in ("PENDING", "CONFIGURING", "RUNNING"), info
        if info["JobState"] != "PENDING":
            assert rank1_node not in run(["scontrol", "show", "hostnames", info["NodeList"]]).stdout, info
        assert "Current thread" in out.read_text() or "Thread 0x" in out.read_text()  # the USR1 dump reached the ranks
        audit = [json.loads(line) for line in
                 (tmp_path / "state" / "cockpit" / "audit.jsonl").read_text().splitlines()]
        assert {a["action"] for a in audit} >= {"signal", "drain", "runbooks.requeue-exclude"}
    finally:
        try:
            cancel(job)
        finally:
            if drained:
                _slurm("scontrol", "update", f"NodeName={drained}", "State=RESUME", check=False)
            out.unlink(missing_ok=True)
