"""--slurm-file on every runbook: the node runbooks read saved Slurm text and daemon
logs (tests/data/slurm-text, SOURCES.md there) as the hung-job runbook does, and judge
what they say about the --node named, not every node the copy shows. The expected
findings were read off the recordings by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXT = ROOT / "tests" / "data" / "slurm-text"
NODE_RUNBOOKS = ("gpu-xid", "infiniband", "node-validate", "nvlink", "pcie", "thermal-power")


def _run(book: str, node: str, *files: str) -> tuple[int, dict]:
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent-cockpit-test", PYTHONPATH=f"{ROOT}:{ROOT}/plugins")
    env.pop("COCKPIT_CONFIG", None)
    argv = [sys.executable, "-m", "cockpit.cli", "runbook", "run", book, "--node", node, "--json"]
    for f in files:
        argv += ["--slurm-file", str(TEXT / f)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _findings(report: dict) -> list[tuple[str, str]]:
    step = next(s for s in report["steps"] if s["id"] == "slurm-files")
    return [(f["severity"], f["title"]) for f in step["findings"]]


@pytest.mark.parametrize("book", NODE_RUNBOOKS)
def test_every_node_runbook_judges_a_saved_slurmctld_log_about_its_node(book):
    # slurmctld of the Trinity issue 506: "Nodes c001 not responding, setting DOWN" at 12:32:02
    rc, report = _run(book, "c001", "slurmctld-trinity-506-not-responding.log")
    assert ("CRIT", "c001 stopped answering slurmctld and was set DOWN") in _findings(report)
    assert rc == 2 and report["status"] == "CRIT"


def test_a_kill_task_failed_drain_names_its_cause_for_that_node():
    rc, report = _run("pcie", "ip-10-0-1-23", "sinfo-R-awsome-185-kill-task-failed-EXCERPT.txt")
    step = next(s for s in report["steps"] if s["id"] == "slurm-files")
    (f,) = step["findings"]
    assert (f["severity"], f["title"]) == ("WARN", "ip-10-0-1-23: 'Kill task failed' (set by root at 2024-01-25T15:12:23)")
    assert "UnkillableStepTimeout" in f["detail"] and rc == 1


def test_only_the_named_node_is_judged_the_others_are_evidence():
    # the test cluster's sinfo: node[01-03] idle, node04 drained "rec: Kill task failed test"
    rc, report = _run("thermal-power", "node02", "cluster-22.05-sinfo.txt")
    assert all(sev == "OK" for sev, _ in _findings(report)), _findings(report)
    rc, report = _run("thermal-power", "node04", "cluster-22.05-sinfo.txt")
    assert [sev for sev, _ in _findings(report)] == ["WARN"] and "node04" in _findings(report)[0][1]
    assert rc == 1


def test_a_node_the_files_do_not_name_is_never_ok():
    rc, report = _run("nvlink", "gpu-nowhere", "cluster-22.05-sinfo.txt", "slurmctld-trinity-506-not-responding.log")
    assert {sev for sev, _ in _findings(report)} == {"UNKNOWN"}
    assert rc == 3 and report["status"] == "UNKNOWN"


def test_sinfo_r_without_the_node_says_it_has_no_reason():
    rc, report = _run("infiniband", "node02", "cluster-22.05-sinfo-R.txt")
    assert _findings(report) == [("OK", "node02 is not listed by sinfo -R (no down or drain reason)")]
