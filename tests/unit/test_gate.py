"""The one gate: submissions and plugin plans, the confirmation policies, the audit of
scripts and cleanups, and the guard that keeps state changes out of probes."""

from __future__ import annotations

import json

import pytest

from cockpit.backends._demo.executor import DemoExecutor
from cockpit.backends.demo import DemoBackend
from cockpit.core.actions import (
    Actions,
    ConfirmationNeeded,
    Declined,
    build_custom_plan,
    build_plan,
    build_submit_plan,
    yes_policy,
)
from cockpit.core.audit import AuditLog, read_audit
from cockpit.errors import BackendError, ReadOnlyError, UsageError
from cockpit.models.actions import mutating_reason
from cockpit.remote.probes import NoProbes, refuse_mutating

SCRIPT = "#!/bin/bash\n#SBATCH --nodelist=node[01-02]\n#SBATCH --output=/tmp/x-%j.out\nsrun true\n"


class Recorder:
    """An executor that records steps and answers like sbatch --parsable would."""

    description = "recorder"

    def __init__(self) -> None:
        self.steps = []

    async def execute(self, spec, step, params):
        from cockpit.models.actions import TargetResult

        self.steps.append(step)
        if step.argv[0] == "sbatch":
            return TargetResult(step.target, step.argv, "done", "Submitted batch job 77", 0, "77")
        return TargetResult(step.target, step.argv, "done", "", 0)


def test_submit_plan_shows_mkdir_then_sbatch_with_the_script():
    plan = build_submit_plan(SCRIPT, "node[01-02]", "/tmp/out dir")
    assert [list(s.argv) for s in plan.steps] == [["mkdir", "-p", "--", "/tmp/out dir"], ["sbatch", "--parsable"]]
    assert plan.steps[1].stdin == SCRIPT and plan.scripts() == [SCRIPT]
    assert plan.describe()[1] == "sbatch --parsable  < script on stdin (4 lines)"
    assert plan.to_dict()["scripts"] == [SCRIPT] and plan.targets == ("node[01-02]",)


@pytest.mark.parametrize("script", ["echo no shebang\n", ""])
def test_submit_plan_refuses_a_script_sbatch_would_refuse(script):
    with pytest.raises(UsageError, match="#!"):
        build_submit_plan(script, "node01")


def test_submit_plan_refuses_control_characters_in_its_target():
    with pytest.raises(UsageError, match="bad target"):
        build_submit_plan(SCRIPT, "node01\x1b[2J")


def test_submit_is_not_an_operator_action_by_name():
    with pytest.raises(UsageError, match="unknown action 'submit'"):
        build_plan("submit", ["node01"])


def test_custom_plan_takes_slurm_admin_commands_only():
    plan = build_custom_plan("x.requeue", "Requeue", "42", [("scontrol", "requeuehold", "42"), ("scontrol", "release", "42")])
    assert [s.argv[1] for s in plan.steps] == ["requeuehold", "release"]
    with pytest.raises(UsageError, match="may run scancel, scontrol only"):
        build_custom_plan("x.evil", "Evil", "42", [("ssh", "node01", "reboot")])
    with pytest.raises(UsageError, match="bad job id"):
        build_custom_plan("x.requeue", "Requeue", "--user=root", [("scontrol", "hold", "1")])


async def test_no_policy_means_nothing_runs_unconfirmed(tmp_path):
    rec = Recorder()
    gate = Actions(rec, audit=AuditLog(tmp_path / "audit.jsonl"))
    with pytest.raises(ConfirmationNeeded) as err:
        await gate.execute(build_plan("cancel", ["5"]))
    assert err.value.plan.targets == ("5",) and rec.steps == []
    assert read_audit(tmp_path / "audit.jsonl") == []  # nothing ran, nothing to audit


async def test_yes_policy_runs_and_audits_the_script(tmp_path):
    rec = Recorder()
    gate = Actions(rec, audit=AuditLog(tmp_path / "audit.jsonl"), confirm=yes_policy(True))
    out = await gate.execute(build_submit_plan(SCRIPT, "node[01-02]", "/tmp/o"))
    assert out.ok and out.results[-1].value == "77"
    lines = read_audit(tmp_path / "audit.jsonl")
    assert [r["argv"][0] for r in lines] == ["mkdir", "sbatch"]
    assert lines[1]["stdin"] == SCRIPT and lines[1]["value"] == "77" and lines[1]["action"] == "submit"
    assert "stdin" not in lines[0]


async def test_without_yes_the_plan_comes_back(tmp_path):
    gate = Actions(Recorder(), audit=AuditLog(tmp_path / "a.jsonl"), confirm=yes_policy(False))
    with pytest.raises(ConfirmationNeeded):
        await gate.execute(build_submit_plan(SCRIPT, "node01"))


async def test_declined_runs_nothing(tmp_path):
    async def no(_plan):
        return False

    rec = Recorder()
    with pytest.raises(Declined):
        await Actions(rec, confirm=no).execute(build_plan("resume", ["node01"]))
    assert rec.steps == []


async def test_read_only_refuses_before_asking_and_audits(tmp_path):
    asked = []

    async def confirm(plan):
        asked.append(plan)
        return True

    gate = Actions(Recorder(), read_only=True, audit=AuditLog(tmp_path / "a.jsonl"), confirm=confirm)
    with pytest.raises(ReadOnlyError):
        await gate.execute(build_submit_plan(SCRIPT, "node[01-02]"))
    assert asked == []
    rec = read_audit(tmp_path / "a.jsonl")
    assert rec[0]["result"] == "refused" and rec[0]["action"] == "submit" and rec[0]["targets"] == ["node[01-02]"]


async def test_a_backend_that_cannot_act_says_why():
    gate = Actions(None, confirm=yes_policy(True), cannot_act="a replay of recorded outputs cannot act on a cluster")
    with pytest.raises(BackendError, match="replay of recorded outputs cannot act"):
        await gate.execute(build_plan("cancel", ["1"]))


async def test_cleanup_note_is_audited(tmp_path):
    gate = Actions(Recorder(), audit=AuditLog(tmp_path / "a.jsonl"))
    await gate.execute(build_plan("cancel", ["9"]), confirmed=True, note="check stopped")
    rec = read_audit(tmp_path / "a.jsonl")[0]
    assert rec["note"] == "check stopped" and rec["argv"] == ["scancel", "--verbose", "--", "9"]


async def test_a_multi_step_plan_stops_at_its_first_failure():
    from cockpit.models.actions import TargetResult

    class FailFirst(Recorder):
        async def execute(self, spec, step, params):
            self.steps.append(step)
            return TargetResult(step.target, step.argv, "failed", "mkdir: Permission denied", 1)

    rec = FailFirst()
    out = await Actions(rec, confirm=yes_policy(True)).execute(build_submit_plan(SCRIPT, "n1", "/root/x"))
    assert not out.ok and len(rec.steps) == 1 and rec.steps[0].argv[0] == "mkdir"


async def test_demo_submission_is_simulated(tmp_path):
    backend = DemoBackend(clock=lambda: 1_750_000_000.0)
    gate = Actions(DemoExecutor(backend), audit=AuditLog(tmp_path / "a.jsonl"), confirm=yes_policy(True))
    out = await gate.execute(build_submit_plan(SCRIPT.replace("node[01-02]", "dgx[049-050]"), "dgx[049-050]", "/tmp/o"))
    assert out.ok and out.results[-1].value.isdecimal()
    assert [r.detail for r in out.results] == ["simulated", f"Submitted batch job {out.results[-1].value} (simulated)"]
    job = await backend.fetch_job(out.results[-1].value)
    assert job.nodes == ("dgx049", "dgx050") and job.stdout == f"/tmp/x-{job.job_id}.out"
    bad = await gate.execute(build_submit_plan(SCRIPT.replace("node[01-02]", "gpu[01-02]"), "gpu[01-02]"))
    assert not bad.ok and "Invalid node name specified" in bad.failed[0].detail


@pytest.mark.parametrize(
    ("argv", "bad"),
    [
        (["nvidia-smi", "-q", "-x"], False),
        (["nvidia-smi", "--query-gpu=index,uuid", "--format=csv"], False),
        (["nvidia-smi", "-r", "-i", "0"], True),
        (["nvidia-smi", "--power-limit=300"], True),
        (["env", "SLURMD_NODENAME=n1", "scontrol", "listpids", "5"], False),
        (["scontrol", "show", "node", "n1"], False),
        (["scontrol", "-o", "show", "job", "5"], False),
        (["scontrol", "update", "NodeName=n1", "State=DRAIN"], True),
        (["scontrol", "write", "batch_script", "5", "-"], False),
        (["scontrol", "write", "batch_script", "5", "/etc/passwd"], True),
        (["/usr/bin/scancel", "5"], True),
        (["sudo", "reboot"], True),
        (["timeout", "5", "kill", "-9", "1"], True),
        (["py-spy", "dump", "--pid", "3"], False),
        (["sacctmgr", "-n", "show", "event"], False),
        (["sacctmgr", "delete", "user", "x"], True),
        (["sbatch", "--parsable"], True),
        (["dmesg", "-T"], False),
        (["sh", "-c", "rm -rf /tmp/x"], True),
        (["bash", "-c", "cat /etc/hostname"], True),  # only cockpit's own fixed scripts
        (["xargs", "scancel"], True),
        (["python3", "-c", "import os"], True),
        (["find", "/var", "-delete"], True),
        (["find", "/sys/class/infiniband", "-name", "rate"], False),
        (["ip", "-j", "link", "show"], False),
        (["ip", "link", "set", "eth0", "down"], True),
        (["ethtool", "eth0"], False),
        (["ethtool", "-s", "eth0", "speed", "100"], True),
        (["sed", "-n", "1p", "/etc/hostname"], False),
        (["sed", "-i", "s/a/b/", "/etc/hosts"], True),
    ],
)
def test_probes_refuse_state_changing_commands(argv, bad):
    from cockpit.models.actions import IB_SYSFS_DUMP

    assert mutating_reason(["sh", "-c", IB_SYSFS_DUMP]) is None
    assert (mutating_reason(argv) is not None) == bad
    if bad:
        with pytest.raises(UsageError, match="read-only commands only"):
            refuse_mutating(argv)


async def test_no_probes_answer_why_without_running_anything():
    probes = NoProbes("replay has no nodes to ask")
    out = await probes.on_nodes(["n1", "n2"], ["dmesg"])
    assert {n: (o.ok, o.error) for n, o in out.items()} == {"n1": (False, "replay has no nodes to ask"),
                                                             "n2": (False, "replay has no nodes to ask")}
    with pytest.raises(UsageError):
        await probes.on_nodes(["n1"], ["scancel", "1"])
    assert json.dumps({"x": (await probes.on_slurm_host(["cat", "/x"])).error})


async def test_the_audit_line_comes_first_and_a_crash_mid_step_reads_as_unknown(tmp_path):
    class Crash(Recorder):
        async def execute(self, spec, step, params):
            raise KeyboardInterrupt  # cockpit dies while the command runs

    path = tmp_path / "a.jsonl"
    with pytest.raises(KeyboardInterrupt):
        await Actions(Crash(), audit=AuditLog(path), confirm=yes_policy(True)).execute(build_plan("resume", ["n1"]))
    (rec,) = read_audit(path)
    assert rec["result"] == "unknown" and "no result was recorded" in rec["error"] and rec["target"] == "n1"
    assert [r["result"] for r in read_audit(path, raw=True)] == ["started"]


async def test_an_unknown_step_is_read_again_until_there_is_evidence(tmp_path):
    from cockpit.models.actions import TargetResult

    class Flaky(Recorder):
        rereads = 0

        async def execute(self, spec, step, params):
            return TargetResult(step.target, step.argv, "unknown", "outcome unknown: timed out", None)

        async def reread(self, spec, step, params):
            self.rereads += 1
            return None if self.rereads < 3 else TargetResult(step.target, step.argv, "done", "read back")

    ex = Flaky()
    out = await Actions(ex, audit=AuditLog(tmp_path / "a.jsonl"), confirm=yes_policy(True),
                        settle=(0, 0, 0, 0)).execute(build_plan("hold", ["7"]))
    assert out.ok and ex.rereads == 3 and out.results[0].detail == "outcome unknown: timed out; read back"
    ex2 = Flaky()
    ex2.rereads = -100  # never finds evidence within the settle schedule
    out2 = await Actions(ex2, confirm=yes_policy(True), settle=(0, 0)).execute(build_plan("hold", ["7"]))
    assert out2.results[0].status == "unknown" and not out2.ok
