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


# --- NVSwitch SXid, the Fabric Manager's log, lines nothing understood, empty files (issue #26) ---

def findings(res):
    return [(f.severity, f.rule, f.title) for f in res.findings]


async def test_non_fatal_sxids_are_a_warn_never_no_xid():
    # two "22013, Non-fatal" records (links 00 and 01) on one switch, with their Severity/Data lines
    res = await judge("nvtrust-issue124-sxid-22013-nonfatal-plain-dmesg-EXCERPT.txt")
    assert findings(res) == [(Severity.WARN, "sxid.nonfatal", "gpu07 NVSwitch 0000:02:00 (nvswitch1): SXid 22013 "
                              "Non-fatal x2 (Link 00 Minion Link DLREQ interrupt) -> NONFATAL (kernel log)")]
    res = await judge("canonical-tdx-issue414-sxid-22013-nonfatal-links-44-46-EXCERPT.txt")
    assert [(s, r) for s, r, _ in findings(res)] == [(Severity.WARN, "sxid.nonfatal")]
    assert "SXid 22013 Non-fatal x3 (Link 44" in res.findings[0].title


async def test_fatal_sxids_drain_and_reboot_beside_the_xid_79():
    res = await judge("gpud-sxid-readme-xid79-then-fatal-sxid-20034-EXCERPT.txt")
    got = findings(res)
    assert got[0][:2] == (Severity.CRIT, "xid.drain.restart_bm") and "Xid 79" in got[0][2]
    # three switches, each "20034, Fatal, Link N LTSSM Fault Up"; nvswitch0 twice (links 63 and 62)
    assert [(s, r, t.split(": ", 1)[0]) for s, r, t in got[1:]] == [
        (Severity.CRIT, "xid.drain.restart_bm", "gpu07 NVSwitch 0000:06:00 (nvswitch1)"),
        (Severity.CRIT, "xid.drain.restart_bm", "gpu07 NVSwitch 0000:05:00 (nvswitch0)"),
        (Severity.CRIT, "xid.drain.restart_bm", "gpu07 NVSwitch 0000:07:00 (nvswitch2)")]
    assert "SXid 20034 Fatal x2 (Link 63 LTSSM Fault Up)" in got[2][2]
    assert res.facts["xid_node"] == "gpu07" and "fatal SXid 20034 RESTART_BM NVSwitch 0000:06:00" in res.facts["xid_reason"]


async def test_a_lone_fatal_sxid_line_is_read_not_refused():
    # the line alone, as an operator pastes it (it was refused as "not a kernel log")
    from cockpit_runbooks import kernellog

    line = (XID / "gpud-sxid-readme-xid79-then-fatal-sxid-20034-EXCERPT.txt").read_text().splitlines()[5]
    assert "20034, Fatal" in line
    for text in (line, line.split("] ", 1)[1]):  # with and without its dmesg stamp
        reading = kernellog.read(text + "\n")
        assert reading.fmt is not None and [s.action for s in reading.switches] == ["RESTART_BM"], text


async def test_an_sxid_whose_fatal_line_is_missing_is_reported_as_such():
    res = await judge("gpud-pr338-decode-iso-sxid-12028-data-line-only.txt")
    assert findings(res) == [(Severity.WARN, "sxid.unclassified", "gpu07 NVSwitch 0000:84:00 (nvswitch1): SXid 12028 "
                              "(no Fatal/Non-fatal line) -> UNCLASSIFIED (kernel log)")]


async def test_fabric_manager_log_nvswitch_errors_and_a_line_with_no_rule():
    res = await judge("gpud-fabricmanager-log-fatal-20034-nonfatal-12028-multicast-EXCERPT.txt")
    assert res.sources[0].endswith(": nvidia-fabricmanager log")
    assert findings(res)[0] == (Severity.CRIT, "xid.drain.restart_bm", "gpu07 NVSwitch 0000:86:00: SXid 20034 Fatal "
                                "(physical id 3 port 33), SXid 12028 Non-fatal (physical id 3 port 61) -> RESTART_BM "
                                "(Fabric Manager log)")
    # "failed to find the GPU handle ... in the multicast team": an FM error cockpit has no rule for
    assert findings(res)[1][:2] == (Severity.UNKNOWN, "xid.not_understood")
    assert "failed to find the GPU handle" in res.findings[1].title
    # gpud's fabricmanager.log: 100 INFO lines and one non-fatal 12028 (it was "not a kernel log")
    res = await judge("gpud-nvidia-fabricmanager.log")
    assert findings(res) == [(Severity.WARN, "sxid.nonfatal", "gpu07 NVSwitch 0000:86:00: SXid 12028 Non-fatal "
                              "(physical id 3 port 61) -> NONFATAL (Fabric Manager log)")]


async def test_fabric_manager_failure_in_a_journal_is_unknown_naming_the_lines():
    res = await judge("gpu-operator-issue610-fabricmanager-journal-nothing-to-do-EXCERPT.txt")
    assert [(s, r) for s, r, _ in findings(res)] == [(Severity.UNKNOWN, "xid.not_understood")]
    assert res.findings[0].title.startswith("gpu07: 2 NVIDIA fault line(s) not understood")
    assert any("NV_WARN_NOTHING_TO_DO" in e for e in res.findings[0].evidence)


@pytest.mark.parametrize("name,count", [
    # AER lines for the GPU's own function ("nvidia 0000:03:00.0: AER: can't recover"): no Xid rule reads them
    ("returnn-issue1500-dmesg-H-relative-stamps-aer-fatal-EXCERPT.txt", 2),
    # beside the Xid 154: the GSP assertion and ICD halt lines name no GPU
    ("open-gpu-kernel-modules-issue446-xid154-gsp-rpc-timeout-EXCERPT.txt", 4),
    ("gpud-dmesg-time-format-iso-xid48-63-94.log", 30),  # nvidia-peermem "ERROR detected invalid context"
])
async def test_nvidia_fault_lines_not_understood_are_named(name, count):
    res = await judge(name)
    (unk,) = [f for f in res.findings if f.rule == "xid.not_understood"]
    assert unk.severity == Severity.UNKNOWN and f": {count} NVIDIA fault line(s) not understood" in unk.title
    assert not any(f.rule == "xid.none" for f in res.findings)


async def test_context_lines_of_a_judged_gpu_are_not_flagged():
    # the GSP dump after Xid 119 names GPU 0000:9b:00, and "GPU6 ..." lines follow GPU6's GSP timeout
    for name in ("gpud-dmesg-T-xid119-gsp-rpc-timeout-xe9680.log",
                 "open-gpu-kernel-modules-issue1230-gsp-heartbeat-timeout-no-xid-EXCERPT.txt"):
        res = await judge(name)
        assert not [f for f in res.findings if f.rule == "xid.not_understood" and "GPU6" in f.title], name


async def test_an_empty_kernel_log_says_it_is_empty(tmp_path):
    from cockpit_runbooks.context import NotApplicable

    empty = tmp_path / "dmesg.txt"
    empty.write_text("\n")
    rc = RunContext(make_ctx(config={}), kernel_logs=(str(empty),))
    with pytest.raises(NotApplicable, match=r"dmesg.txt: the file is empty: nothing to judge"):
        await probes_node.kernel_xid(rc, {})
    # beside a log with something in it, the empty one is named as an input and skipped
    rc = RunContext(make_ctx(config={}), kernel_logs=(str(empty), str(XID / "modal-docs-gpu-health-xid79-line.txt")))
    res = await probes_node.kernel_xid(rc, {})
    assert res.sources[0] == f"{empty}: empty file (nothing to judge)" and bad(res)[0][0] == Severity.CRIT


@pytest.mark.parametrize("name", ["pop-os-issue3363-xid79-journalctl-EXCERPT.txt",
                                  "nvsentinel-issue155-multiline-fallen-off-bus-no-xid-EXCERPT.txt",
                                  "modal-docs-gpu-health-xid79-line.txt",
                                  "gpud-sxid-readme-xid79-then-fatal-sxid-20034-EXCERPT.txt"])
async def test_pcie_sees_the_gpu_that_fell_off_the_bus(name):
    rc = RunContext(make_ctx(config={}), kernel_logs=(str(XID / name),))
    res = await probes_node.pcie_aer(rc, {})
    assert [f.rule for f in res.findings if f.severity == Severity.CRIT] == ["pcie.fallen_off_bus"]
    assert not any(f.rule == "pcie.no_aer" for f in res.findings)


def test_healthy_driver_chatter_is_not_a_fault_line():
    from cockpit_runbooks import unrecognised

    # boot lines of the recordings: module load, NVSwitch probe, MSI
    healthy = [ln for name in ("nvtrust-issue124-sxid-22013-nonfatal-plain-dmesg-EXCERPT.txt",
                               "canonical-tdx-issue414-sxid-22013-nonfatal-links-44-46-EXCERPT.txt",
                               "nvsentinel-issue155-multiline-fallen-off-bus-no-xid-EXCERPT.txt")
               for ln in (XID / name).read_text().splitlines() if "loading NVIDIA" in ln or "using MSI" in ln
               or "Probing device" in ln]
    assert len(healthy) == 6 and not any(unrecognised.is_fault_like(ln) for ln in healthy)
    # the driver's advice after a crash dump names nvidia-bug-report.sh: "bug" there is no kernel BUG
    assert not unrecognised.is_fault_like("NVRM: nvidia-bug-report.sh as root to collect this data before")
    # plain lines are numbered from 1; the probe-routine failure is the one fault line of NVSentinel#155's five
    lines = (XID / "nvsentinel-issue155-multiline-fallen-off-bus-no-xid-EXCERPT.txt").read_text().splitlines()
    assert unrecognised.not_understood(lines, understood={1, 2, 3}) == [
        (4, "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).")]
