"""GPU telemetry from a real Prometheus (Debian's binary on loopback) scraping the
dcgm-exporter stand-in, which replays real recorded /metrics outputs (tests/data/dcgm)."""

from __future__ import annotations

import os
import shutil
import time

import pytest

import promlib
from cockpit.errors import ConfigError
from cockpit.telemetry import dcgm
from cockpit.telemetry.nvsmi import GpuTelemetry
from cockpit.telemetry.prometheus import PrometheusError, PromSettings, read_secret, sample_value
from cockpit.telemetry.promsource import PrometheusTelemetry, job_label_disagreements

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed (tests/run installs it)")
NODES = list(promlib.RECORDINGS)


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    standin = promlib.StandIn({n: promlib.relabelled(f, n) for n, f in promlib.RECORDINGS.items()})
    p = promlib.Prometheus(promlib.scrape_config(standin, NODES), tmp_path_factory.mktemp("prom"))
    try:
        p.wait_ready()
        p.wait_series("up == 1", len(NODES))
        p.wait_series('count by (Hostname, instance) ({__name__=~"DCGM_.+"})', len(NODES))
        yield p
    finally:
        p.stop()
        standin.stop()


async def _read(prom, nodes=NODES, **kw):
    src = PrometheusTelemetry(PromSettings(prom.url), scrape_interval=1.0, **kw)
    try:
        return await src.read(nodes), src
    finally:
        await src.close()


async def test_recorded_values_come_back_per_gpu(prom):
    reading, _ = await _read(prom)
    r = reading.readings
    # node01 replays the 8x H100 recording: all at 0 %, each GPU its own power
    assert [r[("node01", i)].util_gpu for i in range(8)] == [0.0] * 8
    assert r[("node01", 0)].power_w == pytest.approx(113.611)
    assert r[("node01", 1)].power_w == pytest.approx(68.347)
    assert r[("node01", 0)].temp_gpu == 30.0 and r[("node01", 0)].source == "prometheus"
    # node02: the RTX 6000 Ada recording, 1 % of 300 W
    assert r[("node02", 0)].util_gpu == 1.0 and r[("node02", 0)].power_limit_w == 300.0
    assert r[("node02", 0)].mem_used_mib == 46614 and r[("node02", 0)].clock_sm_mhz == 210
    assert not r[("node02", 0)].stale


async def test_node_without_hostname_is_matched_by_instance_and_dcgm_blank_is_not_a_value(prom):
    reading, _ = await _read(prom, ["node04"])
    t = reading.readings[("node04", 0)]
    assert t.clock_sm_mhz == 139
    assert t.temp_mem is None  # 9223372036854775794 is DCGM's blank, not a temperature
    assert t.util_gpu is None and "DCGM_FI_DEV_GPU_UTIL" in t.missing  # not exported: unknown, never 0


async def test_node_with_no_series_is_said_never_zero(prom):
    reading, _ = await _read(prom, ["node01", "ghost07"])
    assert "no series for node ghost07" in reading.errors["ghost07"]
    assert not any(k[0] == "ghost07" for k in reading.readings)


async def test_samples_older_than_two_scrape_intervals_are_stale(prom):
    reading, _ = await _read(prom, ["node02"], clock=lambda: time.time() + 60)
    t = reading.readings[("node02", 0)]
    assert t.stale and t.age_s > 2.0


async def test_windowed_pcie_replays_and_xid_are_not_counts(prom):
    prom.wait_series("count_over_time(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[5m]) >= 2", 4)  # increase() needs two samples
    reading, _ = await _read(prom, ["node03"])
    assert reading.readings[("node03", 0)].util_gpu == 0.0
    # node03's recording has PCIe replay counters at 0: none within the window
    t = reading.readings[("node03", 2)]
    assert t.power_limit_w == 300.0 and t.pcie_replays == 0.0
    assert t.xid_last is None and t.xid_changes is None  # no XID series in this recording: not "0 Xids"


async def test_server_side_aggregates_and_fleet_idle(prom):
    src = PrometheusTelemetry(PromSettings(prom.url), scrape_interval=1.0)
    try:
        summary = await src.node_summary(NODES)
        idle = await src.idle_gpus(0.5)
        hist = await src.gpu_history({"node01": [0, 1]}, time.time() - 30, time.time())
    finally:
        await src.close()
    assert summary["node01"]["power_sum"] == pytest.approx(113.611 + 68.347 + 65.709 + 67.316 + 68.717 + 65.742 + 67.328 + 66.997)
    assert summary["node01"]["temp_max"] == 30.0 and summary["node02"]["util_min"] == 1.0
    assert ("node01", 3) in idle and ("node02", 0) not in idle  # 1 % is not below 0.5 %
    assert set(hist) == {("node01", 0), ("node01", 1)} and all(v == 0.0 for _, v in hist[("node01", 0)])


async def test_fleet_idle_holds_only_gpus_that_report_below_the_threshold(prom):
    src = PrometheusTelemetry(PromSettings(prom.url), scrape_interval=1.0)
    try:
        idle = await src.idle_gpus(5.0)
    finally:
        await src.close()
    # node01: its 8 recorded H100s at 0 %; node02: its one GPU at 1 %; node03: the only one of
    # its 4 GPUs whose utilisation is recorded; node04: no utilisation series at all
    assert set(idle) == {("node01", i) for i in range(8)} | {("node02", 0), ("node03", 0)}
    assert idle[("node02", 0)] == 1.0 and idle[("node01", 7)] == 0.0


async def test_answers_are_gzipped(prom):
    _, src = await _read(prom)
    assert src.client.traffic.requests == 3  # one query per kind
    assert 0 < src.client.traffic.wire_bytes < src.client.traffic.body_bytes


async def test_prometheus_down_is_one_line_error(tmp_path):
    port = promlib.free_port()  # nothing listens there
    src = PrometheusTelemetry(PromSettings(f"http://127.0.0.1:{port}", timeout=2.0))
    with pytest.raises(PrometheusError) as exc:
        await src.read(["node01"])
    await src.close()
    assert f"127.0.0.1:{port} unreachable" in str(exc.value) and "\n" not in str(exc.value)


def test_credentials_file_readable_by_others_is_refused(tmp_path):
    f = tmp_path / "token"
    f.write_text("s3cret\n")
    os.chmod(f, 0o644)
    with pytest.raises(ConfigError) as exc:
        read_secret(str(f), "Prometheus token file")
    assert "readable by others" in str(exc.value) and "s3cret" not in str(exc.value)
    os.chmod(f, 0o600)
    assert read_secret(str(f), "Prometheus token file") == "s3cret"


async def test_bearer_token_is_sent_from_the_file(tmp_path):
    seen = []
    standin = promlib.StandIn({})
    orig = standin.server.RequestHandlerClass

    class Capture(orig):
        def do_POST(self):  # noqa: N802
            seen.append(self.headers.get("Authorization"))
            body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    standin.server.RequestHandlerClass = Capture
    tok = tmp_path / "tok"
    tok.write_text("abc123\n")
    os.chmod(tok, 0o600)
    src = PrometheusTelemetry(PromSettings(f"http://127.0.0.1:{standin.port}", token_file=str(tok)))
    try:
        reading = await src.read(["node01"])
    finally:
        await src.close()
        standin.stop()
    assert seen and set(seen) == {"Bearer abc123"}
    assert "no series for node node01" in reading.errors["node01"]


def test_nan_inf_and_dcgm_blanks_are_not_values():
    assert sample_value("NaN") is None and sample_value("+Inf") is None and sample_value("-Inf") is None
    assert sample_value("9223372036854775794") is None and sample_value("140737488355328") is None
    assert sample_value("0") == 0.0 and sample_value("113.611000") == pytest.approx(113.611)


def test_job_label_disagreement_is_said():
    from cockpit.models import Job

    job = Job(job_id=42, name="x", user="alice", state="RUNNING")
    readings = {("node01", 0): GpuTelemetry(0, job_label="42"), ("node01", 1): GpuTelemetry(1, job_label="41"),
                ("node01", 2): GpuTelemetry(2)}
    lines = job_label_disagreements(readings, {("node01", 0): job, ("node01", 1): job})
    assert lines == ["node01 GPU 1: dcgm-exporter says job 41, Slurm says job 42"]


def test_node_names_are_escaped_in_promql():
    q = dcgm.instant_query(["node.01", 'a"b'], dcgm.Matching())
    assert r'node\\.01' in q and r'a\"b' in q


async def test_plugin_facade_gives_a_node_last_hour_of_series(prom):
    from cockpit.config import Config, with_prometheus
    from cockpit.telemetry.promsource import gpu_series_for

    assert gpu_series_for(Config()) is None  # no Prometheus configured: no facade
    facade = gpu_series_for(with_prometheus(Config(), prom.url))
    series = await facade.node_series("node01", 600)
    assert set(series["DCGM_FI_DEV_POWER_USAGE"]) == set(range(8))
    assert all(v == pytest.approx(113.611) for _, v in series["DCGM_FI_DEV_POWER_USAGE"][0])
    assert "DCGM_FI_DEV_XID_ERRORS" not in series  # not in this recording: absent, never a 0


@pytest.mark.parametrize("url, why", [("ftp://127.0.0.1:9090", "must be http(s)"),
                                      ("http://user:pw@127.0.0.1:9090", "must not carry credentials")])
def test_bad_prometheus_url_is_a_config_error(url, why):
    from cockpit.config import Config, with_prometheus
    from cockpit.telemetry.promsource import prometheus_source

    with pytest.raises(ConfigError) as exc:
        prometheus_source(with_prometheus(Config(), url))
    assert why in str(exc.value) and "pw" not in str(exc.value).replace(url, "")


def test_stale_zero_is_shown_as_text_and_is_no_pulse_evidence():
    from cockpit.models import Job, JobGpus
    from cockpit.tui.suspects import job_gpu_util
    from cockpit.tui.telemetry import view_values

    live = view_values(GpuTelemetry(0, util_gpu=0.0, source="prometheus"), None, 0.0)
    stale = view_values(GpuTelemetry(0, util_gpu=0.0, source="prometheus", stale=True), None, 0.0)
    assert live["util"] == 0.0 and stale["util"] == "0 stale" and stale["stale"]
    job = Job(job_id=7, state="RUNNING", gpus=(JobGpus("node01", "h100", 1, (0,)),))
    assert job_gpu_util(job, {("node01", 0): live}) == (0.0, 1)
    assert job_gpu_util(job, {("node01", 0): stale}) is None  # a stale 0 % is not "idle"


async def test_utilisation_report_idle_inside_allocations_from_prometheus(prom):
    from cockpit.config import Config, with_prometheus
    from cockpit.core.utilization import idle_from_utils
    from cockpit.models.accounting import JobRecord
    from cockpit.telemetry.promsource import job_utils_provider

    prom.wait_series("count_over_time(DCGM_FI_DEV_GPU_UTIL[1m]) >= 3", 8)
    now = int(time.time())
    jobs = (JobRecord("1", 1, state="COMPLETED", start_time=now - 3, end_time=now, elapsed_s=3, nodes=("node02",),
                      alloc_tres={"gres/gpu": 1}),
            JobRecord("2", 2, state="COMPLETED", start_time=now - 3, end_time=now, elapsed_s=3, nodes=("node01",),
                      alloc_tres={"gres/gpu": 1}))
    utils, how = await job_utils_provider(with_prometheus(Config(), prom.url))(jobs, now - 60, now)
    assert utils == {"1": pytest.approx(1.0), "2": 0.0} and "Prometheus DCGM_FI_DEV_GPU_UTIL" in how
    idle, measured = idle_from_utils(jobs, utils)
    assert measured == 2 and idle == pytest.approx((0.99 + 1.0) / 2)


async def test_per_job_utilisation_is_aggregated_on_the_server(prom):
    src = PrometheusTelemetry(PromSettings(prom.url), scrape_interval=1.0)
    try:
        jobs = {"41": {"node01": (0, 1)}, "42": {"node02": (), "node01": (2,)}, "43": {"ghost07": (0,)}}
        got = await src.job_summary(jobs)
        body = src.client.traffic.body_bytes
    finally:
        await src.close()
    assert got["41"] == {"util_avg": 0.0, "util_min": 0.0, "gpus": 2.0}  # two H100 at 0 %
    assert got["42"] == {"util_avg": 0.5, "util_min": 0.0, "gpus": 2.0}  # the RTX at 1 % and an H100 at 0 %
    assert "43" not in got  # no series: absent, never 0 %
    assert body < 2000  # six samples came back, not the GPUs' series
