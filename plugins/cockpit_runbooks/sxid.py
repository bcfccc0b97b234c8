"""NVSwitch SXid records, from the kernel log and from the Fabric Manager's log.

Recorded forms (tests/data/xid-dmesg/SOURCES.md):

* kernel: ``nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion
  Link DLREQ interrupt``, ``... 20034, Fatal, Link 63 LTSSM Fault Up``; the driver follows
  each record with ``SXid (...): N, Severity 1 Engine instance ...`` and ``SXid (...): N,
  Data {...}`` lines, which belong to it (a log cut may keep only those);
* Fabric Manager (``/var/log/fabricmanager.log``, ``[Jul 23 2024 07:53:55] [ERROR] [tid
  841] ...``): ``detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id
  00000000:86:00.0 physical id 3 port 33`` and ``... non-fatal error 12028 ...``.

The record says itself whether it is fatal, so no SXid catalog is needed to judge it:
a fatal SXid stops the NVLink traffic through that switch (NVIDIA's Fabric Manager
guide: the GPUs and NVSwitches must be reset, on bare metal a reboot of the node), a
non-fatal one was survived. A group with no Fatal/Non-fatal line (only its Severity or
Data lines) is reported as such, never as healthy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .xid import norm_pci

SXID_RE = re.compile(r"nvidia-(nvswitch\d+): SXid \(PCI:([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\): "
                     r"(\d+),\s*(.*)$")
FM_RE = re.compile(r"detected NVSwitch (fatal|non-fatal) error (\d+) on fid \d+ on NVSwitch pci bus id "
                   r"([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)(?: physical id (\d+))?(?: port (\d+))?",
                   re.IGNORECASE)
# The Fabric Manager's own log line: "[Jul 23 2024 07:53:55] [ERROR] [tid 841] ..."
FM_STAMP = re.compile(r"^\[(\w{3} \d\d \d{4} [\d:]{8})\] \[(ERROR|WARNING|WARN|INFO|DEBUG|FATAL)\]")
_HEADER = re.compile(r"^(Fatal|Non-fatal),\s*(.*)$", re.IGNORECASE)
_PART = re.compile(r"^(Severity \d+ |Data \{)")


@dataclass(frozen=True, slots=True)
class SXidEvent:
    """One SXid record (or a part of one) from a log line."""

    line_no: int
    pci: str  # the NVSwitch's bus id, normalised like the GPUs' (see xid.norm_pci)
    sxid: int
    fatal: bool | None  # None: a Severity/Data line, whose record header is elsewhere (or cut)
    detail: str
    switch: str = ""  # nvswitch3 (kernel), "physical id 3" (Fabric Manager)
    source: str = "kernel"  # kernel | fabric manager
    raw: str = ""


def parse_line(line: str, line_no: int = 0) -> SXidEvent | None:
    """An SXidEvent for a kernel SXid line or a Fabric Manager NVSwitch error line, else None."""
    m = SXID_RE.search(line)
    if m:
        rest = m.group(4).strip()
        h = _HEADER.match(rest)
        fatal = (h.group(1).lower() == "fatal") if h else None
        detail = h.group(2) if h else rest
        return SXidEvent(line_no, norm_pci(m.group(2)), int(m.group(3)), fatal, detail[:160], m.group(1), "kernel",
                         line.rstrip("\n"))
    f = FM_RE.search(line)
    if f:
        where = " ".join(p for p in (f"physical id {f.group(4)}" if f.group(4) else "",
                                     f"port {f.group(5)}" if f.group(5) else "") if p)
        return SXidEvent(line_no, norm_pci(f.group(3)), int(f.group(2)), f.group(1).lower() == "fatal", where,
                         f"physical id {f.group(4)}" if f.group(4) else "", "fabric manager", line.rstrip("\n"))
    return None


@dataclass(frozen=True, slots=True)
class SwitchVerdict:
    """Every SXid one NVSwitch (PCI bus id) logged, and what it calls for."""

    pci: str
    switch: str
    sxids: tuple[int, ...]
    fatal: bool | None  # True: any fatal record; False: only non-fatal ones; None: no record says
    events: tuple[SXidEvent, ...]

    @property
    def action(self) -> str:
        """RESTART_BM (fatal), NONFATAL, or UNCLASSIFIED (no record says which)."""
        return "RESTART_BM" if self.fatal else "NONFATAL" if self.fatal is False else "UNCLASSIFIED"

    def describe(self) -> str:
        """``SXid 20034 Fatal (Link 63 LTSSM Fault Up)``, one per code, worst first."""
        out = []
        for code in self.sxids:
            evs = [e for e in self.events if e.sxid == code]
            head = next((e for e in evs if e.fatal), None) or next((e for e in evs if e.fatal is False), None)
            if head is None:
                out.append(f"SXid {code} (no Fatal/Non-fatal line)")
            else:
                kind = "Fatal" if head.fatal else "Non-fatal"
                n = sum(1 for e in evs if e.fatal is not None)
                out.append(f"SXid {code} {kind}" + (f" x{n}" if n > 1 else "") + (f" ({head.detail})" if head.detail else ""))
        return ", ".join(out)


def parse_log(lines: Iterable[tuple[int, str]]) -> list[SXidEvent]:
    """Every SXid record part in (line number, text) pairs, in order."""
    return [ev for n, line in lines if (ev := parse_line(line, n)) is not None]


def by_switch(events: Iterable[SXidEvent]) -> list[SwitchVerdict]:
    """Group by NVSwitch in first-seen order; a switch is fatal when any record says so."""
    groups: dict[str, list[SXidEvent]] = {}
    for ev in events:
        groups.setdefault(ev.pci, []).append(ev)
    out = []
    for pci, evs in groups.items():
        said = [e.fatal for e in evs if e.fatal is not None]
        fatal = True if any(said) else False if said else None
        codes = sorted(dict.fromkeys(e.sxid for e in evs), key=lambda c: not any(e.fatal for e in evs if e.sxid == c))
        switch = next((e.switch for e in evs if e.switch), "")
        out.append(SwitchVerdict(pci, switch, tuple(codes), fatal, tuple(evs)))
    return out
