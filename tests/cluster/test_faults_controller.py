"""A slow controller, as opposed to a stopped one, on the real test cluster.

Two faults, each injected deterministically and removed by the test that added it:

- a stall: slurmctld stopped with SIGSTOP (clusterlib.stopped), SIGCONT in a finally. The
  kernel still accepts connections into slurmctld's listen backlog, so a client waits for an
  answer exactly as it would for a busy controller;
- a slow link to slurmctld's port only (tests/cluster/slowlink port: tc htb + u32 on lo,
  matching 127.0.0.1:6817), removed in a finally.

Nothing here measures time: a stall "longer than the timeout" lasts until cockpit has given
up (slurmctld is continued only after the command returned), and a stall "shorter than the
timeout" ends as soon as cockpit's own Slurm command is seen waiting on slurmctld's port
(``ss``), so the command provably met the stall and outlived it.

The cluster is shared: a stall holds up every other client of slurmctld, so each one lasts
only as long as the command under test needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterlib import cancel, ctld_pid, descendants, proc_state, slow_class_bytes, slow_port, slowlink_status, \
    stopped, submit, tcp_clients_of, wait_for

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 3  # general.command_timeout for the stall that outlasts it


def _config(tmp_path: Path, timeout: float) -> Path:
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f'[general]\nbackend = "slurm-cli"\ncommand_timeout = {timeout}\n'
                   f'audit_log = "{tmp_path / "audit.jsonl"}"\n')
    return cfg


def _argv(cfg: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "cockpit.cli", "--config", str(cfg), *args]


def _env(cluster) -> dict[str, str]:
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME="/nonexistent-cockpit-test")
    env.pop("COCKPIT_CONFIG", None)
    return env


def cockpit(cluster, cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # 120 s: only a guard against a hang; every outcome below comes from cockpit's own timeouts.
    return subprocess.run(_argv(cfg, *args), capture_output=True, text=True, env=_env(cluster),
                          timeout=120, cwd=ROOT)


def _ctld_addr(cluster) -> tuple[str, str]:
    return cluster.get("COCKPIT_TEST_HEAD_ADDR", "127.0.0.1"), cluster.get("COCKPIT_TEST_CTLD_PORT", "6817")


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_a_stall_longer_than_the_timeout_is_one_line_then_works_again(cluster, tmp_path):
    cfg = _config(tmp_path, TIMEOUT)
    pid = ctld_pid(cluster)
    with stopped(pid):
        proc = cockpit(cluster, cfg, "snapshot")
        # cockpit gave up while slurmctld was still stopped: the stall outlasted the timeout.
        assert proc_state(pid) == "T"
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    line = _one_line(proc.stderr)
    assert line.startswith("cockpit: cannot read the cluster: "), line
    assert f"did not answer within {TIMEOUT} s" in line, line
    # Continued: the same command, the same config, answers again.
    proc = cockpit(cluster, cfg, "snapshot", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert {n["name"] for n in json.loads(proc.stdout)["nodes"]} == set(cluster["COCKPIT_TEST_NODES"].split())


def test_a_stall_shorter_than_the_timeout_only_takes_longer(cluster, tmp_path):
    cfg = _config(tmp_path, 60)
    addr, port = _ctld_addr(cluster)
    pid = ctld_pid(cluster)
    with stopped(pid):
        proc = subprocess.Popen(_argv(cfg, "snapshot", "--format", "json"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=_env(cluster), cwd=ROOT)
        try:
            # One of cockpit's Slurm commands is connected to the stopped slurmctld, waiting.
            waiting = wait_for(lambda: tcp_clients_of(addr, port) & descendants(proc.pid), timeout=60,
                               interval=0.05)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
    out, err = proc.communicate(timeout=120)
    assert waiting
    assert proc.returncode == 0, err
    assert err.strip() == ""
    snap = json.loads(out)
    assert {n["name"] for n in snap["nodes"]} == set(cluster["COCKPIT_TEST_NODES"].split())
    assert snap["errors"] == []


def test_a_slow_link_to_the_controller_answers_through_the_slow_class(cluster, tmp_path):
    cfg = _config(tmp_path, 60)
    addr, port = _ctld_addr(cluster)
    # 2 Mbit/s: slow for a controller, still enough for every RPC of a 4-node cluster.
    with slow_port(addr, port, "2mbit"):
        proc = cockpit(cluster, cfg, "snapshot", "--format", "json")
        shaped = slow_class_bytes()
    assert slowlink_status().startswith("off")
    assert proc.returncode == 0, proc.stderr
    assert shaped > 0  # slurmctld's traffic went through the slow class
    assert {n["name"] for n in json.loads(proc.stdout)["nodes"]} == set(cluster["COCKPIT_TEST_NODES"].split())


def test_a_link_too_slow_for_the_timeout_is_one_line(cluster, tmp_path):
    cfg = _config(tmp_path, TIMEOUT)
    addr, port = _ctld_addr(cluster)
    # 1 kbit/s (125 bytes/s) after a 2 KB burst: one node listing alone is several KB, and the
    # held jobs make the job listing so too (an empty queue's listing fitted in the burst on
    # 26.05: jobs were read, exit 1), so no fetch can finish within 3 s on any machine.
    held = [submit("sleep 1", hold=True, job_name=f"slowlink-{i}") for i in range(8)]
    try:
        with slow_port(addr, port, "1kbit"):
            proc = cockpit(cluster, cfg, "snapshot")
        assert slowlink_status().startswith("off")
        assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
        line = _one_line(proc.stderr)
        assert line.startswith("cockpit: cannot read the cluster: ") and f"did not answer within {TIMEOUT} s" in line, line
        proc = cockpit(cluster, cfg, "snapshot")
        assert proc.returncode == 0, proc.stderr
    finally:
        for job in held:
            cancel(job, wait=False)
