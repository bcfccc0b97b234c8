"""InfiniBand ports from sysfs (``/sys/class/infiniband/DEV/ports/N/...``).

Read either from a directory root (a live ``/sys/class/infiniband`` or a copy
of it, as in tests/data/infiniband) or from the ``path<TAB>value`` lines that
:data:`DUMP_SCRIPT` prints on a node over SSH/srun. Rules: a port not ACTIVE
or not LinkUp, a rate below the expected one, error counters rising between
two reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from cockpit.plugins.api import IB_SYSFS_DUMP

# cockpit's fixed read-only script (the only shell a probe may run): every port file
# as path<TAB>value.
DUMP_SCRIPT = IB_SYSFS_DUMP
DUMP_ARGV = ("sh", "-c", DUMP_SCRIPT)

# Counters whose rise means a sick link (PortCounters; IBTA names as in sysfs).
ERROR_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
                  "local_link_integrity_errors", "excessive_buffer_overrun_errors",
                  "port_rcv_remote_physical_errors")
# A flap (link went down / retrained) is worse than bit errors.
FLAP_COUNTERS = ("link_downed", "link_error_recovery")
_STATE = re.compile(r"^\s*(\d+)\s*:\s*(\S+)")
_RATE = re.compile(r"^\s*([\d.]+)\s*Gb/sec")


@dataclass(frozen=True)
class IbPort:
    device: str
    port: int
    state: str | None = None  # ACTIVE, DOWN, INIT, ARMED
    phys_state: str | None = None  # LinkUp, Polling, Disabled ...
    rate_gbps: float | None = None
    rate_text: str = ""
    link_layer: str = ""
    counters: dict[str, int] = field(default_factory=dict)
    hw_counters: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.device}/{self.port}"


def _state(text: str) -> str | None:
    m = _STATE.match(text)
    return m.group(2) if m else (text.strip() or None)


def _build(device: str, port: int, files: dict[str, str]) -> IbPort:
    counters, hw = {}, {}
    for key, val in files.items():
        val = val.strip()
        if not re.fullmatch(r"\d+", val):
            continue  # unreadable or not a counter
        if key.startswith("counters/"):
            counters[key.split("/", 1)[1]] = int(val)
        elif key.startswith("hw_counters/"):
            hw[key.split("/", 1)[1]] = int(val)
    rate = files.get("rate", "")
    m = _RATE.match(rate)
    return IbPort(device, port, _state(files.get("state", "")), _state(files.get("phys_state", "")),
                  float(m.group(1)) if m else None, rate.strip(), files.get("link_layer", "").strip(), counters, hw)


def read_root(root: str | os.PathLike[str]) -> list[IbPort]:
    """Every port under ``root`` (a /sys/class/infiniband directory or a copy).

    ``root`` may also be a single device directory (it then holds ``ports/``).
    Unreadable files are skipped; an absent root gives no ports."""
    root = Path(root)
    devices = [root] if (root / "ports").is_dir() else sorted(p for p in root.iterdir() if (p / "ports").is_dir()) if root.is_dir() else []
    out = []
    for dev in devices:
        for pdir in sorted((dev / "ports").iterdir(), key=lambda p: p.name):
            if not pdir.name.isdecimal():
                continue
            files = {}
            for f in pdir.rglob("*"):
                if f.is_file():
                    try:
                        files[f.relative_to(pdir).as_posix()] = f.read_text(errors="replace")
                    except OSError:
                        continue
            out.append(_build(dev.name, int(pdir.name), files))
    return out


def parse_dump(text: str) -> list[IbPort]:
    """Ports from :data:`DUMP_SCRIPT` output (``/sys/class/infiniband/DEV/ports/N/FILE<TAB>value``)."""
    groups: dict[tuple[str, int], dict[str, str]] = {}
    for line in text.splitlines():
        path, _, val = line.partition("\t")
        m = re.match(r".*/infiniband/([^/]+)/ports/(\d+)/(.+)$", path)
        if m:
            groups.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = val
    return [_build(d, p, files) for (d, p), files in sorted(groups.items())]


@dataclass(frozen=True, slots=True)
class PortProblem:
    port: str
    kind: str  # "state", "rate", "counter", "flap"
    severity: str  # "WARN" or "CRIT"
    text: str


def check_ports(ports: list[IbPort], expected_rate_gbps: float = 0.0, before: list[IbPort] | None = None) -> list[PortProblem]:
    """Problems with ``ports``; ``before`` is an earlier read for the counter deltas.

    Ethernet (RoCE) ports are judged on state and rate as well, since
    link_layer says what they are, not whether they are healthy."""
    out = []
    prev = {p.name: p for p in before or []}
    for p in ports:
        if p.state and p.state.upper() != "ACTIVE":
            out.append(PortProblem(p.name, "state", "CRIT", f"{p.name} state {p.state} (expected ACTIVE)"))
        if p.phys_state and p.phys_state.lower() != "linkup":
            out.append(PortProblem(p.name, "state", "CRIT", f"{p.name} physical state {p.phys_state} (expected LinkUp)"))
        if expected_rate_gbps and p.rate_gbps is not None and p.rate_gbps < expected_rate_gbps:
            out.append(PortProblem(p.name, "rate", "WARN",
                                   f"{p.name} rate {p.rate_text or p.rate_gbps} below the expected {expected_rate_gbps:g} Gb/sec"))
        old = prev.get(p.name)
        if old is None:
            continue
        for c in ERROR_COUNTERS:
            a, b = old.counters.get(c), p.counters.get(c)
            if a is not None and b is not None and b > a:
                kind = "flap" if c in FLAP_COUNTERS else "counter"
                out.append(PortProblem(p.name, kind, "CRIT" if kind == "flap" else "WARN",
                                       f"{p.name} {c} rose {a} -> {b}"))
    return out
