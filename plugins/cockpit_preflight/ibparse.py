"""Read HCA ports and Ethernet links: /sys/class/infiniband (as ``grep -H .`` prints
it, or a recorded tree on disk), ``ibstat``, and /sys/class/net.

sysfs: ``ports/N/rate`` is ``400 Gb/sec (4X NDR)`` (rate, width, speed),
``state`` is ``4: ACTIVE``, ``phys_state`` ``5: LinkUp``, ``link_layer``
``InfiniBand`` or ``Ethernet`` (RoCE). ibstat prints ``Rate: 400`` without the
width. Real trees and outputs: tests/data/ib-sysfs and tests/data/ibstat.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from cockpit.plugins.api import ParseError

_RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?) Gb/sec(?: \((\d+X) ([A-Z0-9]+)\))?$")
_PORT_FILE = re.compile(r"^(.*)/([^/]+)/ports/(\d+)/(rate|state|phys_state|link_layer):(.*)$")
_HCA_FILE = re.compile(r"^(.*)/([^/]+)/(hca_type|fw_ver|board_id):(.*)$")
_NET_FILE = re.compile(r"^(.*)/([^/]+)/(speed|operstate):(.*)$")
PORT_FILES = ("rate", "state", "phys_state", "link_layer")
HCA_FILES = ("hca_type", "fw_ver", "board_id")


@dataclass
class Port:
    hca: str
    port: int
    rate_gbps: float | None = None
    width: str | None = None
    speed: str | None = None
    state: str | None = None  # ACTIVE, DOWN, INIT ...
    phys_state: str | None = None
    link_layer: str | None = None

    @property
    def active(self) -> bool:
        return (self.state or "").upper() == "ACTIVE"

    @property
    def roce(self) -> bool:
        return (self.link_layer or "").lower() == "ethernet"

    def to_dict(self) -> dict:
        return {"hca": self.hca, "port": self.port, "rate_gbps": self.rate_gbps, "width": self.width,
                "speed": self.speed, "state": self.state, "phys_state": self.phys_state,
                "link_layer": self.link_layer}


@dataclass
class Hca:
    name: str
    hca_type: str | None = None
    fw_ver: str | None = None
    board_id: str | None = None
    ports: dict[int, Port] = field(default_factory=dict)


@dataclass(frozen=True)
class NetLink:
    iface: str
    speed_mbps: int | None
    operstate: str | None


def parse_rate(text: str, source: str) -> tuple[float, str | None, str | None]:
    """``400 Gb/sec (4X NDR)`` -> (400.0, '4X', 'NDR'). Raises ParseError naming the value."""
    m = _RATE.match(text.strip())
    if not m:
        raise ParseError(source, f"bad link rate {text.strip()!r} (expected e.g. '400 Gb/sec (4X NDR)')")
    return float(m.group(1)), m.group(2), m.group(3)


def _state(text: str) -> str:
    """``4: ACTIVE`` -> ``ACTIVE`` (the number is the IB spec's code)."""
    return text.split(":", 1)[-1].strip()


def _set(hcas: dict[str, Hca], hca: str, port: int | None, name: str, value: str, source: str) -> None:
    h = hcas.setdefault(hca, Hca(hca))
    if port is None:
        setattr(h, name, value.strip())
        return
    p = h.ports.setdefault(port, Port(hca, port))
    if name == "rate":
        p.rate_gbps, p.width, p.speed = parse_rate(value, f"{source}: {hca} port {port}")
    elif name in ("state", "phys_state"):
        setattr(p, name, _state(value))
    else:
        p.link_layer = value.strip()


def parse_sysfs_dump(text: str, source: str = "/sys/class/infiniband") -> dict[str, Hca]:
    """``grep -H . ROOT/*/ports/*/rate ...`` output -> HCAs. Raises ParseError for a bad rate."""
    hcas: dict[str, Hca] = {}
    for line in text.splitlines():
        m = _PORT_FILE.match(line)
        if m:
            _set(hcas, m.group(2), int(m.group(3)), m.group(4), m.group(5), source)
            continue
        m = _HCA_FILE.match(line)
        if m:
            _set(hcas, m.group(2), None, m.group(3), m.group(4), source)
    return hcas


def read_sysfs_tree(root: Path) -> dict[str, Hca]:
    """A recorded (or live) /sys/class/infiniband tree on this machine. Raises ParseError
    when it holds no HCA with ports."""
    lines = []
    for hca in sorted(p for p in root.iterdir() if p.is_dir()):
        for name in HCA_FILES:
            f = hca / name
            if f.is_file():
                lines.append(f"{f}:{f.read_text(errors='replace').strip()}")
        for port in sorted((hca / "ports").glob("*")) if (hca / "ports").is_dir() else ():
            for name in PORT_FILES:
                f = port / name
                if f.is_file():
                    lines.append(f"{f}:{f.read_text(errors='replace').strip()}")
    hcas = parse_sysfs_dump("\n".join(lines), str(root))
    if not any(h.ports for h in hcas.values()):
        raise ParseError(str(root), "no HCA with ports (expected ROOT/<hca>/ports/<n>/rate)")
    return hcas


def parse_ibstat(text: str, source: str = "ibstat") -> dict[str, Hca]:
    """``ibstat`` -> HCAs. Raises ParseError for text without a ``CA '...'`` block or
    with ibstat's own error (``ibpanic: ...``)."""
    hcas: dict[str, Hca] = {}
    hca: Hca | None = None
    port: Port | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("ibpanic:") or line.startswith("ibwarn:"):
            raise ParseError(source, line)
        m = re.match(r"^CA '([^']+)'$", line)
        if m:
            hca, port = hcas.setdefault(m.group(1), Hca(m.group(1))), None
            continue
        m = re.match(r"^Port (\d+):$", line)
        if m and hca is not None:
            port = hca.ports.setdefault(int(m.group(1)), Port(hca.name, int(m.group(1))))
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if hca is None or not value:
            continue
        if port is None:
            if key == "CA type":
                hca.hca_type = value
            elif key == "Firmware version":
                hca.fw_ver = value
        elif key == "Rate":
            try:
                port.rate_gbps = float(value)
            except ValueError:
                raise ParseError(source, f"{hca.name} port {port.port}: bad rate {value!r}") from None
        elif key == "State":
            port.state = value.upper()
        elif key == "Physical state":
            port.phys_state = value
        elif key == "Link layer":
            port.link_layer = value
    if not hcas:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError(source, f"no \"CA '...'\" block: not ibstat output (first line {first[:80]!r})")
    return hcas


def parse_net_dump(text: str) -> list[NetLink]:
    """``grep -H . ROOT/IF/speed ROOT/IF/operstate`` -> links (speed None when unreadable)."""
    seen: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        m = _NET_FILE.match(line)
        if m:
            seen.setdefault(m.group(2), {})[m.group(3)] = m.group(4).strip()
    out = []
    for iface, vals in sorted(seen.items()):
        speed = vals.get("speed", "")
        out.append(NetLink(iface, int(speed) if speed.lstrip("-").isdecimal() and int(speed) > 0 else None,
                           vals.get("operstate")))
    return out
