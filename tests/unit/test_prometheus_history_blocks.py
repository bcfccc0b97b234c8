"""A finished job's GPU efficiency over hours, read from TSDB blocks built with
``promtool tsdb create-blocks-from openmetrics`` out of the real recorded dcgm-exporter
outputs (tests/data/dcgm, SOURCES.md there; tests/promlib.py), loaded by a real
Prometheus (Debian's 2.42 on loopback) that scrapes nothing."""

from __future__ import annotations

import shutil
import time

import pytest

import promlib
from cockpit.config import Config, with_prometheus
from cockpit.core.efficiency import efficiency
from cockpit.models.accounting import JobRecord
from cockpit.telemetry.promsource import finished_job_history

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("promtool") is None,
                                reason="prometheus/promtool not installed (tests/run installs them)")
HOUR = 3600
NOW = int(time.time()) // 60 * 60
# the history: 06:00 to 02:00 before now, a sample a minute, the recordings' values
START, END = NOW - 6 * HOUR, NOW - 2 * HOUR


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prom-blocks")
    pages = {n: promlib.relabelled(promlib.RECORDINGS[n], n) for n in ("node01", "node02")}
    promlib.create_blocks(promlib.openmetrics_history(pages, START, END, 60), tmp / "tsdb")
    p = promlib.Prometheus("global:\n  scrape_interval: 60s\n", tmp)
    try:
        p.wait_ready()
        p.wait_series(f"count_over_time(DCGM_FI_DEV_GPU_UTIL[{5 * HOUR}s])", 9)  # the blocks are loaded
        yield p
    finally:
        p.stop()


def _job(start: float, end: float, nodes=("node01", "node02"), gpus: int = 9) -> JobRecord:
    return JobRecord("77", 77, state="COMPLETED", start_time=start, end_time=end, elapsed_s=int(end - start),
                     nodes=nodes, alloc_tres={"gres/gpu": gpus})


def _config(url: str):
    return with_prometheus(Config(), url)


async def test_a_four_hour_job_efficiency_from_backfilled_blocks(history):
    # the job ran exactly over the backfilled 4 h: 8 H100 at 0 % (node01) and the RTX at 1 % (node02)
    job = _job(START, END)
    hist, how = await finished_job_history(_config(history.url), job)
    assert set(hist) == {("node01", i) for i in range(8)} | {("node02", 0)}
    assert all(len(pts) >= 90 for pts in hist.values())  # ~100 points over 4 h, not a last value
    gpu = efficiency(job, hist, how).measures[2]
    assert gpu.percent == pytest.approx(1.0 / 9, abs=0.05)  # 1 % on 1 GPU of 9
    assert "over 240 min" in gpu.used and "100% of the run" in gpu.used and "Prometheus" in gpu.source


async def test_history_covering_half_the_run_is_said(history):
    # a job that ran 2 h past the end of the history: only half its run had samples
    job = _job(END - 2 * HOUR, END + 2 * HOUR, nodes=("node02",), gpus=1)
    hist, how = await finished_job_history(_config(history.url), job)
    gpu = efficiency(job, hist, how).measures[2]
    assert gpu.percent == pytest.approx(1.0)
    covered = int(gpu.used.split("samples over ")[1].split("%")[0])
    assert 45 <= covered <= 55  # 2 h of 4 h, within a step or two


async def test_a_job_on_a_node_without_history_has_no_gpu_figure_from_prometheus(history):
    job = _job(START, END, nodes=("node03",), gpus=4)
    hist, _ = await finished_job_history(_config(history.url), job)
    assert hist == {}
    gpu = efficiency(job, hist).measures[2]
    assert gpu.percent is None and "not measure" in gpu.source  # never 0 % from an absent series
