"""Simulated ``nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER,CLOCK,ECC`` text.

The layout is the real H100 recordings' (tests/data/nvidia-smi-load: the
``-q`` of an H100 80GB HBM3 idle and under gpu-burn), cut to the sections
those ``-d`` groups print: performance state and clock event reasons (with
their counters), ECC mode and errors, temperature, power readings, clocks.
The driver is the demo's (550.127.05, as its kernel log and queries say).
One ``GPU 00000000:1B:00.0`` block per GPU, in bus order.
"""

from __future__ import annotations

import time as _time
from collections.abc import Sequence
from dataclasses import dataclass, field

DRIVER = "550.127.05"
CUDA = "12.4"
T_LIMIT = 87  # C: "GPU T.Limit Temp" is this minus the current temperature
POWER_LIMIT = 700.0
MAX_SM = 1980
MEM_CLOCK = 2619
_W = 55  # keys padded to this width before the colon, as in the recordings
REASONS = ("Idle", "Applications Clocks Setting", "SW Power Cap", "HW Slowdown", "HW Thermal Slowdown",
           "HW Power Brake Slowdown", "Sync Boost", "SW Thermal Slowdown", "Display Clock Setting")
_NESTED = {"HW Thermal Slowdown", "HW Power Brake Slowdown"}
COUNTERS = ("SW Power Capping", "Sync Boost", "SW Thermal Slowdown", "HW Thermal Slowdown", "HW Power Braking")


@dataclass(frozen=True)
class GpuState:
    bus_id: str
    temp: int
    power: float  # W, average over the last second
    sm: int  # MHz
    active: frozenset[str] = frozenset()  # names in REASONS
    counters: dict[str, int] = field(default_factory=dict)  # names in COUNTERS -> microseconds
    pstate: str = "P0"
    ecc_correctable: int = 0
    ecc_uncorrectable: int = 0


def _kv(indent: int, key: str, value: object) -> str:
    head = " " * indent + key
    return f"{head:<{_W}}: {value}"


def _section(indent: int, name: str) -> str:
    return " " * indent + name


def _lines() -> list[str]:
    """One GPU's block; called once with placeholders (``{temp}``...) to make the template."""
    out = ["GPU {bus}", _kv(4, "Performance State", "{pstate}"), _section(4, "Clocks Event Reasons")]
    for k, r in enumerate(REASONS):
        out.append(_kv(12 if r in _NESTED else 8, r, f"{{r{k}}}"))
    out.append(_section(4, "Clocks Event Reasons Counters"))
    out += [_kv(8, c, f"{{c{k}}} us") for k, c in enumerate(COUNTERS)]
    out += [_kv(4, "Sparse Operation Mode", "Disabled"), _section(4, "ECC Mode"), _kv(8, "Current", "Enabled"),
            _kv(8, "Pending", "Enabled"), _section(4, "ECC Errors"), _section(8, "Volatile"),
            _kv(12, "SRAM Correctable", "{ecc_c}"), _kv(12, "SRAM Uncorrectable Parity", 0),
            _kv(12, "SRAM Uncorrectable SEC-DED", "{ecc_u}"), _kv(12, "DRAM Correctable", 0),
            _kv(12, "DRAM Uncorrectable", 0), _section(8, "Aggregate"),
            _kv(12, "SRAM Correctable", "{ecc_c}"), _kv(12, "SRAM Uncorrectable Parity", 0),
            _kv(12, "SRAM Uncorrectable SEC-DED", "{ecc_u}"), _kv(12, "DRAM Correctable", 0),
            _kv(12, "DRAM Uncorrectable", 0), _kv(12, "SRAM Threshold Exceeded", "No"),
            _section(8, "Aggregate Uncorrectable SRAM Sources")]
    out += [_kv(12, f"SRAM {s}", 0) for s in ("L2", "SM", "Microcontroller", "PCIE", "Other")]
    out += [_kv(8, "Channel Repair Pending", "No"), _kv(8, "TPC Repair Pending", "No"),
            _kv(8, "Unrepairable Memory", "No"),
            _section(4, "Temperature"), _kv(8, "GPU Current Temp", "{temp} C"),
            _kv(8, "GPU T.Limit Temp", "{tlimit} C"), _kv(8, "GPU Shutdown T.Limit Temp", "-8 C"),
            _kv(8, "GPU Slowdown T.Limit Temp", "-2 C"), _kv(8, "GPU Max Operating T.Limit Temp", "0 C"),
            _kv(8, "GPU Target Temperature", "N/A"), _kv(8, "Memory Current Temp", "{memtemp} C"),
            _kv(8, "Memory Max Operating T.Limit Temp", "0 C"),
            _section(4, "GPU Power Readings"), _kv(8, "Average Power Draw", "{power} W"),
            _kv(8, "Instantaneous Power Draw", "{inst} W"),
            _kv(8, "Current Power Limit", f"{POWER_LIMIT:.2f} W"),
            _kv(8, "Requested Power Limit", f"{POWER_LIMIT:.2f} W"),
            _kv(8, "Default Power Limit", f"{POWER_LIMIT:.2f} W"), _kv(8, "Min Power Limit", "200.00 W"),
            _kv(8, "Max Power Limit", f"{POWER_LIMIT:.2f} W"),
            _section(4, "GPU Memory Power Readings "), _kv(8, "Average Power Draw", "{mempower} W"),
            _kv(8, "Instantaneous Power Draw", "N/A"), _section(4, "Module Power Readings")]
    out += [_kv(8, k, "N/A") for k in ("Average Power Draw", "Instantaneous Power Draw", "Current Power Limit",
                                       "Requested Power Limit", "Default Power Limit", "Min Power Limit",
                                       "Max Power Limit")]
    deprecated = "Requested functionality has been deprecated"
    out += [_section(4, "Clocks"), _kv(8, "Graphics", "{sm} MHz"), _kv(8, "SM", "{sm} MHz"),
            _kv(8, "Memory", f"{MEM_CLOCK} MHz"), _kv(8, "Video", "{video} MHz"),
            _section(4, "Applications Clocks"), _kv(8, "Graphics", deprecated), _kv(8, "Memory", deprecated),
            _section(4, "Default Applications Clocks"), _kv(8, "Graphics", deprecated), _kv(8, "Memory", deprecated),
            _section(4, "Deferred Clocks"), _kv(8, "Memory", "N/A"),
            _section(4, "Max Clocks"), _kv(8, "Graphics", f"{MAX_SM} MHz"), _kv(8, "SM", f"{MAX_SM} MHz"),
            _kv(8, "Memory", f"{MEM_CLOCK} MHz"), _kv(8, "Video", "1545 MHz"),
            _section(4, "Max Customer Boost Clocks"), _kv(8, "Graphics", f"{MAX_SM} MHz"),
            _section(4, "Clock Policy"), _kv(8, "Auto Boost", "N/A"), _kv(8, "Auto Boost Default", "N/A"), ""]
    return out


_TEMPLATE = "\n".join(_lines())


def gpu_block(g: GpuState) -> list[str]:
    """One GPU's block of lines."""
    values = {f"r{k}": "Active" if r in g.active else "Not Active" for k, r in enumerate(REASONS)}
    values.update({f"c{k}": g.counters.get(c, 0) for k, c in enumerate(COUNTERS)})
    return _TEMPLATE.format(bus=g.bus_id, pstate=g.pstate, ecc_c=g.ecc_correctable, ecc_u=g.ecc_uncorrectable,
                            temp=g.temp, tlimit=T_LIMIT - g.temp, memtemp=g.temp + 4, power=f"{g.power:.2f}",
                            inst=f"{g.power * 0.967:.2f}", mempower=f"{g.power * 0.136:.2f}", sm=g.sm,
                            video=1545 if g.sm >= 1500 else max(g.sm * 3 // 4, 555), **values).split("\n")


def q_text(when: float, gpus: Sequence[GpuState]) -> list[str]:
    """The whole output, as lines."""
    stamp = _time.strftime("%a %b %d %H:%M:%S %Y", _time.gmtime(when))
    out = ["==============NVSMI LOG==============", "", _kv(0, "Timestamp", stamp), _kv(0, "Driver Version", DRIVER),
           _kv(0, "CUDA Version", CUDA), "", _kv(0, "Attached GPUs", len(gpus))]
    for g in gpus:
        out += gpu_block(g)
    return out
