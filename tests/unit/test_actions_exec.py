"""Executing actions: read-only, audit lines, per-target results, Slurm's own words.

The Runner here replays answers per argv; the real Slurm behaviour behind
those answers (scancel exiting 0 on an unknown job, etc.) is exercised in
tests/cluster/test_actions_cluster.py.
"""

from __future__ import annotations

import json
import os

import pytest

from cockpit.runner import CommandResult
from cockpit.backends._demo.executor import DemoExecutor
from cockpit.backends.slurm_exec import SlurmExecutor, _minutes
from cockpit.core.actions import Actions, Params, build_plan, yes_policy
from cockpit.core.audit import AuditLog, read_audit
from cockpit.errors import CommandTimeout, ConfigError, ReadOnlyError


# These tests exercise execution: the operator has said yes (the policy tests: test_gate.py).
YES = yes_policy(True)


class ScriptedRunner:
    """Answers by the first argv element plus target; records every call."""

    description = "scripted"

    def __init__(self, answers=None):
        self.answers = answers or {}
        self.calls: list[tuple[str, ...]] = []

    async def run(self, argv, *, timeout=None, stdin=None):
        argv = tuple(argv)
        self.calls.append(argv)
        for key, ans in self.answers.items():
            if key(argv) if callable(key) else key == argv:
                if isinstance(ans, Exception):
                    raise ans
                rc, out, err = ans
                return CommandResult(argv, rc, out.encode(), err.encode())
        return CommandResult(argv, 0, b"", b"")


def _actions(tmp_path, runner, read_only=False, read_back=False):
    audit = AuditLog(tmp_path / "state" / "audit.jsonl")
    return Actions(SlurmExecutor(runner, read_back=read_back), read_only=read_only, audit=audit, confirm=YES,
                   settle=()), audit


async def test_read_only_refuses_runs_nothing_and_audits_the_refusal(tmp_path):
    runner = ScriptedRunner()
    actions, audit = _actions(tmp_path, runner, read_only=True)
    for name, targets, kw in [("cancel", ["1"], {}), ("drain", ["node01"], {"reason": "x"}),
                              ("reboot", ["node[01-02]"], {"reason": "x"})]:
        with pytest.raises(ReadOnlyError, match="read-only mode: refusing to " + name):
            await actions.run(name, targets, **kw)
    with pytest.raises(ReadOnlyError, match="runbook-drain"):
        actions.refuse_if_read_only("runbook-drain", ["node03"])
    assert runner.calls == []
    recs = read_audit(audit.path)
    assert [r["result"] for r in recs] == ["refused"] * 4
    assert recs[2]["targets"] == ["node01", "node02"]


async def test_dry_run_runs_nothing_even_read_only(tmp_path):
    runner = ScriptedRunner()
    actions, audit = _actions(tmp_path, runner, read_only=True)
    out = await actions.run("cancel", ["1", "2"], dry_run=True)
    assert runner.calls == [] and out.ok and [r.status for r in out.results] == ["dry-run", "dry-run"]
    assert [r["dry_run"] for r in read_audit(audit.path)] == [True, True]


async def test_partial_failure_reports_each_target_and_audit_stays_json_lines(tmp_path):
    err = "slurm_update error: Invalid node name specified\n"
    runner = ScriptedRunner({lambda a: "NodeName=nodeXX" in a: (1, "", err)})
    actions, audit = _actions(tmp_path, runner)
    reason = "IB link\nsecond line \u2028 sep; $(id) [b]x[/b]"
    out = await actions.run("drain", ["node01", "nodeXX", "node02"], reason=reason)
    assert [r.status for r in out.results] == ["done", "failed", "done"]
    assert out.results[1].detail == err.strip() and out.exit_code == 1
    raw = audit.path.read_bytes()
    assert raw.count(b"\n") == 6 and raw.isascii()  # a "started" line before each step, then its result
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [r["result"] for r in lines] == ["started", "done", "started", "failed", "started", "done"]
    recs = read_audit(audit.path)
    assert [r["target"] for r in recs] == ["node01", "nodeXX", "node02"]
    assert recs[1]["error"] == err.strip() and recs[1]["result"] == "failed"
    assert recs[0]["argv"][-1] == "Reason=" + reason  # verbatim, through JSON
    assert len({r["invocation"] for r in recs}) == 1
    for key in ("time", "user", "sudo_user", "host", "action", "targets", "argv", "result", "error", "dry_run"):
        assert key in recs[0]
    assert oct(os.stat(audit.path).st_mode & 0o777) == "0o600"


async def test_exit_zero_with_error_on_stderr_is_a_failure(tmp_path):
    # scancel --verbose on 22.05: exit 0, the reason only on stderr.
    err = "scancel: Terminating job 7\nscancel: error: Kill job error on job id 7: Invalid job id specified\n"
    runner = ScriptedRunner({lambda a: a[0] == "scancel": (0, "", err)})
    actions, _ = _actions(tmp_path, runner)
    out = await actions.run("cancel", ["7"])
    assert not out.ok and "Invalid job id specified" in out.results[0].detail


async def test_runner_errors_become_per_target_failures(tmp_path):
    runner = ScriptedRunner({lambda a: a[-1] == "2": CommandTimeout("scontrol did not answer within 30 s")})
    actions, _ = _actions(tmp_path, runner)
    out = await actions.run("hold", ["1", "2"])
    # A timeout after the command was sent proves nothing either way.
    assert [r.status for r in out.results] == ["done", "unknown"]
    assert "outcome unknown" in out.results[1].detail and "did not answer" in out.results[1].detail


@pytest.mark.parametrize(
    ("action", "params", "readback", "problem"),
    [
        ("cancel", {}, "COMPLETED 10:00 0 1 None", "already finished (COMPLETED)"),
        ("cancel", {}, "RUNNING 10:00 0 1 None", "still RUNNING"),
        ("cancel", {}, "CANCELLED 10:00 0 1 None", None),
        ("hold", {}, "PENDING 10:00 0 1 Priority", "not held"),
        ("hold", {}, "PENDING 10:00 0 0 JobHeldAdmin", None),
        ("release", {}, "PENDING 10:00 0 0 JobHeldUser", "still held"),
        ("nice", {"nice": 5}, "PENDING 10:00 0 1 None", "nice is 0, not 5"),
        ("timelimit", {"time_limit": "2:00:00"}, "PENDING 1:00:00 0 1 None", "time limit is 1:00:00"),
        ("timelimit", {"time_limit": "120"}, "PENDING 2:00:00 0 1 None", None),
    ],
)
async def test_job_read_back(tmp_path, action, params, readback, problem):
    runner = ScriptedRunner({lambda a: a[0] == "squeue": (0, readback + "\n", "")})
    actions, _ = _actions(tmp_path, runner, read_back=True)
    out = await actions.run(action, ["9"], **params)
    res = out.results[0]
    assert ("squeue", "-h", "-t", "all", "-j", "9", "-o", "%T %l %y %Q %r") in runner.calls
    if problem is None:
        assert res.ok, res.detail
    else:
        assert not res.ok and problem in res.detail


@pytest.mark.parametrize(
    ("action", "state", "ok"),
    [("drain", "IDLE+DRAIN", True), ("drain", "IDLE", False), ("resume", "IDLE", True),
     ("resume", "IDLE+DRAIN", False), ("down", "DOWN+DRAIN", True), ("down", "IDLE", False),
     ("reboot", "MIXED+DRAIN+REBOOT_REQUESTED", True), ("reboot", "IDLE", False)],
)
async def test_node_read_back_uses_slurms_state_not_a_lookalike_in_the_reason(tmp_path, action, state, ok):
    line = f"NodeName=node01 Arch=x86_64 State={state} ThreadsPerCore=1 Reason=fake State=IDLE+DRAIN+DOWN+REBOOT\n"
    runner = ScriptedRunner({lambda a: a[:2] == ("scontrol", "show"): (0, line, "")})
    actions, _ = _actions(tmp_path, runner, read_back=True)
    out = await actions.run(action, ["node01"], **({"reason": "r"} if action in ("drain", "down", "reboot") else {}))
    assert out.ok is ok


async def test_bin_dir_prefixes_the_program(tmp_path):
    runner = ScriptedRunner()
    ex = SlurmExecutor(runner, bin_dir="/opt/slurm/bin", read_back=False)
    out = await Actions(ex, confirm=YES).run("release", ["3"])
    assert runner.calls == [("/opt/slurm/bin/scontrol", "release", "3")]
    assert out.results[0].argv[0] == "/opt/slurm/bin/scontrol"


async def test_unwritable_audit_log_stops_the_action_before_it_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    runner = ScriptedRunner()
    actions = Actions(SlurmExecutor(runner), audit=AuditLog(blocker / "audit.jsonl"), confirm=YES)
    with pytest.raises(ConfigError, match="audit log .* not writable"):
        await actions.run("cancel", ["1"])
    assert runner.calls == []


class DemoCluster:
    name = "demo"

    def __init__(self):
        self.drained: dict[str, str] = {}

    def drain_node(self, node, reason):
        if not node.startswith("node"):
            raise KeyError(f"Invalid node name specified: {node}")
        self.drained[node] = reason

    async def cancel_job(self, job):
        return False


async def test_demo_executor_goes_through_the_same_gate(tmp_path):
    demo = DemoCluster()
    audit = AuditLog(tmp_path / "a.jsonl")
    actions = Actions(DemoExecutor(demo), audit=audit, confirm=YES)
    out = await actions.run("drain", ["node01", "bad1"], reason="ECC")
    assert demo.drained == {"node01": "ECC"}
    assert [r.status for r in out.results] == ["done", "failed"]
    assert "Invalid node name specified: bad1" in out.results[1].detail
    assert not (await actions.run("cancel", ["5"])).ok
    assert not (await actions.run("hold", ["5"])).ok  # no such demo method: failed, never "done"
    assert [r["executor"] for r in read_audit(audit.path)] == ["demo (simulated)"] * 4
    ro = Actions(DemoExecutor(demo), read_only=True, audit=audit, confirm=YES)
    with pytest.raises(ReadOnlyError):
        await ro.run("drain", ["node02"], reason="x")
    assert "node02" not in demo.drained


def test_minutes():
    assert [_minutes(s) for s in ("10", "1:00:00", "2:30", "1-00:00:00", "1-2", "0:59", "UNLIMITED")] == [
        10, 60, 3, 1440, 1560, 1, None]


def test_params_to_dict_keeps_only_what_was_given():
    assert Params(reason="r").to_dict() == {"reason": "r"}
    assert Params(reason="r", nextstate="down").to_dict() == {"reason": "r", "nextstate": "down"}
    assert build_plan("nice", ["1"], Params(nice=0)).params.to_dict()["nice"] == 0


async def test_the_real_demo_backend_through_the_same_gate(tmp_path):
    demo_mod = pytest.importorskip("cockpit.backends.demo")
    demo = demo_mod.DemoBackend()
    jobs = await demo.fetch_jobs()
    pending = next(j for j in jobs if j.state == "PENDING")
    node = (await demo.fetch_nodes())[0].name
    audit = AuditLog(tmp_path / "a.jsonl")
    actions = Actions(DemoExecutor(demo), audit=audit, confirm=YES)
    out = await actions.run("hold", [str(pending.job_id), "99999999"])
    assert [r.status for r in out.results] == ["done", "failed"]
    assert out.results[1].detail.endswith("Invalid job id specified")
    assert "JobHeld" in next(j for j in await demo.fetch_jobs() if j.job_id == pending.job_id).reason
    out = await actions.run("drain", [node, "nodeXX"], reason="ECC; $(id)")
    assert [r.status for r in out.results] == ["done", "failed"]
    assert next(n for n in await demo.fetch_nodes() if n.name == node).reason == "ECC; $(id)"
    assert "Invalid node name specified" in out.results[1].detail
    out = await actions.run("reboot", [node, "nodeXX"], reason="x")  # drained now, rebooted once idle
    assert [r.status for r in out.results] == ["done", "failed"]
    assert "reboot_requested" in next(n for n in await demo.fetch_nodes() if n.name == node).flags
    assert len(read_audit(audit.path)) == 6
