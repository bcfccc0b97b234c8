"""Kernel logs as real machines write them (tests/data/xid-dmesg/SOURCES.md), judged
by the Xid probe: multi-line driver messages, consequences and their root cause,
legacy and Xid-less forms, time-stamp formats. Every expected value was read off
the recording by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from cockpit_runbooks import probes_node, xid
from cockpit_runbooks.context import RunContext

DATA = Path(__file__).resolve().parents[1] / "data"
XID = DATA / "xid-dmesg"


async def judge(name, node="gpu07"):
    rc = RunContext(make_ctx(config={}), node=node, kernel_logs=(str(XID / name),))
    return await probes_node.kernel_xid(rc, {})


def bad(res):
    return [(f.severity, f.title) for f in res.findings if f.severity != Severity.OK]


async def test_the_drivers_three_line_fall_off_message_is_one_crit():
    # "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0" + two indented continuation lines, no Xid
    res = await judge("nvsentinel-issue155-multiline-fallen-off-bus-no-xid-EXCERPT.txt")
    assert bad(res) == [(Severity.CRIT, "gpu07 GPU 0000:b3:00: fall-off without Xid (GPU has fallen off the bus "
                                        "(no Xid line)) -> RESTART_BM"),
                        # "NVRM: The NVIDIA probe routine failed for 1 device(s)." names no GPU: not understood
                        (Severity.UNKNOWN, "gpu07: 1 NVIDIA fault line(s) not understood, so not judged (first: "
                                           "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).)")]
    assert res.facts["xid_reason"] == "fallen off the bus (no Xid) RESTART_BM PCI 0000:b3:00"
    (ev,) = xid.parse_log((XID / "nvsentinel-issue155-multiline-fallen-off-bus-no-xid-EXCERPT.txt").read_text())
    assert (ev.kind, ev.stamp, ev.line_no) == ("fallen", "1843.308145", 1)


async def test_xid_45_caused_by_an_earlier_xid_names_the_root_cause_and_its_action():
    res = await judge("open-gpu-kernel-modules-issue1150-xid45-caused-by-previous-xid145-149-EXCERPT.txt")
    titles = [t for _, t in bad(res)]
    # four GPUs, each one CRIT on its root cause; no "restart the Fabric Manager" (45's own action)
    assert len(titles) == 4 and not any("RESTART_FM" in t for t in titles)
    assert "gpu07 GPU 0000:dc:00: Xid 45 (consequence), Xid 149 (root cause, named by Xid 45)" in titles[0]
    assert all(t.endswith("-> RESET_GPU") for t in titles)
    assert {t.split(":", 1)[0] for t in titles} == {"gpu07 GPU 0000"}
    by_pci = {v.pci: v for v in xid.by_gpu(xid.parse_log(
        (XID / "open-gpu-kernel-modules-issue1150-xid45-caused-by-previous-xid145-149-EXCERPT.txt").read_text()))}
    assert {p: v.root_cause for p, v in by_pci.items()} == {"0000:dc:00": 149, "0000:ed:00": 145, "0000:ba:00": 145,
                                                              "0000:97:00": 145}
    # the eighth line is cut before "caused by": the GPU's other 45 names its cause (145)
    assert by_pci["0000:97:00"].consequences == (45,)


async def test_gsp_heartbeat_and_rpc_timeouts_without_an_xid():
    res = await judge("open-gpu-kernel-modules-issue1230-gsp-heartbeat-timeout-no-xid-EXCERPT.txt")
    assert bad(res) == [(Severity.CRIT, "gpu07 GPU6: GSP timeout without Xid (GSP timeout (no Xid line)) -> RESET_GPU")]
    assert res.facts["xid_reason"] == "GSP timeout (no Xid) RESET_GPU GPU6"


@pytest.mark.parametrize("name,title", [
    # "NVRM: Xid (0000:03:00): 13, 0003 00000000 ..." (no "PCI:"): Graphics Engine Exception
    ("forum-2012-legacy-xid13-no-pci-prefix-syslog-EXCERPT.txt",
     "gpu07 GPU 0000:03:00: Xid 13 (Graphics Engine Exception (ROBUST_CHANNEL_GR_EXCEPTION)) -> RESTART_APP"),
    # "NVRM: Xid (0000:01:00): 16, " (its text wrapped to the next line); 16 is not in the catalog
    ("forum-2012-legacy-xid16-no-pci-prefix-wrapped.txt",
     "gpu07 GPU 0000:01:00: Xid 16 (not in the Ampere+ Xid catalog) -> CONTACT_SUPPORT"),
])
async def test_legacy_xid_form_without_pci_prefix(name, title):
    res = await judge(name)
    assert bad(res) == [(Severity.WARN, title)]


@pytest.mark.parametrize("name,fmt,stamp", [
    ("gpud-dmesg-time-format-iso-xid48-63-94.log", "dmesg --time-format=iso", "2024-11-15T12:02:03,470068+00:00"),
    ("forum-2012-legacy-xid13-no-pci-prefix-syslog-EXCERPT.txt", "journalctl -k / kern.log", "May 10 22:25:01"),
    ("gpu-burn-issue1-aer-surprise-down-then-xid79-EXCERPT.txt", "dmesg", "74889.644138"),
    ("returnn-issue1500-dmesg-H-relative-stamps-aer-fatal-EXCERPT.txt", "dmesg -H (relative stamps)", None),
])
def test_time_stamp_formats_are_detected_and_kept(name, fmt, stamp):
    text = (XID / name).read_text()
    assert xid.detect_format(text) == fmt
    evs = xid.parse_log(text)
    assert (evs[0].stamp if evs else None) == stamp


async def test_dbe_with_a_row_remap_is_drain_and_reset_on_iso_stamps():
    res = await judge("gpud-dmesg-time-format-iso-xid48-63-94.log")
    (crit,) = [t for s, t in bad(res) if s == Severity.CRIT]
    assert crit == ("gpu07 GPU 0000:19:00: Xid 48, Xid 63, Xid 94 (Double Bit ECC Error (ROBUST_CHANNEL_GPU_ECC_DBE)) "
                    "-> DRAIN_AND_RESET")
    assert res.sources == [f"{XID / 'gpud-dmesg-time-format-iso-xid48-63-94.log'}: dmesg --time-format=iso"]


async def test_nvlink5_fatal_and_nonfatal():
    res = await judge("gpud-pr1174-nvlink5-xid149-145-and-94-kmsg-lines-EXCERPT.txt")
    assert [(s, t.rsplit("-> ", 1)[1]) for s, t in bad(res)] == [
        (Severity.CRIT, "RESET_GPU"), (Severity.CRIT, "RESET_GPU"),  # 149 NETIR ... Fatal, twice
        (Severity.WARN, "CONTACT_SUPPORT"),  # 145 RLW_RXPIPE Nonfatal
        (Severity.WARN, "RESTART_APP")]  # 94 Contained ECC error


async def test_a_file_that_is_not_a_kernel_log_is_unknown():
    res = await judge("../nvlink/gpud-nvlink-status-8x-a100-sxm4-80gb-12-links-25gbps.txt")
    assert [(f.severity, f.rule) for f in res.findings] == [(Severity.UNKNOWN, "xid.unreadable")]
    assert res.sources[0].endswith(": no kernel log line recognised")


def test_the_catalog_has_the_blackwell_era_codes():
    # NVIDIA's catalog (via gpud catalog_generated.go): 171 UNCORRECTABLE_DRAM_ERROR, details of an Xid 48
    assert xid.CATALOG_SHEET[171][0] == "UNCORRECTABLE_DRAM_ERROR"
    assert xid.classify(xid.XidEvent(1, "0000:01:00", 171, "")).action == "RESET_GPU"
    assert {154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 172} <= set(xid.CATALOG_SHEET)
