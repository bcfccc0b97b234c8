"""Parse ``nvidia-smi -q`` (optionally ``-d PERFORMANCE,TEMPERATURE,POWER,CLOCK,ECC``)
into one reading per GPU: throttle reasons, temperature, power, SM clock, ECC.

The text is an indented tree of ``Key : Value`` lines (a key with a value can
hold children: ``HW Slowdown : Active`` holds ``HW Thermal Slowdown``). Drivers
name the throttle section ``Clocks Throttle Reasons`` (up to 525) or ``Clocks
Event Reasons`` (535+), and the power section ``Power Readings`` or ``GPU Power
Readings`` (with ``Average``/``Instantaneous Power Draw`` on 550+); ``Module`` and
``GPU Memory Power Readings`` are other rails and are ignored. A recorded excerpt
without the ``GPU <bus id>`` line (tests/data/nvidia-smi-load) is one GPU.
``N/A`` and unsupported values are None, never 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cockpit.plugins.api import ParseError

_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_NUM = re.compile(r"^(-?[0-9]+(?:\.[0-9]+)?)\s*(C|W|MHz|%|mV)?$")
_GLOBAL = {"timestamp", "driver version", "cuda version", "attached gpus", "nvsmi log"}
_REASON_SECTIONS = {"clocks throttle reasons", "clocks event reasons"}
_POWER_SECTIONS = {"power readings", "gpu power readings"}
# Reasons that hold the clocks below what the load asks for (idle, app clocks, sync boost
# and display clocks are not faults).
THROTTLE = frozenset({"sw_power_cap", "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                      "sw_thermal_slowdown"})
HW_THROTTLE = frozenset({"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"})


def _reason(name: str) -> str:
    key = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return "gpu_idle" if key == "idle" else key


@dataclass(frozen=True)
class GpuReading:
    index: int
    bus_id: str | None = None
    name: str | None = None
    pstate: str | None = None
    reasons: frozenset[str] | None = None  # active ones; None when the section is missing
    temp_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    default_limit_w: float | None = None
    sm_mhz: float | None = None
    sm_max_mhz: float | None = None
    util_pct: float | None = None
    ecc_uncorrectable: int | None = None  # volatile, all memories
    ecc_correctable: int | None = None

    @property
    def throttle(self) -> frozenset[str]:
        return (self.reasons or frozenset()) & THROTTLE

    def to_dict(self) -> dict:
        return {"index": self.index, "bus_id": self.bus_id, "name": self.name, "pstate": self.pstate,
                "reasons": sorted(self.reasons) if self.reasons is not None else None, "temp_c": self.temp_c,
                "power_w": self.power_w, "power_limit_w": self.power_limit_w, "default_limit_w": self.default_limit_w,
                "sm_mhz": self.sm_mhz, "sm_max_mhz": self.sm_max_mhz, "util_pct": self.util_pct,
                "ecc_uncorrectable": self.ecc_uncorrectable, "ecc_correctable": self.ecc_correctable}


@dataclass
class _Gpu:
    bus_id: str | None
    values: dict[tuple[str, ...], str] = field(default_factory=dict)


def _tree(text: str, source: str) -> list[_Gpu]:
    gpus: list[_Gpu] = []
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.strip().startswith("==="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        m = _GPU.match(line)
        if m and indent == 0:
            gpus.append(_Gpu(m.group(1)))
            stack = []
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not gpus and indent == 0 and key in _GLOBAL:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not gpus:
            gpus.append(_Gpu(None))
        path = tuple(name for _, name in stack) + (key,)
        if sep and value:
            gpus[-1].values[path] = value
        stack.append((indent, key))
    known = {"product name", "performance state", "clocks", "temperature", *_REASON_SECTIONS, *_POWER_SECTIONS}
    if not gpus or not any(p[0] in known for g in gpus for p in g.values):
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError(source, f"not nvidia-smi -q output (first line {first[:80]!r})")
    return gpus


def _num(value: str | None) -> float | None:
    m = _NUM.match(value.strip()) if value else None
    return float(m.group(1)) if m else None


def _first(values: dict, *paths: tuple[str, ...]) -> str | None:
    for p in paths:
        if p in values:
            return values[p]
    return None


def _under(values: dict, sections: set[str], leaf: str) -> str | None:
    for path, value in values.items():
        if path[-1] == leaf and len(path) >= 2 and path[0] in sections:
            return value
    return None


def _ecc(values: dict) -> tuple[int | None, int | None]:
    unc = cor = None
    for path, value in values.items():
        if len(path) < 3 or path[0] != "ecc errors" or path[1] != "volatile":
            continue
        n = _num(value)
        if n is None:
            continue
        leaf = " ".join(path[2:])
        if "uncorrectable" in leaf or leaf.startswith("double bit") and path[-1] == "total":
            unc = (unc or 0) + int(n)
        elif "correctable" in leaf or leaf.startswith("single bit") and path[-1] == "total":
            cor = (cor or 0) + int(n)
    return unc, cor


def _reading(i: int, g: _Gpu) -> GpuReading:
    v = g.values
    reasons = None
    if any(p[0] in _REASON_SECTIONS for p in v):
        reasons = frozenset(_reason(p[-1]) for p, val in v.items()
                            if p[0] in _REASON_SECTIONS and len(p) >= 2 and val.lower() == "active")
    power = _under(v, _POWER_SECTIONS, "power draw") or _under(v, _POWER_SECTIONS, "average power draw")
    limit = (_under(v, _POWER_SECTIONS, "enforced power limit") or _under(v, _POWER_SECTIONS, "current power limit")
             or _under(v, _POWER_SECTIONS, "power limit"))
    unc, cor = _ecc(v)
    return GpuReading(
        index=i, bus_id=g.bus_id, name=_first(v, ("product name",)), pstate=_first(v, ("performance state",)),
        reasons=reasons, temp_c=_num(_first(v, ("temperature", "gpu current temp"))),
        power_w=_num(power), power_limit_w=_num(limit),
        default_limit_w=_num(_under(v, _POWER_SECTIONS, "default power limit")),
        sm_mhz=_num(_first(v, ("clocks", "sm"))), sm_max_mhz=_num(_first(v, ("max clocks", "sm"))),
        util_pct=_num(_first(v, ("utilization", "gpu"))), ecc_uncorrectable=unc, ecc_correctable=cor)


def parse_q(text: str, source: str = "nvidia-smi -q") -> tuple[GpuReading, ...]:
    """One reading per GPU, in the order printed. Raises ParseError (naming the first
    line) for text that is not nvidia-smi -q output, e.g. "NVIDIA-SMI has failed ..."."""
    for line in text.splitlines():
        if line.startswith(("NVIDIA-SMI has failed", "No devices were found", "Failed to initialize NVML")):
            raise ParseError(source, line.strip())
    return tuple(_reading(i, g) for i, g in enumerate(_tree(text, source)))
