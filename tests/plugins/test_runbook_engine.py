"""Runbook files (loading, errors with path and line), the engine's branching and
proposals, and the headless command on post-mortem files (no cluster needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.actions import Actions, TargetResult, yes_policy
from cockpit.core.audit import AuditLog, read_audit
from pluginctx import make_ctx
from cockpit_runbooks import load_runbooks
from cockpit_runbooks.context import RunContext
from cockpit_runbooks.engine import PROBES, action_names, run_runbook
from cockpit_runbooks.model import BUNDLED_DIR, load_all, parse_runbook

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
GOOD = 'name = "mine"\ntarget = "node"\n\n[[steps]]\nid = "x"\nprobe = "kernel_xid"\n'


def test_bundled_runbooks_all_load():
    books, problems = load_all([(BUNDLED_DIR, "bundled")], PROBES, action_names())
    assert problems == []
    assert set(books) == {"hung-job", "gpu-xid", "thermal-power", "infiniband", "pcie", "nvlink", "node-validate"}
    assert [s.id for s in books["hung-job"].steps][:3] == ["progress", "watchdog", "stacks"]


def test_broken_files_are_reported_with_path_and_line_and_the_rest_load(tmp_path, monkeypatch):
    site = tmp_path / "cockpit" / "runbooks"
    site.mkdir(parents=True)
    (site / "good.toml").write_text(GOOD)
    (site / "syntax.toml").write_text('name = "s"\n\n[[steps]]\nid = "a"\nprobe = "kernel_xid\n')
    (site / "probe.toml").write_text('name = "p"\n\n[[steps]]\nid = "a"\nprobe = "kernel_xid"\n\n[[steps]]\nid = "b"\n'
                                     'title = "t"\nprobe = "no_such_probe"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    books, problems = load_runbooks()
    assert "mine" in books and "hung-job" in books
    by_file = {Path(p.path).name: p for p in problems}
    assert set(by_file) == {"syntax.toml", "probe.toml"}
    assert by_file["syntax.toml"].line == 5 and "TOML syntax error" in by_file["syntax.toml"].message
    assert by_file["probe.toml"].line == 10 and "unknown probe 'no_such_probe'" in by_file["probe.toml"].message
    assert str(by_file["probe.toml"]).startswith(f"{site / 'probe.toml'}:10: ")


def test_bad_conditions_and_jumps_are_refused():
    bad_when = GOOD + 'when = "sometimes"\n'
    for text, needle in ((bad_when, "bad condition"), (GOOD + 'next = "nowhere"\n', "next names no step"),
                         (GOOD + 'action = "explode"\n', "unknown action")):
        try:
            parse_runbook(text, "x.toml", PROBES, action_names())
        except ValueError as exc:
            assert needle in str(exc)
            assert exc.line == 7
        else:
            raise AssertionError(f"accepted: {text!r}")


class _Exec:
    description = "fake"

    def __init__(self):
        self.ran = []

    async def execute(self, spec, step, params):
        self.ran.append(step.argv)
        return TargetResult(step.target, step.argv, "done", "", 0)


def _ctx(tmp_path, read_only=False):
    ex = _Exec()
    actions = Actions(ex, read_only=read_only, audit=AuditLog(tmp_path / "audit.jsonl"), confirm=yes_policy(True))
    return make_ctx(config={"temp_warn_c": 85.0, "dump_signal": "USR1"}, actions=actions), ex


async def test_xid_runbook_branches_to_reboot_and_proposes_without_acting(tmp_path):
    books, _ = load_runbooks()
    ctx, ex = _ctx(tmp_path)
    rc = RunContext(ctx, node="gpu07", kernel_logs=(str(DATA / "xid-dmesg/pop-os-issue3363-xid79-journalctl-EXCERPT.txt"),),
                    smi_files=(str(DATA / "nvidia-smi-q/nvidia-smi-q-ecc-row-remap-pending-a100-xid63-ml-engineering.txt"),))
    rep = await run_runbook(books["gpu-xid"], rc, "propose")
    steps = {s.id: s for s in rep.steps}
    assert steps["reboot"].status == "proposed"
    assert steps["reboot"].argv == [["scontrol", "reboot", "ASAP", "nextstate=resume",
                                     "reason=Xid 79 RESTART_BM PCI 0000:01:00 (cockpit runbook gpu-xid)", "gpu07"]]
    assert steps["drain"].status == "skipped"  # next = "end" after the reboot step
    assert rep.exit_code == 2 and ex.ran == []


async def test_act_mode_runs_through_actions_and_history_suggests_rma(tmp_path):
    books, _ = load_runbooks()
    log = str(DATA / "xid-dmesg/gpud-dmesg-T-xid119-gsp-rpc-timeout-xe9680.log")
    ctx, ex = _ctx(tmp_path)
    rep = await run_runbook(books["gpu-xid"], RunContext(ctx, node="gpu07", kernel_logs=(log,)), "act")
    assert {s.id: s.status for s in rep.steps}["drain"] == "done"
    assert ex.ran == [("scontrol", "update", "NodeName=gpu07", "State=DRAIN",
                       "Reason=Xid 119 RESET_GPU PCI 0000:9b:00 (cockpit runbook gpu-xid)")]
    assert not any(f.rule == "xid.rma" for f in rep.findings)
    # the same GPU again: the audit log remembers the first drain
    ctx2, _ = _ctx(tmp_path)
    rep2 = await run_runbook(books["gpu-xid"], RunContext(ctx2, node="gpu07", kernel_logs=(log,)), "propose")
    assert any(f.rule == "xid.rma" for f in rep2.findings)
    assert [r["action"] for r in read_audit(tmp_path / "audit.jsonl")] == ["drain"]


async def test_read_only_refuses_and_says_so(tmp_path):
    books, _ = load_runbooks()
    ctx, ex = _ctx(tmp_path, read_only=True)
    log = str(DATA / "xid-dmesg/modal-docs-gpu-health-xid79-line.txt")
    rep = await run_runbook(books["gpu-xid"], RunContext(ctx, node="gpu07", kernel_logs=(log,)), "act")
    reboot = {s.id: s for s in rep.steps}["reboot"]
    assert reboot.status == "refused" and "read-only" in reboot.why and ex.ran == []


def _cli(tmp_path, *args):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--demo", "runbook", *args],
                          capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def test_headless_post_mortem_hung_job_from_a_copied_log(tmp_path):
    log = DATA / "pytorch-nccl-timeout/pytorch-issue118369-legacy-format-seqnum-skew-EXCERPT.log"
    res = _cli(tmp_path, "run", "hung-job", "--job-log", str(log), "--json")
    rep = json.loads(res.stdout)
    assert res.returncode == rep["exit_code"] == 2
    wd = {s["id"]: s for s in rep["steps"]}["watchdog"]
    assert {f["rule"] for f in wd["findings"]} >= {"watchdog.timeout", "straggler.logs"}
    assert rep["facts"]["straggler_ranks"] == [7]
    assert "NCCL_TIMEOUT does not exist" in json.dumps(rep)


def test_headless_list_and_bad_name(tmp_path):
    res = _cli(tmp_path, "list", "--json")
    assert res.returncode == 0 and "hung-job" in {b["name"] for b in json.loads(res.stdout)["runbooks"]}
    bad = _cli(tmp_path, "run", "no-such-book", "--node", "n1")
    assert bad.returncode == 3 and bad.stderr.strip().splitlines()[-1].startswith("cockpit: unknown runbook 'no-such-book'")


# -- requeue-exclude adds to the job's own ExcNodeList (Slurm's update replaces it) --
def test_requeue_exclude_keeps_the_jobs_own_exclusions():
    from cockpit_runbooks.engine import _requeue_exclude_plan

    rc = RunContext(make_ctx())
    plan = _requeue_exclude_plan(rc, "42", "node07", "node[01,03]")
    assert [list(s.argv) for s in plan.steps] == [["scontrol", "requeuehold", "42"],
                                                  ["scontrol", "update", "JobId=42", "ExcNodeList=node01,node03,node07"],
                                                  ["scontrol", "release", "42"]]
    assert _requeue_exclude_plan(rc, "42", "node03", "node03").steps[1].argv[-1] == "ExcNodeList=node03"
    assert _requeue_exclude_plan(rc, "42", "node03").steps[1].argv[-1] == "ExcNodeList=node03"


class _SqueueRunner:
    def __init__(self, rc: int, stdout: bytes, stderr: bytes = b"") -> None:
        self.rc, self.stdout, self.stderr, self.argv = rc, stdout, stderr, None

    async def run(self, argv, timeout=None, stdin=None):
        from cockpit.runner import CommandResult

        self.argv = list(argv)
        return CommandResult(tuple(argv), self.rc, self.stdout, self.stderr, 0.01)


async def test_the_jobs_exclusions_are_read_from_squeue_json_and_a_failure_stops_the_requeue():
    from cockpit.backends.slurm_cli import SlurmCliBackend
    from cockpit.errors import CockpitError

    doc = json.loads((DATA / "slurm-22.05/squeue.json").read_bytes())
    job = doc["jobs"][0]
    job["excluded_nodes"] = "node[02-03]"
    job["name"] = 'x" excluded_nodes="node99'  # data, not a field
    runner = _SqueueRunner(0, json.dumps(doc).encode())
    assert await SlurmCliBackend(runner).job_excluded_nodes(str(job["job_id"])) == "node[02-03]"
    assert runner.argv == ["squeue", "--all", "--json", "--jobs", str(job["job_id"])]
    failing = SlurmCliBackend(_SqueueRunner(1, b"", b"slurm_load_jobs error: Unable to contact slurm controller"))
    with pytest.raises(CockpitError, match="Unable to contact slurm controller"):
        await failing.job_excluded_nodes("42")
