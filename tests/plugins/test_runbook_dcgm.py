"""The runbooks' ``dcgm_series`` step against a real Prometheus (Debian's binary on
loopback) scraping the dcgm-exporter STAND-IN (tests/promlib.py), which replays real
recorded /metrics outputs (tests/data/dcgm, SOURCES.md there)."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

import promlib
from cockpit.config import Config, with_prometheus
from cockpit.telemetry.promsource import gpu_series_for
from cockpit_runbooks import probes_dcgm
from cockpit_runbooks.context import NotApplicable, RunContext
from cockpit_runbooks.engine import PROBES, action_names, run_runbook
from cockpit_runbooks.model import BUNDLED_DIR, load_all
from pluginctx import make_ctx

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed (tests/run installs it)")
PAGES = {
    "node01": "h100-8gpu-gpu-node-1-580.105.08-sampled.prom",  # 8 GPUs at 0 %
    "node02": "rtx6000ada-1gpu-aiperf-fixture.prom",  # 1 GPU at 1 %
    "node05": "grid-a100-8c-vgpu-vks-conformance.prom",  # Xid 0, no ECC/remap series (vGPU)
    "node06": "pod-labels-gpu0-blank-ecc-nvlink-EXCERPT.prom",  # ECC and NVLink counters DCGM-blank; no Hostname
    "node07": "a30-mig-gpu0-clock-reasons-gpu-idle-issue317-EXCERPT.prom",  # clock reasons 1 (GPU idle), 2 MIG instances
}


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    standin = promlib.StandIn({n: promlib.relabelled(f, n) for n, f in PAGES.items()})
    p = promlib.Prometheus(promlib.scrape_config(standin, list(PAGES), by_instance=("node06",)),
                           tmp_path_factory.mktemp("prom"))
    try:
        p.wait_ready()
        p.wait_series('count by (job) ({__name__=~"DCGM_.+"})', len(PAGES))
        # the idle rule and increase() need the samples of a few seconds
        p.wait_series("count_over_time(DCGM_FI_DEV_GPU_UTIL[1m]) >= 8", 8 + 1 + 1 + 1)
        p.wait_series("count_over_time(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[1m]) >= 8", 1)
        yield p
    finally:
        p.stop()
        standin.stop()


def _rc(url: str | None, node: str) -> RunContext:
    ctx = make_ctx()
    if url:
        cfg = with_prometheus(Config(), url)
        ctx.gpu_series = gpu_series_for(replace(cfg, telemetry=replace(cfg.telemetry, scrape_interval=1.0)))
    return RunContext(ctx, node=node)


def _codes(res) -> dict[str, str]:
    return {f.rule: f.severity.name for f in res.findings}


async def test_all_gpus_flat_at_zero_are_idle_one_percent_is_busy(prom):
    args = {"kinds": ["idle"], "idle_s": 5, "window_s": 60}
    res = await probes_dcgm.dcgm_series(_rc(prom.url, "node01"), args)
    idle = [f for f in res.findings if f.rule == "dcgm.idle"]
    assert len(idle) == 8 and all(f.severity.name == "WARN" for f in idle)
    assert res.facts["idle_gpus"].split(",") == [f"node01:{i}" for i in range(8)]
    res = await probes_dcgm.dcgm_series(_rc(prom.url, "node02"), args)
    assert _codes(res) == {"dcgm.busy": "OK", "dcgm.ok": "OK"}


async def test_xid_judged_and_a_kind_not_exported_is_unknown_never_ok(prom):
    res = await probes_dcgm.dcgm_series(_rc(prom.url, "node05"), {"kinds": ["xid", "memory"], "window_s": 60})
    assert _codes(res) == {"dcgm.not_exported.memory": "UNKNOWN"}  # the Xid 0 is judged: no finding
    res = await probes_dcgm.dcgm_series(_rc(prom.url, "node05"), {"kinds": ["xid"], "window_s": 60})
    assert _codes(res) == {"dcgm.ok": "OK"}


async def test_dcgm_blank_counters_are_not_judged_pcie_replays_are(prom):
    res = await probes_dcgm.dcgm_series(_rc(prom.url, "node06"), {"kinds": ["nvlink", "pcie", "memory"], "window_s": 60})
    assert _codes(res) == {"dcgm.not_exported.nvlink": "UNKNOWN", "dcgm.not_exported.memory": "UNKNOWN"}


async def test_node_without_series_and_prometheus_down_are_unknown(prom):
    res = await probes_dcgm.dcgm_series(_rc(prom.url, "ghost07"), {"kinds": ["xid"]})
    assert _codes(res) == {"dcgm.no_series": "UNKNOWN"}
    down = f"http://127.0.0.1:{promlib.free_port()}"
    res = await probes_dcgm.dcgm_series(_rc(down, "node01"), {"kinds": ["xid"]})
    (f,) = res.findings
    assert f.rule == "dcgm.unreadable" and f.severity.name == "UNKNOWN" and "unreachable" in f.title


async def test_without_prometheus_the_step_is_not_applicable_and_the_runbook_says_so():
    with pytest.raises(NotApplicable):
        await probes_dcgm.dcgm_series(_rc(None, "node01"), {"kinds": ["xid"]})
    books, problems = load_all([(BUNDLED_DIR, "bundled")], PROBES, action_names())
    assert not problems
    report = await run_runbook(books["thermal-power"], _rc(None, "node01"))
    step = next(o for o in report.steps if o.id == "dcgm")
    assert step.status == "n/a" and not step.findings and "no Prometheus configured" in step.why


async def test_thermal_power_runbook_judges_the_real_non_zero_clock_reasons(prom):
    """The A30 recording (dcgm-exporter #317): DCGM_FI_DEV_CLOCK_THROTTLE_REASONS 1 on both MIG
    instances of GPU 0, no temperature. Through the real Prometheus and the whole runbook."""
    books, problems = load_all([(BUNDLED_DIR, "bundled")], PROBES, action_names())
    assert not problems
    report = await run_runbook(books["thermal-power"], _rc(prom.url, "node07"))
    step = next(o for o in report.steps if o.id == "dcgm")
    assert step.status == "ran" and _codes(step) == {"dcgm.clocks": "OK", "dcgm.not_exported.thermal.temperature": "UNKNOWN"}
    (clocks,) = [f for f in step.findings if f.rule == "dcgm.clocks"]
    assert clocks.title.startswith("node07 GPU 0: clock event reasons within the window: gpu_idle (")
    assert any("node07: 1 GPU(s)" in e for e in step.evidence)  # two MIG instances, one GPU


async def test_a_node_exporting_temperature_alone_is_never_passed_on_thermal(prom):
    res = await probes_dcgm.dcgm_series(_rc(prom.url, "node01"), {"kinds": ["thermal"], "window_s": 60})
    assert _codes(res) == {"dcgm.not_exported.thermal.clock_event_reasons": "UNKNOWN"}  # 8 GPUs under 85 C: no finding
