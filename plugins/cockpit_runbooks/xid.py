"""NVIDIA Xid lines from kernel logs, classified by the Xid catalog.

Accepts what operators copy off a node: plain ``dmesg``, ``dmesg -T``,
``dmesg --decode --time-format=iso``, ``journalctl -k`` and kern.log lines,
and lines wrapped by other collectors. The Xid itself is found anywhere in
the line with the catalog's regex (shared/REFERENCE.md section 3); the wrapper
only supplies the time stamp, kept verbatim.

Actions (catalog buckets, resolved): RESTART_APP, RESTART_FM, RESET_GPU,
DRAIN_AND_RESET, RESTART_BM, IGNORE, CONTACT_SUPPORT. Xid 48 is resolved by
WORKFLOW_XID_48 (with 63/64 on the same GPU it is DRAIN_AND_RESET), Xid 45 by
whether it came alone, and Xid 154 by the recovery action it announces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+),\s*(.*)$")
# Newer drivers omit pid for 79; older ones write pid=123 or pid='<unknown>'.
_PID = re.compile(r"^pid=(?:'?<unknown>'?|(\d+)),\s*(?:name=(.*?),\s*)?(.*)$")
# A GPU that fell off the bus can be reported with no Xid at all (NVSentinel#155).
FALLEN_RE = re.compile(r"NVRM: (?:GPU )?(?:at )?(?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?):? .*has fallen off the bus")
_XID154 = re.compile(r"changed from (0x[0-9a-fA-F]+) \(([^)]*)\) to (0x[0-9a-fA-F]+) \(([^)]*)\)")

_STAMPS = (
    re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]{8} \d{4})\]"),  # dmesg -T
    re.compile(r"^\w+\s*:\w+\s*: (\d{4}-\d\d-\d\dT[\d:,.]+[+-][\d:]+)"),  # dmesg --decode iso
    re.compile(r"^(\w{3} +\d+ [\d:]{8}) \S+ kernel:"),  # journalctl / kern.log
    re.compile(r"\[(\d{4}-\d\d-\d\dT[\d:.]+Z?)\]"),  # collectors with ISO stamps in brackets
    re.compile(r"^\[\s*(\d+\.\d+)\]"),  # plain dmesg: seconds since boot
)

ACTION_RANK = {
    "IGNORE": 0, "RESTART_APP": 1, "RESTART_FM": 2, "CONTACT_SUPPORT": 3,
    "RESET_GPU": 4, "DRAIN_AND_RESET": 5, "RESTART_BM": 6,
}

# Xid -> (mnemonic, catalog immediate action, operator advice). REFERENCE.md section 3.
CATALOG: dict[int, tuple[str, str, str]] = {
    13: ("GR exception", "RESTART_APP", "application bug; no drain unless it repeats across jobs"),
    31: ("MMU fault", "RESTART_APP", "application bug (bad GPU memory access)"),
    43: ("GPU stopped processing", "IGNORE", "the application hit a software fault; GPU healthy"),
    45: ("preemptive cleanup", "WORKFLOW_XID_45", "secondary; find the primary Xid"),
    48: ("double-bit ECC error", "WORKFLOW_XID_48", "drain and reset; RMA if it repeats"),
    61: ("PMU breakpoint", "CONTACT_SUPPORT", "unused on Ampere+; reset the GPU and contact support"),
    62: ("PMU halt", "RESET_GPU", "drain and reset the GPU"),
    63: ("row-remap / page-retirement recorded", "IGNORE", "reset the GPU when convenient to activate the remap"),
    64: ("row-remap failure", "RESET_GPU", "drain; RMA if it persists after reboot"),
    74: ("NVLink error", "RESET_GPU", "drain and reset; check the peer GPU, which may be the real culprit"),
    79: ("GPU has fallen off the bus", "RESTART_BM", "drain and power-cycle; check PCIe, PSU, riser; RMA if it repeats"),
    92: ("excessive single-bit ECC interrupts", "IGNORE", "trend it; plan maintenance"),
    94: ("contained memory error", "RESTART_APP", "restart the job; reset the GPU when convenient"),
    95: ("uncontained memory error", "RESET_GPU", "drain and reset the GPU"),
    109: ("context-switch timeout", "RESET_GPU", "drain and reset the GPU"),
    119: ("GSP RPC timeout", "RESET_GPU", "drain and reset; power-cycle if it persists"),
    120: ("GSP error", "RESET_GPU", "drain and reset; power-cycle if it persists"),
    140: ("unrecoverable ECC error escape", "RESET_GPU", "drain and reset; vendor if it persists"),
    154: ("GPU recovery action changed", "XID_154", "follow the announced recovery action"),
}
for _x in range(144, 151):  # NVLink5 (B100/GB200): WORKFLOW_NVLINK5_ERR; a reset clears them
    CATALOG[_x] = ("NVLink5 error", "RESET_GPU", "decode the NVLink5 fields; drain and reset")

# Xid 154 recovery actions -> resolved action.
RECOVERY_154 = {
    "none": "IGNORE",
    "drain p2p": "DRAIN_AND_RESET",
    "drain and reset": "DRAIN_AND_RESET",
    "gpu reset required": "RESET_GPU",
    "node reboot required": "RESTART_BM",
}
# Xids that point at the hardware: a repeat on the same GPU suggests an RMA.
HARDWARE_XIDS = frozenset({48, 62, 64, 74, 79, 95, 119, 120, 140, *range(144, 151)})


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
    """One Xid (or a fall-off-the-bus message without one) from a log line."""

    line_no: int
    pci: str  # normalised, see norm_pci
    xid: int | None  # None: "fallen off the bus" without an Xid
    message: str
    pid: int | None = None
    process: str | None = None
    stamp: str = ""  # the wrapper's time stamp, verbatim
    raw: str = ""


@dataclass(frozen=True, slots=True)
class XidClass:
    """What one event calls for."""

    catalog: str  # the catalog's immediate action (XID_154, WORKFLOW_XID_48 ...)
    action: str  # resolved: one of ACTION_RANK, or CONTACT_SUPPORT for unknown Xids
    mnemonic: str
    advice: str


def _stamp(line: str) -> str:
    for rx in _STAMPS:
        m = rx.search(line)
        if m:
            return m.group(1)
    return ""


def parse_line(line: str, line_no: int = 0) -> XidEvent | None:
    """An XidEvent for an Xid or fall-off line, else None. Never raises."""
    m = XID_RE.search(line)
    if m:
        rest = m.group(3).strip()
        pid, name = None, None
        pm = _PID.match(rest)
        if pm:
            pid = int(pm.group(1)) if pm.group(1) else None
            name, rest = pm.group(2), pm.group(3).strip()
        return XidEvent(line_no, norm_pci(m.group(1)), int(m.group(2)), rest, pid, name, _stamp(line), line.rstrip("\n"))
    f = FALLEN_RE.search(line)
    if f and "Xid" not in line:
        return XidEvent(line_no, norm_pci(f.group(1)), None, "GPU has fallen off the bus (no Xid)",
                        stamp=_stamp(line), raw=line.rstrip("\n"))
    return None


def parse_log(text: str) -> list[XidEvent]:
    """Every Xid event in a kernel log, in order."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        ev = parse_line(line, n)
        if ev is not None:
            out.append(ev)
    return out


def recovery_154(message: str) -> tuple[str, str] | None:
    """(from, to) recovery action names of an Xid 154 message, e.g. ("None", "Node Reboot Required")."""
    m = _XID154.search(message)
    return (m.group(2), m.group(4)) if m else None


def classify(ev: XidEvent, same_gpu: Iterable[int] = ()) -> XidClass:
    """Classify one event; ``same_gpu`` are the other Xids seen on that GPU
    (they decide the workflows of Xid 45 and 48)."""
    if ev.xid is None:
        mnem, _, advice = CATALOG[79]
        return XidClass("RESTART_BM", "RESTART_BM", mnem + " (no Xid line)", advice)
    entry = CATALOG.get(ev.xid)
    if entry is None:
        return XidClass("UNKNOWN", "CONTACT_SUPPORT", "not in the catalog", "look it up in the Xid catalog; contact support")
    mnem, catalog, advice = entry
    others = set(same_gpu) - {ev.xid}
    if catalog == "WORKFLOW_XID_48":
        action = "DRAIN_AND_RESET" if others & {63, 64} else "RESET_GPU"
    elif catalog == "WORKFLOW_XID_45":
        action = "IGNORE" if others else "RESTART_FM"
    elif catalog == "XID_154":
        rec = recovery_154(ev.message)
        action = RECOVERY_154.get(rec[1].strip().lower(), "CONTACT_SUPPORT") if rec else "CONTACT_SUPPORT"
        if rec:
            advice = f"recovery action now {rec[1]!r} (was {rec[0]!r})"
    else:
        action = catalog
    return XidClass(catalog, action, mnem, advice)


@dataclass(frozen=True, slots=True)
class GpuVerdict:
    """Everything one GPU (PCI bus id) logged, and the worst action it calls for."""

    pci: str
    xids: tuple[int | None, ...]
    action: str
    events: tuple[tuple[XidEvent, XidClass], ...]


def by_gpu(events: Sequence[XidEvent]) -> list[GpuVerdict]:
    """Group events by GPU and resolve each GPU's worst action, GPUs in first-seen order."""
    groups: dict[str, list[XidEvent]] = {}
    for ev in events:
        groups.setdefault(ev.pci, []).append(ev)
    out = []
    for pci, evs in groups.items():
        seen = [e.xid for e in evs if e.xid is not None]
        if 79 in seen:  # the driver's own fall-off line repeats the Xid 79 event
            evs = [e for e in evs if e.xid is not None]
        classified = tuple((e, classify(e, seen)) for e in evs)
        action = max((c.action for _, c in classified), key=lambda a: ACTION_RANK.get(a, 3))
        out.append(GpuVerdict(pci, tuple(dict.fromkeys(e.xid for e in evs)), action, classified))
    return out
