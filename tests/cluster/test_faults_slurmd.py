"""A frozen slurmd on the real test cluster: node03's slurmd stopped with SIGSTOP
(clusterlib.stopped, SIGCONT in a finally), as a hung daemon on a sick node would be.

What an operator sees meanwhile:
- ``cockpit exec --srun node[01-04]``: the other nodes answer, and node03 is named in one
  line with srun's own words (its task launch timed out). srun gives up by itself (its
  MessageTimeout), so the command returns while slurmd is still stopped: it is bounded
  by Slurm's timeout, not by ours (``--timeout`` is set far above it here);
- ``cockpit exec node[01-04]`` over SSH reaches every node, node03 included, and shows
  that its slurmd is stopped (state T): SSH is how an operator looks at such a node;
- the controller-side drain of node03 works through the gate (audited, read back), and so
  does the resume: slurmctld records the state without asking the node's slurmd.

Shared cluster: node03 stays frozen only for these commands; nothing is timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from clusterlib import daemon_pid, proc_state, run, scontrol_show, stopped, wait_for
from cockpit.core.audit import read_audit

pytestmark = [pytest.mark.cluster, pytest.mark.ssh]
ROOT = Path(__file__).resolve().parents[2]
NODE = "node03"


def _cockpit(cluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f'[general]\nbackend = "slurm-cli"\naudit_log = "{tmp_path / "audit.jsonl"}"\n'
                   f'[ssh]\nconfig_file = "{cluster["COCKPIT_TEST_SSH_CONFIG"]}"\nconnect_timeout = 5.0\n'
                   "command_timeout = 20.0\n")
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME=str(tmp_path / "xdg"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("COCKPIT_CONFIG", None)
    # 300 s: a guard against a hang only; the outcomes come from Slurm's and cockpit's timeouts.
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(cfg), *args],
                          capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)


def _schedulable(nodes: list[str]) -> str:
    """"" when every node can take a one-CPU step now, else which cannot and why."""
    out = run(["sinfo", "-h", "-N", "-n", ",".join(nodes), "-o", "%N %t"]).stdout.split("\n")
    bad = sorted({ln for ln in out if ln.strip() and ln.split()[1].rstrip("*~#!%$@^-") not in ("idle", "mix")})
    return ", ".join(bad)


@pytest.fixture
def all_nodes_free(cluster):
    """The four nodes schedulable (other sessions drain nodes too): wait, else skip."""
    nodes = cluster["COCKPIT_TEST_NODES"].split()
    try:
        wait_for(lambda: not _schedulable(nodes), timeout=120, interval=1)
    except TimeoutError:
        pytest.skip(f"nodes not schedulable (used by another session): {_schedulable(nodes)}")
    return nodes


def test_frozen_slurmd_srun_probe_names_the_node_ssh_and_drain_work(cluster, tmp_path, all_nodes_free):
    nodes = all_nodes_free
    pid = daemon_pid(cluster, NODE, "slurmd")
    reason = f"cockpit-fault: slurmd frozen {uuid.uuid4().hex[:6]}"
    hosts = f"node[01-0{len(nodes)}]"
    resume = None
    try:
        with stopped(pid):
            srun = _cockpit(cluster, tmp_path, "exec", "--srun", "--timeout", "240", hosts, "--", "hostname")
            assert proc_state(pid) == "T"  # srun gave up while slurmd was still stopped
            ssh = _cockpit(cluster, tmp_path, "exec", hosts, "--json", "--", "ps", "-o", "stat=", "-p", str(pid))
            drain = _cockpit(cluster, tmp_path, "node", "drain", NODE, "--reason", reason, "--yes", "--json")
            drained = scontrol_show("node", NODE)
            resume = _cockpit(cluster, tmp_path, "node", "resume", NODE, "--yes", "--json")
            resumed = scontrol_show("node", NODE)
            assert proc_state(pid) == "T"
    finally:
        if resume is None or resume.returncode != 0:  # only our own drain is undone here
            run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"], check=False)

    # srun: the others answered; node03's failure is one line in srun's words.
    assert srun.returncode == 1, srun.stdout + srun.stderr
    others = [n for n in nodes if n != NODE]
    for n in others:
        assert f"\n{n}\n" in f"\n{srun.stdout}"
    (line,) = [ln for ln in srun.stdout.splitlines() if ln.startswith(f"{NODE}: ")]
    assert line.startswith(f"{NODE}: error: srun {NODE}: no output from this node ("), line
    assert f"failed on node {NODE}" in line and "timed out" in line.lower(), line
    assert srun.stderr.strip().splitlines()[-1] == f"cockpit: 1 of {len(nodes)} nodes failed: {NODE}"

    # SSH: every node answers; on node03, slurmd shows as stopped.
    assert ssh.returncode in (0, 1), ssh.stderr
    res = {r["host"]: r for r in json.loads(ssh.stdout)}
    assert res[NODE]["returncode"] == 0 and res[NODE]["stdout"].strip().startswith("T"), res[NODE]
    assert all(res[n]["error"] is None for n in nodes), res

    # The gate: drained and resumed through slurmctld, each audited and read back.
    assert drain.returncode == 0, drain.stdout + drain.stderr
    assert json.loads(drain.stdout)["results"][0]["status"] == "done"
    assert "DRAIN" in drained["State"] and drained["Reason"].startswith(reason), drained
    assert resume.returncode == 0, resume.stdout + resume.stderr
    assert json.loads(resume.stdout)["results"][0]["status"] == "done"
    assert "DRAIN" not in resumed["State"], resumed
    recs = read_audit(tmp_path / "audit.jsonl")
    assert [(r["action"], r["target"], r["result"]) for r in recs] == [("drain", NODE, "done"), ("resume", NODE, "done")]
    assert recs[0]["argv"][-1] == "Reason=" + reason
