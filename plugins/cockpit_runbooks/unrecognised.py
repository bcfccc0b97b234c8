"""NVIDIA fault-like lines that no parser understood.

A kernel log "without an Xid" is healthy only if nothing in it looks like an NVIDIA
fault: a driver line cockpit has no rule for (a new Xid form, a GSP or NVSwitch message,
a Fabric Manager error) must make the verdict UNKNOWN and be named, never be read as
"no fault". A line is fault-like when it comes from an NVIDIA component (the driver's
``NVRM:``, ``nvidia*``/``nvswitch`` modules, Xid/SXid, the Fabric Manager, NVLink, GSP)
and says something went wrong (error, fail, fault, fatal, timeout, fallen off the bus,
assertion, uncorrectable, halt, reset required, ...).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

_NVIDIA = re.compile(r"NVRM:|\bnvidia|nvswitch|\bS?Xid\b|fabric ?manager|nv-fabricmanager|\bNVLink|\bGSP\b"
                     r"|fallen off the bus", re.IGNORECASE)
_FAULT = re.compile(r"error|\bfail|fault|fatal|time ?out|timed ?out|fallen off|not responding|assert"
                    r"|uncorrect|\bhalt|can'?t recover|cannot recover|reset required|exception|\bS?Xid\b"
                    r"|\bECC\b|\blost\b|\bpanic|(?-i:\bBUG\b)", re.IGNORECASE)


def is_fault_like(line: str) -> bool:
    """True for a line from an NVIDIA component that reports something wrong."""
    return bool(_NVIDIA.search(line) and _FAULT.search(line))


def not_understood(lines: Iterable[tuple[int, str]] | Iterable[str], understood: Collection[int] = (),
                   nvidia_log: bool = False) -> list[tuple[int, str]]:
    """The NVIDIA fault-like lines, as (line number, stripped text), whose number is not in
    ``understood``. Plain strings are numbered from 1. ``nvidia_log``: every line comes from
    an NVIDIA component (the Fabric Manager's own log), so a fault word is enough."""
    out = []
    for i, item in enumerate(lines, 1):
        n, text = item if isinstance(item, tuple) else (i, item)
        if n not in understood and (_FAULT.search(text) if nvidia_log else is_fault_like(text)):
            out.append((n, text.strip()))
    return out
