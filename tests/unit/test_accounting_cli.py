"""The accounting commands as a user runs them, against fake Slurm commands (a
``general.slurm_bin_dir`` of scripts) that print outputs recorded from the test
cluster: one line and exit 3 where accounting is not configured, one line and
exit 2 for bad input, the history and why-pending texts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
D = ROOT / "tests" / "data" / "slurm-22.05"
A = D / "accounting"
QOS_WAIT = "10038"  # the job held by the gpu8 QOS in the 22.05 recording


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def fake_slurm(tmp: Path, storage: str) -> Path:
    """Fake squeue/sinfo/scontrol/sprio/sacct/sacctmgr answering from the recording."""
    bindir = tmp / "bin"
    bindir.mkdir()
    sed = f"sed 's|accounting_storage/slurmdbd|{storage}|' {A}/scontrol-show-config.txt"
    _script(bindir / "scontrol", f"""case "$*" in
  "show config") {sed};;
  "show job {QOS_WAIT}") cat {A}/scontrol-show-job-qos-wait.txt;;
  "show job 999") echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1;;
  "show partition") cat {D}/scontrol-show-partition.txt;;
  "show topology") cat {D}/topology.txt;;
  "show reservation") cat {A}/scontrol-show-reservation.txt;;
  "show assoc_mgr flags=qos qos=gpu8") cat {A}/assoc-mgr-qos.txt;;
  show\\ assoc_mgr\\ flags=assoc*) cat {A}/assoc-mgr-assoc-root.txt;;
  "show node --json") echo "scontrol: unrecognized option '--json'" >&2; exit 1;;
  *) echo "fake scontrol: unexpected $*" >&2; exit 9;;
esac
""")
    _script(bindir / "sinfo", f"""case "$*" in
  --version) echo "slurm 22.05.8";; --json) cat {D}/sinfo.json;; *) exit 9;; esac
""")
    _script(bindir / "sprio", f"cat {A}/sprio.txt\n")
    _script(bindir / "squeue", "echo 'RUNNING|None'\n")
    _script(bindir / "sacct", f"""case "$*" in
  *--json*) cat {A}/sacct-X.json;;
  *JobID,ExitCode,DerivedExitCode,State*) awk -F'|' '{{print $1"|"$8"|"$9"|"$7}}' {A}/sacct-X.txt;;
  *) cat {A}/sacct-X.txt;;
esac
""")
    _script(bindir / "sacctmgr", f"cat {A}/sacctmgr-events.txt\n")
    (tmp / "config.toml").write_text(f'[general]\nslurm_bin_dir = "{bindir}"\nbackend = "slurm-cli"\n')
    return tmp / "config.toml"


def cockpit(config: Path, *args: str):
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent-cockpit-test", TZ="UTC")
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(config), *args],
                          capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)


def one_line(proc) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


COMMANDS = (["history"], ["history", "--json"], ["node", "history", "node03"],
            ["report", "utilization", "--since", "1d"], ["report", "utilization", "--csv"], ["job", "show", "5"])


@pytest.fixture
def no_dbd(tmp_path):
    return fake_slurm(tmp_path, "accounting_storage/none")


@pytest.fixture
def dbd(tmp_path):
    return fake_slurm(tmp_path, "accounting_storage/slurmdbd")


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a))
def test_without_slurmdbd_each_command_says_so_in_one_line(no_dbd, argv):
    proc = cockpit(no_dbd, *argv)
    assert proc.returncode == 3 and proc.stdout == ""
    line = one_line(proc)
    assert line.startswith("cockpit: accounting is not configured on this cluster (AccountingStorageType = "
                           "accounting_storage/none")


def test_without_slurmdbd_job_why_still_explains_the_rest(no_dbd):
    proc = cockpit(no_dbd, "job", "why", QOS_WAIT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "limits: accounting is not configured on this cluster" in out
    assert "priority 1346 = fairshare 333 + jobsize 13 + partition 1000" in out
    assert "free GPUs: leaf switch" in out
    assert [ln for ln in out.splitlines() if "accounting is not configured" in ln] == \
        ["  limits: accounting is not configured on this cluster (AccountingStorageType = accounting_storage/none; "
         "history and reports need slurmdbd)"]


def test_without_slurmdbd_the_rest_of_cockpit_works(no_dbd):
    proc = cockpit(no_dbd, "snapshot", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    assert {n["name"] for n in json.loads(proc.stdout)["nodes"]} >= {"node01", "node04"}


@pytest.mark.parametrize("argv, word", [
    (["history", "--since", "yesterday"], "'yesterday'"), (["history", "--state", "running"], "'running'"),
    (["history", "--user", "a;b"], "'a;b'"), (["node", "history", "node[01-02]"], "'node[01-02]'"),
    (["job", "why", "12x"], "'12x'"), (["job", "why", "999"], "job 999"),
    (["report", "utilization", "--partition", "nosuch"], "'nosuch'"), (["history", "--limit", "-1"], "-1"),
])
def test_bad_input_is_one_line_naming_it(dbd, argv, word):
    proc = cockpit(dbd, *argv)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert word in one_line(proc)


def test_history_text_and_json(dbd):
    proc = cockpit(dbd, "history", "--since", "300d")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("7 finished job(s) in 300 d (")
    fail = next(ln for ln in lines if "rec-acct-fail" in ln)
    assert " FAILED " in fail and fail.split()[5] == "3" and "exit 3" in fail
    assert any(ln.startswith("query: sacct --json") and "bounded by window 300 d, -X, 9 states" in ln for ln in lines)
    assert any("(exit codes: 22.05's JSON reports 0)" in ln for ln in lines)
    doc = json.loads(cockpit(dbd, "history", "--json", "--since", "300d").stdout)
    (job,) = [j for j in doc["jobs"] if j["name"] == "rec-acct-fail"]
    assert (job["state"], job["exit_code"], job["failure"]) == ("FAILED", 3, "exit 3")
    assert len(doc["costs"]) == 2


def test_job_why_names_the_qos_limit_and_its_usage(dbd):
    proc = cockpit(dbd, "job", "why", QOS_WAIT, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["summary"] == "held back by a limit: QOS gpu8: MaxTRESPU gres/gpu=8, user root uses 8, this job asks 4"
    (lim,) = [x for x in doc["limits"] if x["blocks"]]
    assert (lim["key"], lim["tres"], lim["limit"], lim["used"], lim["asks"]) == ("MaxTRESPU", "gres/gpu", 8, 8, 4)
    assert not any("squeue --start" in c["command"] for c in doc["costs"])  # only with --start
