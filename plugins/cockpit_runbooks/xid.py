"""NVIDIA Xid lines (and Xid-less GPU faults) from kernel logs, classified by the Xid catalog.

Accepts what operators copy off a node: plain ``dmesg``, ``dmesg -T``, ``dmesg -H``
(relative stamps), ``dmesg --time-format=iso`` (with or without ``--decode``), ``journalctl -k``
and kern.log lines, and lines wrapped by other collectors. The Xid is found
anywhere in the line; the wrapper only supplies the time stamp, kept verbatim.
Recorded forms (tests/data/xid-dmesg/SOURCES.md):

* ``NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., <message>`` and the legacy
  form without ``PCI:`` (``NVRM: Xid (0000:01:00): 16,``); the MIG form
  ``(PCI:0000:01:00 GPU-I:05)`` is accepted too, though no recording shows it;
* driver messages the driver splits over several lines, the stamp on the first
  and the others indented (``NVRM: The NVIDIA GPU 0000:b3:00.0`` /
  ``NVRM: (PCI ID: ...) installed in this system has`` / ``NVRM: fallen off the
  bus ...``): they are joined before matching;
* ``Xid 45 ... caused by previous Xid 145``: the consequence names its cause;
* GSP faults with no Xid line (``NVRM: GPU6 _kgspLogRpcTimeout: ... GSP Timeout``,
  ``_kgspIsHeartbeatTimedOut``).

NVSwitch SXids and Fabric Manager lines are read by sxid.py; kernellog.py reads a log
once for every probe.

Actions (resolved): RESTART_APP, RESTART_FM, RESET_GPU, DRAIN_AND_RESET,
RESTART_BM, IGNORE, CONTACT_SUPPORT.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .xid_catalog import CATALOG_SHEET

XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)"
                    r"(?: GPU-I:\d+)?\): (\d+),?\s*(.*)$")
# Newer drivers omit pid for 79; older ones write pid=123 or pid='<unknown>'.
_PID = re.compile(r"^pid=(?:'?<unknown>'?|(\d+)),\s*(?:name=(.*?),\s*)?(.*)$")
# A GPU that fell off the bus can be reported with no Xid at all (NVSentinel#155).
FALLEN_RE = re.compile(r"NVRM: (?:The NVIDIA )?(?:GPU )?(?:at )?(?:PCI:)?"
                       r"([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?):? .*fallen off the bus")
CAUSED_BY_RE = re.compile(r"caused by previous Xid (\d+)")
# GSP faults the driver logs without an Xid line; the GPU is named by the driver's index.
GSP_RE = re.compile(r"NVRM: (GPU\d+) (?:_kgspLogRpcTimeout: .*GSP Timeout|_kgspIsHeartbeatTimedOut: Heartbeat timed out"
                    r"|.*Timeout waiting for RPC from GSP)")
_XID154 = re.compile(r"changed from (0x[0-9a-fA-F]+) \(([^)]*)\) to (0x[0-9a-fA-F]+) \(([^)]*)\)")
# A continuation of a multi-line driver message: indented, no stamp, "NVRM:" again.
_CONTINUED = re.compile(r"^\s+NVRM: (.*)$")

_STAMPS = (
    re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]{8} \d{4})\]"),  # dmesg -T
    re.compile(r"^\w+\s*:\w+\s*: (\d{4}-\d\d-\d\dT[\d:,.]+[+-][\d:]+)"),  # dmesg --decode iso
    re.compile(r"^(\d{4}-\d\d-\d\dT[\d:,.]+(?:[+-][\d:]+|Z)?)\s"),  # dmesg --time-format=iso
    re.compile(r"^(\w{3} +\d+ [\d:]{8}) \S+ kernel:"),  # journalctl / kern.log
    re.compile(r"\[(\d{4}-\d\d-\d\dT[\d:.]+Z?)\]"),  # collectors with ISO stamps in brackets
    re.compile(r"^\[\s*(\d+\.\d+)\]"),  # plain dmesg: seconds since boot
    re.compile(r"^\[\s*(\+\d+\.\d+)\]"),  # dmesg -H / --reltime: seconds since the line before
)

ACTION_RANK = {
    "IGNORE": 0, "RESTART_APP": 1, "RESTART_FM": 2, "CONTACT_SUPPORT": 3,
    "RESET_GPU": 4, "DRAIN_AND_RESET": 5, "RESTART_BM": 6,
}
# Catalog buckets that are not one of the resolved actions above.
_BUCKET = {"CHECK_MECHANICALS": "CONTACT_SUPPORT", "UPDATE_SWFW": "CONTACT_SUPPORT", "RESTART_VM": "RESTART_APP",
           "CHECK_UVM": "CONTACT_SUPPORT", "WORKFLOW_NVLINK_ERR": "RESET_GPU"}

# Operator advice where the catalog's bucket alone says too little. REFERENCE.md section 3.
ADVICE: dict[int, str] = {
    13: "application bug; no drain unless it repeats across jobs",
    31: "application bug (bad GPU memory access)",
    43: "the application hit a software fault; GPU healthy",
    45: "secondary; find the primary Xid",
    48: "drain and reset; RMA if it repeats",
    54: "check the GPU board's auxiliary power cable (CHECK_MECHANICALS)",
    62: "drain and reset the GPU",
    63: "reset the GPU when convenient to activate the remap",
    64: "drain; RMA if it persists after reboot",
    74: "drain and reset; check the peer GPU, which may be the real culprit",
    79: "drain and power-cycle; check PCIe, PSU, riser; RMA if it repeats",
    92: "trend it; plan maintenance",
    94: "restart the job; reset the GPU when convenient",
    95: "drain and reset the GPU",
    119: "drain and reset; power-cycle if it persists",
    120: "drain and reset; power-cycle if it persists",
    140: "drain and reset; vendor if it persists",
    154: "follow the announced recovery action",
    171: "details of an Xid 48 (DRAM): drain and reset; RMA if it repeats",
    172: "details of an Xid 48 (SRAM): drain and reset; RMA if it repeats",
}
NVLINK5 = frozenset(range(144, 151))

# Xid 154 recovery actions -> resolved action.
RECOVERY_154 = {
    "none": "IGNORE",
    "drain p2p": "DRAIN_AND_RESET",
    "drain and reset": "DRAIN_AND_RESET",
    "gpu reset required": "RESET_GPU",
    "node reboot required": "RESTART_BM",
}
# Xids that point at the hardware: a repeat on the same GPU suggests an RMA.
HARDWARE_XIDS = frozenset({48, 62, 64, 74, 79, 95, 119, 120, 140, 171, 172, *NVLINK5})


def norm_pci(bus_id: str) -> str:
    """``0000:9b:00``, ``00000000:9B:00.0`` -> ``0000:9b:00`` (domain:bus:device)."""
    parts = bus_id.strip().lower().split(".")[0].split(":")
    if len(parts) == 3:
        try:
            return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"
        except ValueError:
            pass
    return bus_id.strip().lower()


@dataclass(frozen=True, slots=True)
class XidEvent:
    """One Xid, or a fault the driver reports without one, from a (joined) log line."""

    line_no: int
    pci: str  # normalised (see norm_pci), or the driver's "GPU6" when it gives no bus id
    xid: int | None  # None: a fault without an Xid (see kind)
    message: str
    pid: int | None = None
    process: str | None = None
    stamp: str = ""  # the wrapper's time stamp, verbatim
    raw: str = ""
    kind: str = "xid"  # xid | fallen (off the bus, no Xid) | gsp (GSP timeout, no Xid)
    caused_by: int | None = None  # "caused by previous Xid N"


@dataclass(frozen=True, slots=True)
class XidClass:
    """What one event calls for."""

    catalog: str  # the catalog's immediate action (XID_154, WORKFLOW_XID_48 ...)
    action: str  # resolved: one of ACTION_RANK
    mnemonic: str
    advice: str


def _stamp(line: str) -> str:
    for rx in _STAMPS:
        m = rx.search(line)
        if m:
            return m.group(1)
    return ""


def parse_line(line: str, line_no: int = 0) -> XidEvent | None:
    """An XidEvent for an Xid, fall-off or GSP-timeout line, else None. Never raises."""
    m = XID_RE.search(line)
    if m:
        rest = m.group(3).strip()
        pid, name = None, None
        pm = _PID.match(rest)
        if pm:
            pid = int(pm.group(1)) if pm.group(1) else None
            name, rest = pm.group(2), pm.group(3).strip()
        cause = CAUSED_BY_RE.search(rest)
        return XidEvent(line_no, norm_pci(m.group(1)), int(m.group(2)), rest, pid, name, _stamp(line),
                        line.rstrip("\n"), caused_by=int(cause.group(1)) if cause else None)
    if "Xid" in line:
        return None
    f = FALLEN_RE.search(line)
    if f:
        return XidEvent(line_no, norm_pci(f.group(1)), None, "GPU has fallen off the bus (no Xid)",
                        stamp=_stamp(line), raw=line.rstrip("\n"), kind="fallen")
    g = GSP_RE.search(line)
    if g:
        return XidEvent(line_no, g.group(1), None, "GSP timeout (no Xid): " + line.split("NVRM: ", 1)[1][:160],
                        stamp=_stamp(line), raw=line.rstrip("\n"), kind="gsp")
    return None


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) with multi-line driver messages joined."""
    out: list[tuple[int, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _CONTINUED.match(line)
        if m and out and "NVRM:" in out[-1][1]:
            out[-1] = (out[-1][0], out[-1][1].rstrip() + " " + m.group(1))
        else:
            out.append((n, line))
    return out


def parse_log(text: str) -> list[XidEvent]:
    """Every Xid event in a kernel log, in order (one per GSP timeout burst and GPU)."""
    out: list[XidEvent] = []
    for n, line in logical_lines(text):
        ev = parse_line(line, n)
        if ev is None:
            continue
        if ev.kind == "gsp" and any(e.kind == "gsp" and e.pci == ev.pci and e.message == ev.message for e in out):
            continue  # the driver repeats the same line; one event per distinct message
        out.append(ev)
    return out


def recovery_154(message: str) -> tuple[str, str] | None:
    """(from, to) recovery action names of an Xid 154 message, e.g. ("None", "Node Reboot Required")."""
    m = _XID154.search(message)
    return (m.group(2), m.group(4)) if m else None


def catalog_entry(xid: int) -> tuple[str, str, str] | None:
    """(mnemonic, description, bucket) from the catalog sheet, or None when not listed."""
    return CATALOG_SHEET.get(xid)


def _nvlink5(message: str) -> str:
    # WORKFLOW_NVLINK5_ERR: the message says Fatal or Nonfatal; a named-only cause counts as fatal.
    return "CONTACT_SUPPORT" if re.search(r"\bNonfatal\b", message) else "RESET_GPU"


def classify(ev: XidEvent, same_gpu: Iterable[int] = ()) -> XidClass:
    """Classify one event; ``same_gpu`` are the other Xids seen on that GPU
    (they decide the workflows of Xid 45 and 48)."""
    if ev.kind == "fallen":
        return XidClass("RESTART_BM", "RESTART_BM", "GPU has fallen off the bus (no Xid line)", ADVICE[79])
    if ev.kind == "gsp":
        return XidClass("RESET_GPU", "RESET_GPU", "GSP timeout (no Xid line)", ADVICE[119])
    entry = catalog_entry(ev.xid)
    if entry is None:
        return XidClass("UNKNOWN", "CONTACT_SUPPORT", "not in the Ampere+ Xid catalog",
                        "look it up in the Xid catalog for older GPUs; contact support")
    mnem, desc, bucket = entry
    label = f"{desc} ({mnem.split(' /')[0]})"
    advice = ADVICE.get(ev.xid, bucket.replace("_", " ").lower() or "no action in the catalog")
    others = set(same_gpu) - {ev.xid}
    if ev.xid == 45:
        cause = ev.caused_by or next(iter(sorted(others)), None)
        if cause is not None:
            return XidClass(bucket, "IGNORE", f"{label}: a consequence of Xid {cause}",
                            f"act on Xid {cause}, its root cause")
        return XidClass(bucket, "RESTART_FM", label, "alone, an Xid 45 calls for a Fabric Manager restart")
    if ev.xid in (48, 171, 172):
        action = "DRAIN_AND_RESET" if others & {63, 64} else "RESET_GPU"
    elif ev.xid == 154:
        rec = recovery_154(ev.message)
        action = RECOVERY_154.get(rec[1].strip().lower(), "CONTACT_SUPPORT") if rec else "CONTACT_SUPPORT"
        if rec:
            advice = f"recovery action now {rec[1]!r} (was {rec[0]!r})"
    elif ev.xid in NVLINK5:
        action = _nvlink5(ev.message)
    else:
        action = _BUCKET.get(bucket, bucket if bucket in ACTION_RANK else "CONTACT_SUPPORT")
    return XidClass(bucket, action, label, advice)


def cause_event(ev: XidEvent) -> XidEvent:
    """The root cause an Xid 45 names, as an event of its own (same line, same GPU)."""
    return XidEvent(ev.line_no, ev.pci, ev.caused_by, f"named by Xid 45: {ev.message}", stamp=ev.stamp, raw=ev.raw)


@dataclass(frozen=True, slots=True)
class GpuVerdict:
    """Everything one GPU (PCI bus id) logged, and the worst action it calls for."""

    pci: str
    xids: tuple[int | None, ...]
    action: str
    events: tuple[tuple[XidEvent, XidClass], ...]
    root_cause: int | None = None  # the Xid a consequence (45) names, when it names one

    @property
    def consequences(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(e.xid for e, c in self.events if e.caused_by is not None and e.xid is not None))


def by_gpu(events: Sequence[XidEvent]) -> list[GpuVerdict]:
    """Group events by GPU and resolve each GPU's worst action, GPUs in first-seen order.

    A consequence (Xid 45 ``caused by previous Xid N``) is not acted on itself: the
    GPU's action is that of Xid N, classified from its own line when the log has it,
    else from the catalog."""
    groups: dict[str, list[XidEvent]] = {}
    for ev in events:
        groups.setdefault(ev.pci, []).append(ev)
    out = []
    for pci, evs in groups.items():
        seen = [e.xid for e in evs if e.xid is not None]
        if 79 in seen:  # the driver's own fall-off line repeats the Xid 79 event
            evs = [e for e in evs if e.kind != "fallen"]
        causes = [e for e in evs if e.caused_by is not None]
        context = seen + [e.caused_by for e in causes]  # a 45 cut before "caused by" shares its GPU's cause
        classified = [(e, classify(e, context)) for e in evs]
        root = causes[0].caused_by if causes else None
        if root is not None and root not in seen:
            first = causes[0]
            classified.append((cause_event(first), classify(cause_event(first), context)))
        action = max((c.action for _, c in classified), key=lambda a: ACTION_RANK.get(a, 3))
        xids = tuple(dict.fromkeys(e.xid for e, _ in classified))
        out.append(GpuVerdict(pci, xids, action, tuple(classified), root))
    return out


_FORMATS = (
    ("dmesg -T", _STAMPS[0]), ("dmesg --decode --time-format=iso", _STAMPS[1]),
    ("dmesg --time-format=iso", _STAMPS[2]), ("journalctl -k / kern.log", _STAMPS[3]),
    ("collector lines with ISO stamps", _STAMPS[4]), ("dmesg", _STAMPS[5]),
    ("dmesg -H (relative stamps)", _STAMPS[6]),
)


def detect_format(text: str) -> str | None:
    """The kernel-log wrapper most lines carry (``dmesg -T``, ``journalctl -k / kern.log``, ...),
    ``"NVRM lines"`` for bare driver lines, or None when nothing looks like a kernel log."""
    counts: dict[str, int] = {}
    nvrm = 0
    for line in text.splitlines()[:5000]:
        nvrm += "NVRM:" in line
        for name, rx in _FORMATS:
            if rx.search(line):
                counts[name] = counts.get(name, 0) + 1
                break
    if counts:
        return max(counts, key=lambda k: counts[k])
    return "NVRM lines" if nvrm else None
