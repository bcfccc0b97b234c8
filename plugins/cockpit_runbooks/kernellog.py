"""One reading of a kernel (or Fabric Manager) log, shared by every probe that judges one.

The Xid probe, the PCIe probe and the NVLink runbook's Xid step read the same text; each
takes from this reading what it judges, so none can call a log healthy that another
reads as broken (a GPU that fell off the bus is a PCIe fault too), and every one of
them sees the NVIDIA fault lines nothing understood (``unrecognised``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import sxid, unrecognised, xid

FABRIC_MANAGER = "nvidia-fabricmanager log"


@dataclass(frozen=True)
class KernelReading:
    fmt: str | None  # the wrapper detected (see detect_format); None: nothing looks like a log
    gpus: tuple[xid.GpuVerdict, ...]
    switches: tuple[sxid.SwitchVerdict, ...]
    unknown: tuple[tuple[int, str], ...]  # NVIDIA fault-like lines nothing understood
    empty: bool = False

    @property
    def fell_off(self) -> tuple[xid.GpuVerdict, ...]:
        """GPUs lost from the bus: an Xid 79 or the driver's fall-off message."""
        return tuple(v for v in self.gpus if 79 in v.xids or any(e.kind == "fallen" for e, _ in v.events))


def detect_format(text: str) -> str | None:
    """xid.detect_format, plus the Fabric Manager's own log and bare NVSwitch driver lines."""
    lines = [ln for ln in text.splitlines()[:5000] if ln.strip()]
    fm = sum(1 for ln in lines if sxid.FM_STAMP.match(ln))
    if fm and fm * 2 >= sum(1 for ln in lines if ln.startswith("[")):
        return FABRIC_MANAGER
    fmt = xid.detect_format(text)
    if fmt is None and any(sxid.SXID_RE.search(ln) for ln in lines):
        return "NVSwitch driver lines"
    return fmt


def _judged_labels(gpus: list[xid.GpuVerdict], switches: list[sxid.SwitchVerdict]) -> re.Pattern[str] | None:
    """A pattern for the devices already judged: a line naming one is that device's context
    (the driver's GSP dump after an Xid 119, the serial number after an Xid 79)."""
    names = [re.escape(v.pci) for v in gpus]
    names += [re.escape(s.pci) for s in switches] + [re.escape(s.switch) for s in switches if s.switch]
    return re.compile(r"\b(?:" + "|".join(names) + r")\b", re.IGNORECASE) if names else None


def read(text: str) -> KernelReading:
    """Parse ``text`` once: GPU Xid verdicts, NVSwitch SXid verdicts, lines not understood."""
    if not text.strip():
        return KernelReading(None, (), (), (), empty=True)
    lines = xid.logical_lines(text)
    gpus = xid.by_gpu(xid.parse_log(text))
    switches = sxid.by_switch(sxid.parse_log(lines))
    understood = {n for n, ln in lines if xid.parse_line(ln, n) or sxid.parse_line(ln, n)}
    context = _judged_labels(gpus, switches)
    if context is not None:
        understood |= {n for n, ln in lines if context.search(ln)}
    fmt = detect_format(text)
    unknown = unrecognised.not_understood(lines, understood, nvidia_log=fmt == FABRIC_MANAGER)
    return KernelReading(fmt, tuple(gpus), tuple(switches), tuple(unknown))
