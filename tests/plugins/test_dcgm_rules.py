"""The verdict rules on DCGM series (plugins/cockpit_runbooks/dcgmrules.py), on series
as ``ctx.gpu_series.node_series`` returns them: name -> GPU -> [(t, value)]. The values
are those the exporter's fields take (Xid codes from NVIDIA's catalog, counters); the
same rules run against a real Prometheus in test_runbook_dcgm.py."""

from __future__ import annotations

from cockpit_runbooks import dcgmrules as r

END = 10_000.0
W = r.Window(END, 3600, idle_s=600)


def pts(*values, start=END - 3600, step=15.0):
    return [(start + k * step, float(v)) for k, v in enumerate(values)]


def flat(value, n=241, start=END - 3600, step=15.0):
    return pts(*([value] * n), start=start, step=step)


def test_counter_reset_is_read_as_a_restart_from_zero():
    assert r.increase(pts(5, 7, 7, 2, 3)) == 2 + 2 + 1  # 5->7, reset to 2 (all new), 2->3
    assert r.increase(pts(4)) is None  # one sample: nothing to compare, not 0


def test_a_new_xid_within_the_window_is_classified_and_drains():
    series = {r.XID: {0: pts(*[0] * 100, *[79] * 141), 1: flat(0)}}
    verdicts, judged = r.judge(series, ["xid"], W)
    assert judged == {"xid"}
    (v,) = verdicts
    assert (v.gpu, v.severity, v.code) == (0, "CRIT", "xid.drain.restart_bm") and "changed to 79" in v.text


def test_an_old_xid_is_said_never_counted_nor_drained():
    verdicts, _ = r.judge({r.XID: {0: flat(13)}}, ["xid"], W)
    (v,) = verdicts
    assert v.severity == "OK" and v.code == "dcgm.xid.old" and "not a count" in v.text


def test_a_series_that_began_inside_the_window_with_an_xid_is_not_enough_to_drain():
    late = flat(79, n=20, start=END - 300)  # the exporter restarted 5 min ago, already showing 79
    (v,) = r.judge({r.XID: {0: late}}, ["xid"], W)[0]
    assert v.severity == "WARN" and v.code == "dcgm.xid.unknown_when"


def test_ecc_and_remap_rules():
    series = {r.DBE: {0: pts(0, 0, 2), 1: flat(0)}, r.REMAP_FAIL: {2: flat(1)}, r.REMAP_UNCORR: {3: pts(1, 1, 2)}}
    verdicts, judged = r.judge(series, ["memory"], W)
    got = {(v.gpu, v.severity, v.code) for v in verdicts}
    assert got == {(0, "CRIT", "dcgm.ecc"), (2, "CRIT", "dcgm.remap.failure"), (3, "WARN", "dcgm.remap.uncorrectable")}
    assert judged == {"memory"}


def test_nvlink_errors_across_a_counter_reset_and_a_single_sample_is_not_judged():
    crc = r.NVLINK_ERRORS[0]
    series = {crc: {0: pts(100, 100, 3), 1: pts(7, 7, 7)}, r.PCIE_REPLAY: {1: pts(0, 0, 0)}}
    verdicts, judged = r.judge(series, ["nvlink", "pcie"], W)
    (v,) = verdicts
    assert v.gpu == 0 and v.code == "dcgm.nvlink.errors" and "+3" in v.text  # the reset is not a -97
    assert judged == {"nvlink", "pcie"}
    assert r.judge({r.PCIE_REPLAY: {0: pts(0, 0)}}, ["nvlink", "pcie"], W)[1] == {"pcie"}  # replays never pass NVLink
    assert r.judge({crc: {0: pts(5)}}, ["nvlink"], W) == ([], set())


def test_throttle_bits_that_hold_clocks_back_warn_sw_power_cap_does_not():
    series = {r.THROTTLE[0]: {0: pts(0x40, 0x40, 0x1), 1: pts(0x4, 0x4, 0x4)}, r.TEMP: {1: pts(60, 91, 70)}}
    verdicts, _ = r.judge(series, ["thermal"], W)
    got = {(v.gpu, v.severity, v.code) for v in verdicts}
    assert got == {(0, "WARN", "dcgm.throttle"), (1, "WARN", "dcgm.thermal"), (1, "OK", "dcgm.clocks")}
    assert "hw_thermal_slowdown" in next(v.text for v in verdicts if v.gpu == 0)
    assert "sw_power_cap" in next(v.text for v in verdicts if v.code == "dcgm.clocks")  # said, not a finding


def test_idle_needs_the_whole_idle_window_and_only_the_jobs_gpus():
    series = {r.UTIL: {0: flat(0), 1: flat(0), 2: pts(*[0] * 200, *[97] * 41), 3: flat(0, n=10, start=END - 150)}}
    verdicts, judged = r.judge(series, ["idle"], W, gpus=(0, 2, 3))
    by = {v.gpu: v.code for v in verdicts}
    assert by == {0: "dcgm.idle", 2: "dcgm.busy"}  # GPU 1 is not the job's; GPU 3 has 2.5 min of samples only
    assert judged == {"idle"}
    assert r.judge({r.UTIL: {3: flat(0, n=10, start=END - 150)}}, ["idle"], W)[1] == set()


def test_a_kind_without_its_series_is_not_judged():
    verdicts, judged = r.judge({r.UTIL: {0: flat(0)}}, ["xid", "memory"], W)
    assert verdicts == [] and judged == set()
