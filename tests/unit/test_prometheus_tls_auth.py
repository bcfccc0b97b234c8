"""TLS, basic auth and counter resets against a real Prometheus (Debian's 2.42 on
loopback, ``--web.config.file`` with a self-signed certificate for 127.0.0.1 and a
bcrypt-hashed user), scraping the dcgm-exporter STAND-IN (tests/promlib.py), which
replays real recorded /metrics outputs (tests/data/dcgm, SOURCES.md there)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

import promlib
from cockpit.telemetry import dcgm
from cockpit.telemetry.prometheus import PrometheusClient, PrometheusError, PromSettings
from cockpit.telemetry.promsource import PrometheusTelemetry
from cockpit_runbooks.dcgmrules import increase

pytestmark = [
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed (tests/run installs it)"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test certificate"),
    pytest.mark.skipif(sys.version_info >= (3, 13), reason="the bcrypt hash comes from the crypt module (gone in 3.13)"),
]
USER, PASSWORD = "cockpit", "Corr3ct-horse-b4ttery"
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # a counter (mJ since the driver loaded)


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prom-tls")
    web = promlib.WebConfig(tmp, users={USER: PASSWORD})
    standin = promlib.StandIn({"node02": promlib.relabelled("rtx6000ada-1gpu-aiperf-fixture.prom", "node02")})
    p = promlib.Prometheus(promlib.scrape_config(standin, ["node02"]), tmp / "data", web=web)
    try:
        p.wait_ready()
        p.wait_series("DCGM_FI_DEV_GPU_UTIL", 1)
        yield p, tmp
    finally:
        p.stop()
        standin.stop()


def _secret(tmp, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text + "\n")
    os.chmod(path, 0o600)
    return str(path)


async def _read(url: str, **kw):
    src = PrometheusTelemetry(PromSettings(url, **kw), scrape_interval=1.0)
    try:
        return await src.read(["node02"])
    finally:
        await src.close()


async def test_tls_verified_with_the_ca_and_the_right_password(secure):
    p, tmp = secure
    assert p.url.startswith("https://127.0.0.1:")
    reading = await _read(p.url, basic_auth_file=_secret(tmp, "ok", f"{USER}:{PASSWORD}"), ca_file=str(p.web.cert))
    assert reading.readings[("node02", 0)].util_gpu == 1.0  # the RTX 6000 Ada recording's 1 %


async def test_unverifiable_certificate_is_one_line_and_verification_off_reads(secure):
    p, tmp = secure
    auth = _secret(tmp, "ok2", f"{USER}:{PASSWORD}")
    with pytest.raises(PrometheusError) as exc:
        await _read(p.url, basic_auth_file=auth)  # the system CAs do not know this certificate
    msg = str(exc.value)
    assert "\n" not in msg and "CERTIFICATE_VERIFY_FAILED" in msg and PASSWORD not in msg
    assert exc.value.exit_code == 3
    reading = await _read(p.url, basic_auth_file=auth, tls_verify=False)
    assert reading.readings[("node02", 0)].power_limit_w == 300.0


@pytest.mark.parametrize("secret", [f"{USER}:wrong-{PASSWORD}", None])
async def test_wrong_or_no_password_is_one_line_exit_3_never_the_password(secure, secret):
    p, tmp = secure
    kw = {"basic_auth_file": _secret(tmp, "bad", secret)} if secret else {}
    with pytest.raises(PrometheusError) as exc:
        await _read(p.url, ca_file=str(p.web.cert), **kw)
    msg = str(exc.value)
    assert "refused the credentials (HTTP 401)" in msg and "\n" not in msg and exc.value.exit_code == 3
    assert "wrong-" not in msg and PASSWORD not in msg


async def test_counters_across_an_exporter_restart_with_lower_values(tmp_path):
    """node07's exporter serves one real recording (GPU 0's energy counter 15347724978 mJ),
    then restarts on the same port serving another (955287014 mJ) whose labels differ, as
    after an exporter or driver upgrade: Prometheus keeps two series, cockpit's per (node,
    GPU) series joins them, and the drop must read as a reset, never a negative increase."""
    first = promlib.relabelled("pod-labels-gpu0-blank-ecc-nvlink-EXCERPT.prom", "node07")
    later = promlib.relabelled("rtx6000ada-1gpu-aiperf-fixture.prom", "node07")
    standin = promlib.StandIn({"node07": first})
    p = promlib.Prometheus(promlib.scrape_config(standin, ["node07"], by_instance=("node07",)), tmp_path)
    try:
        p.wait_ready()
        p.wait_series(f"count_over_time({ENERGY}[1m]) >= 3", 1)
        port = standin.port
        standin.stop()
        standin = promlib.StandIn({"node07": later}, port=port)
        p.wait_series(f"{ENERGY} == 955287014", 1)
        p.wait_series(f"count_over_time(({ENERGY} == 955287014)[1m:1s]) >= 2", 1)  # samples after the restart
        client = PrometheusClient(PromSettings(p.url))
        try:
            m = dcgm.Matching(node_label="instance")  # the two recordings label the node differently
            q = dcgm.node_history_query("node07", m, names=(ENERGY,))
            end = float(p.api("/api/v1/query", query="time()")["data"]["result"][1])
            (series,) = await client.query_range(q, end - 120, end, 1)  # one series per (node, GPU)
        finally:
            await client.close()
        values = [float(v) for _, v in series["values"]]
        assert values[0] == 15347724978 and values[-1] == 955287014
        assert increase([(0.0, v) for v in values]) == 955287014  # the reset: all of the new value is increase
    finally:
        p.stop()
        standin.stop()
