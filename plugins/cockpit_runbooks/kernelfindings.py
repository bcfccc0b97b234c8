"""Findings from a KernelReading that the GPU-Xid findings (probes_node) do not cover:
NVSwitch SXids, NVIDIA fault lines nothing understood, and what a reading says about PCIe.
"""

from __future__ import annotations

import re

from .context import ProbeResult
from .kernellog import KernelReading

AER = re.compile(r"AER: .*(error|Error)|PCIe Bus Error")
_AER_FATAL = re.compile(r"Uncorrected \(Fatal\)|Surprise Down Error")
# What each SXid verdict calls for: (finding code, severity, what to do)
SXID_FINDING = {
    # the drain/reboot steps of the gpu-xid runbook act on xid.drain.*: a fatal SXid is one
    "RESTART_BM": ("xid.drain.restart_bm", "CRIT",
                   "drain the node; a fatal NVSwitch error stops NVLink traffic through the switch until the "
                   "GPUs and NVSwitches are reset: reboot the node (then check the Fabric Manager log)"),
    "NONFATAL": ("sxid.nonfatal", "WARN",
                 "the switch carried on; watch whether it repeats on the same link "
                 "(nvidia-smi nvlink -e, the Fabric Manager log) and tell the vendor if it does"),
    "UNCLASSIFIED": ("sxid.unclassified", "WARN",
                     "the log holds this SXid's Severity/Data lines but not the line saying Fatal or Non-fatal "
                     "(cut?): read the whole kernel log"),
}


def sxid_findings(reading: KernelReading, title, res: ProbeResult) -> list[str]:
    """Add one finding per NVSwitch; return drain reasons for the fatal ones."""
    reasons = []
    for sw in reading.switches:
        code, sev, todo = SXID_FINDING[sw.action]
        who = f"NVSwitch {sw.pci}" + (f" ({sw.switch})" if sw.switch and not sw.switch.startswith("physical") else "")
        ev = [f"line {e.line_no}: {e.raw.strip()[:200]}" for e in sw.events[:8]]
        source = "Fabric Manager log" if all(e.source == "fabric manager" for e in sw.events) else "kernel log"
        res.add(sev, code, title(f"{sw.describe()} -> {sw.action} ({source})", who), todo, evidence=ev)
        res.evidence.extend(ev)
        if sw.fatal:
            reasons.append(f"fatal SXid {sw.sxids[0]} RESTART_BM NVSwitch {sw.pci}")
    return reasons


def unknown_findings(reading: KernelReading, title, res: ProbeResult, prefix: str,
                     judged: re.Pattern[str] | None = None) -> bool:
    """One UNKNOWN naming the NVIDIA fault lines nothing understood (never read as healthy);
    ``judged`` matches the lines the calling probe judges itself. True when there were any."""
    unknown = [(no, text) for no, text in reading.unknown if judged is None or not judged.search(text)]
    if not unknown:
        return False
    n = len(unknown)
    first = unknown[0][1]
    ev = [f"line {no}: {text[:200]}" for no, text in unknown[:8]]
    res.add("UNKNOWN", f"{prefix}.not_understood",
            title(f"{n} NVIDIA fault line(s) not understood, so not judged (first: {first[:120]})"),
            "cockpit has no rule for these lines: read them; the log is not called healthy while they stand",
            evidence=ev + ([f"... and {n - 8} more"] if n > 8 else []))
    return True


def pcie_findings(reading: KernelReading, text: str, title, res: ProbeResult) -> bool:
    """AER lines, and GPUs that fell off the bus (a lost PCIe link whether or not AER said so).

    Returns True when something was found."""
    lines = [ln.strip() for ln in text.splitlines() if AER.search(ln)]
    fatal = [ln for ln in lines if _AER_FATAL.search(ln)]
    if fatal:
        # an uncorrected fatal error takes the link down: the device behind it is lost
        res.add("CRIT", "pcie.aer_fatal", title(f"{len(fatal)} uncorrected (fatal) PCIe AER error line(s), "
                                               f"{len(lines)} AER line(s) in all"), evidence=fatal[:10],
                fix="drain the node; reseat or replace the device behind the port (a GPU may have fallen off the bus)")
    elif lines:
        res.add("WARN", "pcie.aer", title(f"{len(lines)} PCIe AER error line(s)"), evidence=lines[:10])
    for v in reading.fell_off:
        ev = [f"line {e.line_no}: {e.raw.strip()[:200]}" for e, _ in v.events[:4]]
        res.add("CRIT", "pcie.fallen_off_bus", title("the GPU fell off the bus: its PCIe link is lost"
                                                     + ("" if lines else " (no AER line reported it)"),
                                                     v.pci if v.pci.startswith("GPU") else f"GPU {v.pci}"),
                fix="drain and power-cycle the node; check the riser, slot and power; RMA if it repeats",
                evidence=ev)
    return bool(lines or reading.fell_off)
