"""`cockpit --prometheus URL` in a real terminal (tmux) against the real Slurm test
cluster and a real Prometheus (Debian's, on loopback) scraping the dcgm-exporter
stand-in (recorded outputs relabelled to node01..node04, tests/promlib.py).

The Pulse names a job whose GPUs the recording has at 0 % (found by the fleet-wide
idle query, with no node on screen), the GPUs view shows that job's GPUs from
Prometheus, a finished job's efficiency reads its GPUs over its run, and with
Prometheus stopped the values stay under a stale banner, as text, not as live numbers.
Run under /tmp/cockpit-heavy.lock (cluster + tmux). On either test-cluster profile: the
jobs ask ``gpu_gres`` (typed h100, or untyped on the site profile)."""

from __future__ import annotations

import os
import shutil
import uuid

import pytest

import promlib
from clusterlib import cancel, gpu_gres, run, submit, wait_for
from tui.test_tmux_e2e import COCKPIT, Terminal, assert_no_traceback, header

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed"),
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")]
NODES = list(promlib.RECORDINGS)


def _gpu_line(screen: str, node: str, idx: int) -> str:
    return next((ln for ln in screen.splitlines() if ln.split()[:2] == [node, str(idx)]), "")


def _state(job_id: str) -> str:
    return run(["squeue", "-h", "-j", job_id, "-o", "%T"], check=False).stdout.strip()


@pytest.fixture()
def setup(cluster, tmp_path):
    if not COCKPIT.exists():
        pytest.skip(f"{COCKPIT} missing: pip install -e '.[test]' into this environment")
    standin = promlib.StandIn({n: promlib.relabelled(f, n) for n, f in promlib.RECORDINGS.items()})
    prom = promlib.Prometheus(promlib.scrape_config(standin, NODES), tmp_path / "prom")
    (tmp_path / "cfg" / "cockpit").mkdir(parents=True)
    (tmp_path / "cfg" / "cockpit" / "config.toml").write_text(
        '[general]\nbackend = "slurm-cli"\n\n[refresh]\nnodes = 1\njobs = 1\npartitions = 5\ntelemetry = 1\n\n'
        "[telemetry]\nscrape_interval = 1\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "SLURM_CONF": cluster["SLURM_CONF"],
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    term = Terminal(tmp_path, env)
    try:
        prom.wait_ready()
        prom.wait_series('count by (Hostname, instance) ({__name__=~"DCGM_.+"})', len(NODES))
        yield term, prom
        assert_no_traceback(term.screen())
    finally:
        term.stop()
        prom.stop()
        standin.stop()


def test_pulse_and_gpus_view_on_prometheus_then_stale(setup, cluster):
    term, prom = setup
    job = submit("sleep 300", gres=gpu_gres(2), nodelist="node01", job_name="prom-idle")
    try:
        wait_for(lambda: _state(job) == "RUNNING", timeout=60)
        term.start([str(COCKPIT), "--prometheus", prom.url])
        # The Pulse: no GPU on screen, yet the fleet-wide idle query finds the job's idle GPUs.
        term.wait(lambda s: any(ln.split()[:1] == [job] and "2 GPU(s) at 0% use" in ln for ln in s.splitlines()),
                  f"job {job} a Pulse suspect with 2 GPU(s) at 0% use", 60)
        term.keys("3")
        text = term.wait(lambda s: "via Prometheus at" in s and job in _gpu_line(s, "node01", 0).split()
                         and _gpu_line(s, "node02", 0).split()[-3:] == ["1", "95", "23"],  # util, mem %, power
                         "the GPUs view from Prometheus", 60)
        assert _gpu_line(text, "node01", 0).split()[-3:] == ["0", "30", "114"]  # util, temp, power as recorded

        prom.stop()
        text = term.wait(lambda s: "stale: the values below are the last ones read" in s
                         and "0 stale" in _gpu_line(s, "node01", 0), "the stale banner and stale values", 60)
        assert "unreachable" in text
        term.keys("1")
        term.wait(lambda s: "Pulse" in header(s) and not any(ln.split()[:1] == [job] for ln in s.splitlines()),
                  "a stale 0 % is no evidence: the job leaves the suspects", 30)
    finally:
        cancel(job)


def test_finished_job_efficiency_in_history_reads_prometheus(setup, cluster):
    term, prom = setup
    done = submit("sleep 3", gres=gpu_gres(1), nodelist="node02", job_name=f"prom-done-{uuid.uuid4().hex[:4]}")
    wait_for(lambda: _state(done) == "", timeout=90)
    term.start([str(COCKPIT), "--prometheus", prom.url])
    term.wait(lambda s: "Pulse" in header(s), "the Pulse", 60)
    term.keys("C-p")  # the command palette
    term.keys("History: finished", literal=True)
    term.keys("Enter")
    # History loads once (no refresh of its own): once its status line counts the jobs, the rows
    # stay where they are, so one walk from the top reaches the job's row.
    rows = term.wait(lambda s: " job(s), " in s and any(ln.split()[:1] == [done] for ln in s.splitlines()),
                     f"job {done} in History, loaded", 60)
    lines = rows.splitlines()
    # the first row is under the JOBID header (the status line above it starts with a number too:
    # "156 job(s), 4 failed": counting from it opened the job 4 rows down)
    first = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["JOBID"]) + 1
    mine = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [done])
    term.keys("Home", *(["Down"] * (mine - first)), "Enter")
    detail = term.wait(lambda s: "(accounting)" in s, "a finished job's detail", 60)
    assert f"job {done}:" in detail or f"job {done} " in detail, f"Enter on job {done}'s row opened:\n{detail}\n{rows}"
    text = term.wait(lambda s: "Prometheus DCGM_FI_DEV_GPU_UTIL" in s, "the job's GPU efficiency from Prometheus", 60)
    assert any("gpu" in ln and "1%" in ln for ln in text.splitlines()), text  # node02's recorded GPU at 1 %
