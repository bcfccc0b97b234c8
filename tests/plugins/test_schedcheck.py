"""``cockpit check scheduler`` over a replay of the test clusters' recorded sdiag and
squeue (the same parsing path as a live cluster: ReplayBackend reads the files the CLI
backend would run), and over saved files (--file)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.backends.replay import ReplayBackend
from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from cockpit_runbooks.schedcheck import SchedulerCheck

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]


def _args(**kw) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    SchedulerCheck().add_arguments(p)
    ns = p.parse_args([])
    vars(ns).update(kw)
    return ns


def _replay(tmp_path: Path, version: str, sdiag: str | None = None) -> ReplayBackend:
    src = DATA / f"slurm-{version}"
    shutil.copy(src / "squeue.json", tmp_path / "squeue.json")
    (tmp_path / "sdiag.txt").write_text(sdiag if sdiag is not None else (src / "sdiag.txt").read_text())
    return ReplayBackend(str(tmp_path))


@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
async def test_recorded_controllers_are_judged(tmp_path, version):
    res = await SchedulerCheck().run(make_ctx(_replay(tmp_path, version)), _args())
    rules = {f.rule for f in res.findings}
    assert {"sched.threads", "sched.agent-queue", "sched.dbd-queue", "sched.pending"} <= rules
    # each recording holds a 3-node GPU job pending because node04 is drained (README.md there)
    pend = [f.title for f in res.findings if f.rule == "sched.pending" and f.severity == Severity.WARN]
    assert any("DOWN, DRAINED" in t for t in pend), pend
    assert res.severity == Severity.WARN and res.data["source"] == "sdiag"


async def test_an_agent_queue_of_20000_is_crit(tmp_path):
    text = (DATA / "slurm-22.05" / "sdiag.txt").read_text().replace("Agent queue size:     0", "Agent queue size:     20000")
    res = await SchedulerCheck().run(make_ctx(_replay(tmp_path, "22.05", text)), _args())
    assert res.severity == Severity.CRIT and res.summary.startswith("slurmctld CRIT: agent queue")


async def test_a_backfill_cycle_longer_than_its_interval(tmp_path):
    # the 25.11 /metrics recording's last backfill cycle took 319 us: against an interval of 1 s it is fine
    path = str(DATA / "slurm-text" / "metrics-sckyzo-25.11-scheduler.txt")
    res = await SchedulerCheck().run(make_ctx(), _args(file=path, bf_interval=1))
    (cyc,) = [f for f in res.findings if f.rule == "sched.bf-cycle"]
    assert cyc.severity == Severity.OK and cyc.title == "last backfill cycle took 0.0 s (interval 1 s)"


def test_headless_exit_codes_and_json(tmp_path):
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}")
    run = [sys.executable, "-m", "cockpit.cli", "--replay", str(tmp_path), "check", "scheduler", "--json"]
    _replay(tmp_path, "26.05")
    done = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["status"] == "WARN" and doc["data"]["stats"]["server_threads"] == 1
    done = subprocess.run([*run[:-1], "--file", str(DATA / "nvidia-smi" / "query-gpu-h100-idle.csv")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 3 and "cannot parse sdiag: no 'Server thread count:' line" in done.stderr


def test_one_moment_of_26_05_in_three_forms():
    """sdiag, sdiag --json and /metrics/scheduler of the 26.05 test cluster, taken within one
    second (tests/data/slurm-26.05/README.md): the same figures, read by hand off the files."""
    from cockpit.plugins.api import read_sched_stats

    d = DATA / "slurm-26.05"
    names = ("sdiag-busy.txt", "sdiag-busy.json", "metrics-scheduler.txt")
    forms = [read_sched_stats((d / n).read_text()) for n in names]
    assert [f.source for f in forms] == ["sdiag", "sdiag --json", "/metrics"]
    want = dict(taken_at=1796197328, agent_queue=0, dbd_queue=0, jobs_pending=5, jobs_running=1,
                sched_cycle_last_us=5855, sched_cycle_max_us=5855, bf_cycles=2, bf_cycle_last_us=833,
                bf_cycle_mean_us=871, bf_last_when=1796197321)
    for f in forms:
        assert {k: getattr(f, k) for k in want} == want, f.source
    # sdiag's own request holds a server thread; the HTTP GET is not counted
    assert [f.server_threads for f in forms] == [1, 1, 0]
    assert forms[2].rpc_by_user == () and sum(c for _, c, _ in forms[0].rpc_by_user) == 933


def test_a_saved_metrics_index_is_one_line_naming_the_endpoint(tmp_path):
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}")
    _replay(tmp_path, "26.05")
    done = subprocess.run([sys.executable, "-m", "cockpit.cli", "--replay", str(tmp_path), "check", "scheduler",
                           "--file", str(DATA / "slurm-26.05" / "metrics-index.txt")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 3 and done.stderr.strip().splitlines() == [
        "cockpit: cannot parse /metrics/scheduler: this is slurmctld's index of its /metrics endpoints "
        "(GET /metrics); ask for /metrics/scheduler"]


async def test_the_demo_cannot_and_says_so():
    from cockpit.backends.demo import DemoBackend

    with pytest.raises(Exception, match="cannot read slurmctld's statistics"):
        await SchedulerCheck().run(make_ctx(DemoBackend()), _args())
