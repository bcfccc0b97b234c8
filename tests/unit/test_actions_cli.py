"""Headless `cockpit job ...` / `cockpit node ...`: the --yes gate, read-only, exit codes, output."""

from __future__ import annotations

import json

import pytest

import cockpit.core.session as session_mod
from cockpit import cli
from cockpit.config import Config, General
from cockpit.core.audit import read_audit
from cockpit.core.session import Session
from test_actions_exec import ScriptedRunner  # tests/unit is on sys.path (rootdir-less layout)
from cockpit.backends.base import Capabilities


class _Backend:
    """A backend whose executor runs the steps through the replaying Runner."""

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    name = "fake"

    def __init__(self, runner):
        self.runner = runner

    def action_executor(self, config):
        from cockpit.backends.slurm_exec import SlurmExecutor

        return SlurmExecutor(self.runner)

    async def close(self):
        pass


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """Every CLI call gets a Session whose Runner replays answers (no Slurm is touched)."""
    state = {"runner": ScriptedRunner(), "read_only": False}
    audit = tmp_path / "audit.jsonl"

    async def open_session(args):
        cfg = Config(general=General(audit_log=str(audit), read_only=state["read_only"]))
        ro = state["read_only"] or bool(getattr(args, "read_only", False))
        return Session(cfg, _Backend(state["runner"]), state["runner"], ro)

    monkeypatch.setattr(session_mod, "open_session", open_session)
    state["audit"] = audit
    return state


def test_without_yes_prints_the_argv_runs_nothing_exit_2(fake, capsys):
    rc = cli.main(["job", "cancel", "11", "12"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "scancel --verbose -- 11" in out and "scancel --verbose -- 12" in out
    assert "add --yes" in err
    assert fake["runner"].calls == []
    assert not fake["audit"].exists() or read_audit(fake["audit"]) == []  # nothing audited


def test_yes_runs_each_target_and_reports_it(fake, capsys):
    fake["runner"].answers = {lambda a: a[-1] == "13": (1, "", "Invalid job id specified for job 13\n")}
    rc = cli.main(["job", "hold", "12", "13", "--yes"])
    out, _ = capsys.readouterr()
    assert rc == 1
    assert ("scontrol", "hold", "12") in fake["runner"].calls
    assert "1 done, 1 failed" in out and "Invalid job id specified for job 13" in out
    assert [r["result"] for r in read_audit(fake["audit"])] == ["done", "failed"]


def test_json_output(fake, capsys):
    rc = cli.main(["node", "drain", "node[01-02]", "--template", "xid79", "--reason", "GPU 3", "--yes", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["ok"] is True
    assert [r["target"] for r in doc["results"]] == ["node01", "node02"]
    assert doc["results"][0]["argv"][-1] == "Reason=Xid 79: GPU fallen off the bus: GPU 3"


def test_dry_run_prints_and_runs_nothing(fake, capsys):
    rc = cli.main(["node", "reboot", "node03", "--reason", "PSU", "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and fake["runner"].calls == []
    assert "scontrol reboot ASAP nextstate=resume reason=PSU node03" in out


@pytest.mark.parametrize("where", ["global", "sub", "config"])
def test_read_only_refuses_with_exit_2(fake, capsys, where):
    argv = ["job", "requeue", "5", "--yes"]
    if where == "global":
        argv = ["--read-only", *argv]
    elif where == "sub":
        argv.append("--read-only")
    else:
        fake["read_only"] = True
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and "read-only mode: refusing to requeue 5" in err
    assert fake["runner"].calls == []
    assert [r["result"] for r in read_audit(fake["audit"])] == ["refused"]


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["node", "drain", "node01", "--yes"], "drain needs a reason"),
        (["job", "cancel", "12;rm", "--yes"], "bad job id '12;rm'"),
        (["job", "signal", "-s", "NOPE", "5", "--yes"], "bad signal 'NOPE'"),
        (["node", "resume", "node[01-", "--yes"], "bad hostlist"),
        (["job", "timelimit", "-t", "soon", "5", "--yes"], "bad time limit 'soon'"),
    ],
)
def test_usage_errors_are_one_line_exit_2(fake, capsys, argv, msg):
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert fake["runner"].calls == []


def test_requeue_hold_and_signal_flags(fake, capsys):
    assert cli.main(["job", "requeue", "--hold", "5", "-y"]) == 0
    assert cli.main(["job", "signal", "-s", "USR1", "--full", "5", "-y"]) == 0
    assert cli.main(["job", "nice", "--value", "-3", "5", "-y"]) == 0
    calls = fake["runner"].calls
    assert ("scontrol", "requeuehold", "5") in calls
    assert ("scancel", "--verbose", "--signal=USR1", "--full", "--", "5") in calls
    assert ("scontrol", "update", "JobId=5", "Nice=-3") in calls


def test_terminal_output_strips_escape_sequences(fake, capsys):
    fake["runner"].answers = {lambda a: True: (1, "", "bad \x1b]52;c;ZXZpbA==\x07 node\n")}
    cli.main(["node", "resume", "node01", "-y"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "bad" in out
