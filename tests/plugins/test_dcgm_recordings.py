"""The DCGM rules (plugins/cockpit_runbooks/dcgmrules.py) on REAL recorded dcgm-exporter
/metrics outputs (tests/data/dcgm, SOURCES.md there), read as node_series returns them
when the stand-in serves the page at every scrape (promlib.recorded_series). The same
recordings go through a real Prometheus in test_runbook_dcgm.py.

The only real recording with a non-zero fault-class value found so far is the A30 one
(dcgm-exporter #317): DCGM_FI_DEV_CLOCK_THROTTLE_REASONS 1 on GPU 0. No public recording
with a non-zero Xid, ECC, remapped-row, PCIe-replay or NVLink-error value was found
(SOURCES.md says where we looked); those rules stay tested on built series in
test_dcgm_rules.py."""

from __future__ import annotations

import promlib
from cockpit_runbooks import dcgmrules as r

END = 10_000.0
W = r.Window(END, 3600, idle_s=600)
A30 = "a30-mig-gpu0-clock-reasons-gpu-idle-issue317-EXCERPT.prom"
H100 = "h100-8gpu-gpu-node-1-580.105.08-sampled.prom"
V100 = "v100-4gpu-r6i3n0-issue250-EXCERPT.prom"

def test_a30_recording_its_mig_instances_make_one_gpu_with_the_recorded_bitmask():
    series = promlib.recorded_series(A30, END)
    assert set(series) == {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}
    (gpu, pts), = series["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"].items()  # GPU_I_ID 3 and 4 of gpu="0"
    assert gpu == 0 and {v for _, v in pts} == {1.0} and len(pts) == 241


def test_a30_gpu_idle_bit_is_named_and_is_not_a_throttle_warning():
    verdicts, judged = r.judge(promlib.recorded_series(A30, END), ["thermal"], W)
    assert judged == {"thermal"}
    (v,) = verdicts
    assert (v.gpu, v.severity, v.code) == (0, "OK", "dcgm.clocks")
    reasons = v.text.split("(")[0]
    assert reasons == "GPU 0: clock event reasons within the window: gpu_idle "


def test_a30_recording_has_no_temperature_so_thermal_is_never_passed_whole():
    series = promlib.recorded_series(A30, END)
    assert r.missing_parts(series, ["thermal"]) == [("thermal", "temperature", (r.TEMP,))]


def test_h100_recording_has_temperatures_under_the_threshold_and_no_clock_reasons():
    series = promlib.recorded_series(H100, END)
    verdicts, judged = r.judge(series, ["thermal"], W)
    hottest = max(v for pts in series[r.TEMP].values() for _, v in pts)
    assert judged == {"thermal"} and len(series[r.TEMP]) == 8 and hottest < W.temp_warn_c
    assert verdicts == []  # under the threshold, and no bitmask to decode
    assert r.missing_parts(series, ["thermal"]) == [("thermal", "clock_event_reasons", r.THROTTLE)]
    # the same recording read with a threshold under its hottest GPU warns for that GPU alone
    hot = [v for v in r.judge(series, ["thermal"], r.Window(END, 3600, temp_warn_c=hottest))[0]]
    assert {v.code for v in hot} == {"dcgm.thermal"} and all(f"{hottest:g} C" in v.text for v in hot)


def test_v100_recording_pcie_replays_flat_at_zero_are_judged_and_clean():
    verdicts, judged = r.judge(promlib.recorded_series(V100, END), ["pcie", "nvlink"], W)
    assert judged == {"pcie"} and verdicts == []  # NVLink not exported: not judged, never passed
