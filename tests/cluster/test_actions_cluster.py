"""Operator actions against the real test cluster, headless, read back from Slurm.

Every test cleans up what it changes (jobs cancelled, node03 resumed). Job
names start with ``cockpit-act-``; node03 is the node these tests drain.
The non-operator test runs cockpit as root but every Slurm command as
``cockpit-user`` (through wrapper scripts in general.slurm_bin_dir), because
that user cannot execute this virtualenv's interpreter under /root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cockpit.core.audit import read_audit

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
NODE = "node03"
HOSTILE = "act; $(touch /tmp/cockpit-pwned) `id` 'sq' \"dq\"\nline2 [bold red]markup[/]"


def _env(cluster, tmp_path):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("COCKPIT_CONFIG", None)
    return env


def cockpit(cluster, tmp_path, *args, timeout=120):
    # --backend slurm-cli: actions need only the Runner; skip the pyslurm probe.
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--backend", "slurm-cli", *args],
                          capture_output=True, text=True,
                          env=_env(cluster, tmp_path), timeout=timeout, cwd=ROOT)


def slurm(cluster, *argv, check=True):
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"]))
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv}: {proc.stderr}")
    return proc


def submit(cluster, script, *opts):
    name = f"cockpit-act-{uuid.uuid4().hex[:6]}"
    proc = slurm(cluster, "sbatch", "--parsable", "-J", name, "-o", f"/tmp/{name}-%j.out", *opts, "--wrap", script)
    return proc.stdout.strip().split(";")[0]


def job_fields(cluster, job):
    out = slurm(cluster, "squeue", "-h", "-t", "all", "-j", job, "-o", "%T %l %y %Q %r").stdout.strip().split(None, 4)
    return dict(zip(("state", "limit", "nice", "prio", "reason"), out))


def wait_for(pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def node_state(cluster, node=NODE) -> str:
    out = slurm(cluster, "scontrol", "show", "node", "-o", node).stdout
    return out.split(" State=", 1)[1].split()[0]


def node_info(cluster, node=NODE):
    """(state flags, reason) from sinfo --json: the reason exactly as Slurm stores it."""
    doc = json.loads(slurm(cluster, "sinfo", "--json").stdout)
    for n in doc.get("nodes", []):  # 22.05 shape
        if n["name"] == node:
            return {n["state"].upper(), *[f.upper() for f in n.get("state_flags", [])]}, n.get("reason", "")
    for grp in doc.get("sinfo", []):  # 23.02+ shape
        if node in grp["nodes"]["nodes"]:
            return set(grp["node"]["state"]), grp["reason"]["description"]
    raise AssertionError(f"{node} not in sinfo --json")


@pytest.fixture
def jobs(cluster):
    made: list[str] = []
    yield made
    for j in made:
        slurm(cluster, "scancel", j, check=False)


@pytest.fixture
def node3(cluster):
    yield NODE
    slurm(cluster, "scontrol", "update", f"NodeName={NODE}", "State=RESUME", check=False)
    slurm(cluster, "scontrol", "update", f"NodeName={NODE}", "State=UNDRAIN", check=False)


def test_job_actions_change_slurm_state(cluster, tmp_path, jobs):
    held = submit(cluster, "sleep 300", "--hold")
    jobs.append(held)
    assert job_fields(cluster, held)["reason"] in ("JobHeldUser", "JobHeldAdmin")
    r = cockpit(cluster, tmp_path, "job", "release", held, "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert job_fields(cluster, held)["reason"] not in ("JobHeldUser", "JobHeldAdmin")
    slurm(cluster, "scontrol", "hold", held)  # keep it from starting while we change it
    for args, key, want in [(("nice", "--value", "7"), "nice", "7"), (("timelimit", "-t", "30"), "limit", "30:00")]:
        r = cockpit(cluster, tmp_path, "job", *args, held, "--yes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert job_fields(cluster, held)[key] == want
    slurm(cluster, "scontrol", "release", held)
    r = cockpit(cluster, tmp_path, "job", "hold", held, "--yes")
    assert r.returncode == 0 and job_fields(cluster, held)["reason"] == "JobHeldAdmin"
    r = cockpit(cluster, tmp_path, "job", "cancel", held, "--yes", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["results"][0]["status"] == "done"
    assert job_fields(cluster, held)["state"] == "CANCELLED"


def test_signal_requeue_and_cancel_a_running_job(cluster, tmp_path, jobs):
    out = tmp_path / "sig.txt"
    os.chmod(tmp_path, 0o755)
    job = submit(cluster, f"trap 'echo got-usr1 >> {out}' USR1; for i in $(seq 600); do sleep 0.2; done",
                 "-w", "node01")
    jobs.append(job)
    wait_for(lambda: job_fields(cluster, job)["state"] == "RUNNING", "job running")
    r = cockpit(cluster, tmp_path, "job", "signal", "-s", "USR1", "--full", job, "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: out.exists() and "got-usr1" in out.read_text(), "USR1 to reach the batch script")
    r = cockpit(cluster, tmp_path, "job", "requeue", "--hold", job, "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    f = wait_for(lambda: (f := job_fields(cluster, job))["state"] == "PENDING" and f, "requeued job pending")
    # 22.05 says "job requeued in held state"; the priority 0 is what holds it.
    assert f["prio"] == "0" and ("held" in f["reason"].lower() or f["reason"] == "JobHeldAdmin")
    r = cockpit(cluster, tmp_path, "job", "cancel", job, "--yes")
    assert r.returncode == 0 and job_fields(cluster, job)["state"] == "CANCELLED"


def test_bulk_cancel_reports_each_target_with_slurms_words(cluster, tmp_path, jobs):
    live = submit(cluster, "sleep 300", "--hold")
    jobs.append(live)
    r = cockpit(cluster, tmp_path, "job", "cancel", live, "999999999", "--yes", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    res = {x["target"]: x for x in json.loads(r.stdout)["results"]}
    assert res[live]["status"] == "done" and job_fields(cluster, live)["state"] == "CANCELLED"
    assert res["999999999"]["status"] == "failed"
    assert "Invalid job id specified" in res["999999999"]["detail"]
    # Cancelling it again: Slurm says why (scancel alone would exit 0 in silence).
    r = cockpit(cluster, tmp_path, "job", "cancel", live, "--yes")
    assert r.returncode == 1 and "FAILED" in r.stdout


def test_node_actions_with_a_hostile_reason_read_back_exactly(cluster, tmp_path, node3):
    r = cockpit(cluster, tmp_path, "node", "drain", NODE, "--reason", HOSTILE, "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    flags, reason = node_info(cluster)
    assert "DRAIN" in flags and reason == HOSTILE
    assert not Path("/tmp/cockpit-pwned").exists()
    r = cockpit(cluster, tmp_path, "node", "resume", NODE, "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DRAIN" not in node_info(cluster)[0]
    # ReturnToService=2: a DOWN node that registers is back in service at once, and a
    # resumed node registers again shortly after. cockpit reads the state back and says
    # "node not down" when that race wins (truthfully), so try again until DOWN sticks.
    # The same race can also undo a DOWN between cockpit's read-back and ours.
    for _ in range(10):
        r = cockpit(cluster, tmp_path, "node", "down", NODE, "--template", "thermal", "--reason", "GPU 5 at 95C", "--yes")
        if r.returncode == 0 and "DOWN" in (info := node_info(cluster))[0]:
            break
        assert r.returncode == 0 or "node not down" in r.stdout, r.stdout + r.stderr
        time.sleep(1)
    assert r.returncode == 0, r.stdout + r.stderr
    flags, reason = info
    assert "DOWN" in flags and reason == "thermal: GPU or node overheating: GPU 5 at 95C"
    r = cockpit(cluster, tmp_path, "node", "resume", NODE, "--yes")
    # If registration already brought it back, Slurm refuses the resume, and we say so
    # (22.05/24.11: "Invalid node state specified"; 26.05: "Invalid node state transition").
    assert r.returncode == 0 or "Invalid node state specified" in r.stdout \
        or "Invalid node state transition" in r.stdout, r.stdout + r.stderr
    wait_for(lambda: "DOWN" not in node_info(cluster)[0], "node03 up again")
    assert cockpit(cluster, tmp_path, "node", "drain", NODE, "--template", "ecc", "--yes").returncode == 0
    r = cockpit(cluster, tmp_path, "node", "undrain", NODE, "--yes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DRAIN" not in node_info(cluster)[0]


def test_reboot_asap_is_requested_on_a_busy_node(cluster, tmp_path, jobs, node3):
    # A job keeps the node busy, so "reboot ASAP" stays requested (DRAIN +
    # REBOOT_REQUESTED) and is cancelled before RebootProgram would ever run.
    busy = submit(cluster, "sleep 300", "-w", NODE)
    jobs.append(busy)
    wait_for(lambda: job_fields(cluster, busy)["state"] == "RUNNING", "the busy job to run")
    try:
        r = cockpit(cluster, tmp_path, "node", "reboot", NODE, "--template", "xid79", "--yes", "--json")
        res = json.loads(r.stdout)["results"][0]
        assert r.returncode == 0 and res["status"] == "done", res
        flags = node_info(cluster)[0]
        assert any(f.startswith("REBOOT") for f in flags) and "DRAIN" in flags, flags
        assert res["argv"][:3] == ["scontrol", "reboot", "ASAP"] and "nextstate=resume" in res["argv"]
    finally:
        slurm(cluster, "scontrol", "cancel_reboot", NODE, check=False)
        slurm(cluster, "scancel", busy, check=False)


def test_bulk_drain_partial_failure_keeps_the_audit_log_valid(cluster, tmp_path, node3):
    r = cockpit(cluster, tmp_path, "node", "drain", f"{NODE},nodeXX", "--reason", HOSTILE, "--yes")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Invalid node name specified" in r.stdout
    assert "DRAIN" in node_info(cluster)[0]
    recs = read_audit(tmp_path / "state" / "cockpit" / "audit.jsonl")
    assert [(x["target"], x["result"]) for x in recs] == [(NODE, "done"), ("nodeXX", "failed")]
    assert "Invalid node name specified" in recs[1]["error"]
    assert recs[0]["argv"][-1] == "Reason=" + HOSTILE


def _as_user_bin_dir(cluster, tmp_path) -> Path:
    user = cluster.get("COCKPIT_TEST_UNPRIV_USER", "cockpit-user")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for prog in ("scancel", "scontrol", "squeue"):
        real = subprocess.run(["sh", "-c", f"command -v {prog}"], capture_output=True, text=True).stdout.strip()
        script = bindir / prog
        script.write_text(f'#!/bin/sh\nexec runuser -u {user} -- env SLURM_CONF="$SLURM_CONF" {real} "$@"\n')
        script.chmod(0o755)
    return bindir


def test_non_operator_gets_slurms_refusal_per_target_and_audited(cluster, tmp_path, jobs, node3):
    root_job = submit(cluster, "sleep 300", "--hold")
    jobs.append(root_job)
    cfg = tmp_path / "cockpit.toml"
    audit = tmp_path / "audit.jsonl"
    cfg.write_text(f'[general]\nslurm_bin_dir = "{_as_user_bin_dir(cluster, tmp_path)}"\naudit_log = "{audit}"\n')
    r = cockpit(cluster, tmp_path, "--config", str(cfg), "job", "cancel", root_job, "--yes", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Access/permission denied" in json.loads(r.stdout)["results"][0]["detail"]
    assert job_fields(cluster, root_job)["state"] == "PENDING"
    r = cockpit(cluster, tmp_path, "--config", str(cfg), "node", "drain", NODE, "--reason", "not mine", "--yes")
    # 22.05 answers a non-admin node update with "Invalid user id"; later versions may
    # say "Access/permission denied". Either way Slurm's own line is what we print.
    assert r.returncode == 1, r.stdout + r.stderr
    assert "slurm_update error: Invalid user id" in r.stdout or "Access/permission denied" in r.stdout
    assert "DRAIN" not in node_info(cluster)[0]
    recs = read_audit(audit)
    assert [x["result"] for x in recs] == ["failed", "failed"]
    assert "Access/permission denied" in recs[0]["error"] and recs[1]["error"] in r.stdout


def test_read_only_refuses_every_action_and_changes_nothing(cluster, tmp_path, jobs, node3):
    job = submit(cluster, "sleep 300", "--hold")
    jobs.append(job)
    before_job, before_node = job_fields(cluster, job), node_info(cluster)
    commands = [["job", a, job] for a in ("cancel", "requeue", "hold", "release", "top")] + [
        ["job", "signal", "-s", "KILL", job], ["job", "timelimit", "-t", "5", job], ["job", "nice", "--value", "9", job],
        ["node", "drain", NODE, "-r", "x"], ["node", "down", NODE, "-r", "x"], ["node", "reboot", NODE, "-r", "x"],
        ["node", "resume", NODE], ["node", "undrain", NODE]]
    for cmd in commands:
        r = cockpit(cluster, tmp_path, "--read-only", *cmd, "--yes")
        assert r.returncode == 2 and "read-only mode: refusing" in r.stderr, (cmd, r.stderr)
    # Other tests' jobs may make node03 MIXED meanwhile: compare what our actions would change.
    after_flags, after_reason = node_info(cluster)
    assert job_fields(cluster, job) == before_job
    if {"DRAIN", "DOWN", "DRAINED"} & before_node[0]:
        # Only a drained/down node's reason is ours to keep: 24.11 keeps a stale
        # reason after RESUME and its grouped sinfo may drop it at any time.
        assert after_reason == before_node[1]
    assert {"DRAIN", "DOWN", "DRAINED"} & after_flags == {"DRAIN", "DOWN", "DRAINED"} & before_node[0]
    recs = read_audit(tmp_path / "state" / "cockpit" / "audit.jsonl")
    assert len(recs) == len(commands) and {x["result"] for x in recs} == {"refused"}


async def test_read_only_covers_plugin_actions(cluster, tmp_path, node3):
    from cockpit.backends.slurm_cli import SlurmCliBackend
    from cockpit.core.audit import AuditLog
    from cockpit.errors import ReadOnlyError
    from cockpit.runner import LocalRunner
    from pluginctx import make_ctx

    runner = LocalRunner(env=dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"]))
    ctx = make_ctx(SlurmCliBackend(runner), read_only=True, audit=AuditLog(tmp_path / "a.jsonl"))
    with pytest.raises(ReadOnlyError):  # what a runbook does to a straggler's node
        await ctx.actions.execute(ctx.actions.plan("drain", [NODE], reason="runbook: straggler"))
    with pytest.raises(ReadOnlyError):  # a plugin's submission
        await ctx.jobs.submit("#!/bin/sh\ntrue\n", where=NODE)
    assert "DRAIN" not in node_info(cluster)[0]
    assert [x["result"] for x in read_audit(tmp_path / "a.jsonl")] == ["refused", "refused"]
