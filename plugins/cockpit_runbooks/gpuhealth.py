"""GPU health from nvidia-smi: ``--query-gpu`` CSV (parsed by cockpit.telemetry),
``-q`` text and ``-q -x`` XML (parsed here into the same GpuTelemetry), and the
rules: ECC, remapped rows, temperature, power, clock event (throttle) reasons,
PCIe link below its maximum.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from cockpit.plugins.api import ParseError
from cockpit.plugins.api import GpuTelemetry, parse_query_gpu

from .xid import norm_pci

_KV = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")
_NUM = re.compile(r"^(-?[\d.]+)")
# -q text names of the clock event reasons -> bit (REFERENCE.md section 4)
_REASON_BITS = {
    "idle": 0x1, "applications clocks setting": 0x2, "sw power cap": 0x4, "hw slowdown": 0x8,
    "sync boost": 0x10, "sw thermal slowdown": 0x20, "hw thermal slowdown": 0x40,
    "hw power brake slowdown": 0x80, "display clock setting": 0x100,
}


def _num(v: str | None) -> float | None:
    m = _NUM.match((v or "").strip())
    return float(m.group(1)) if m else None


def _int(v: str | None) -> int | None:
    n = _num(v)
    return int(n) if n is not None else None


def _bool(v: str | None) -> bool | None:
    low = (v or "").strip().lower()
    return True if low == "yes" else False if low == "no" else None


def _flatten_text(block: list[str]) -> dict[str, str]:
    """Indented ``Key : Value`` lines -> {"section/sub/key": value} (keys lower-case)."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in block:
        if not line.strip() or line.strip().startswith(("[...]", "```")):
            continue
        indent = len(line) - len(line.lstrip())
        m = _KV.match(line)
        key = (m.group(2) if m else line).strip().lower()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([s for _, s in stack] + [key])
        if m and m.group(3).strip():
            out[path] = m.group(3).strip()
        else:
            stack.append((indent, key))
    return out


def _find(d: dict[str, str], *suffixes: str) -> str | None:
    for suf in suffixes:
        for k, v in d.items():
            if k == suf or k.endswith("/" + suf):
                return v
    return None


def _sum(d: dict[str, str], section: str, uncorrectable: bool) -> int | None:
    """Sum of the ECC counters of one section (volatile/aggregate), every memory kind."""
    vals = []
    for k, v in d.items():
        if f"ecc errors/{section}/" not in k or "sources" in k:
            continue
        last = k.rsplit("/", 1)[-1]
        if ("uncorrectable" in last) == uncorrectable and "correctable" in last:
            vals.append(_int(v))
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def _reasons(d: dict[str, str]) -> int | None:
    mask, seen = 0, False
    for k, v in d.items():
        if "clocks event reasons/" in k or "clocks throttle reasons/" in k:
            name = k.rsplit("/", 1)[-1]
            if name in _REASON_BITS and "counters" not in k:
                seen = True
                if v.strip().lower() == "active":
                    mask |= _REASON_BITS[name]
    return mask if seen else None


def parse_q_text(text: str) -> tuple[GpuTelemetry, ...]:
    """GPUs from ``nvidia-smi -q`` text. Raises ParseError when no ``GPU <bus id>`` block exists."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = re.match(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$", line)
        if m:
            blocks.append((m.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
    if not blocks:
        raise ParseError("nvidia-smi -q", "no 'GPU <bus id>' section")
    out = []
    for i, (bus, lines) in enumerate(blocks):
        d = _flatten_text(lines)
        idx = _int(_find(d, "minor number"))
        out.append(GpuTelemetry(
            index=idx if idx is not None else i, pci_bus_id=bus, name=_find(d, "product name"),
            temp_gpu=_num(_find(d, "temperature/gpu current temp")),
            power_w=_num(_find(d, "gpu power readings/power draw", "gpu power readings/average power draw",
                               "power readings/power draw")),
            power_limit_w=_num(_find(d, "gpu power readings/current power limit", "power readings/power limit")),
            clock_event_reasons=_reasons(d),
            ecc_corr_volatile=_sum(d, "volatile", False), ecc_uncorr_volatile=_sum(d, "volatile", True),
            ecc_corr_aggregate=_sum(d, "aggregate", False), ecc_uncorr_aggregate=_sum(d, "aggregate", True),
            remapped_correctable=_int(_find(d, "remapped rows/correctable error")),
            remapped_uncorrectable=_int(_find(d, "remapped rows/uncorrectable error")),
            remapped_pending=_bool(_find(d, "remapped rows/pending")),
            remapped_failure=_bool(_find(d, "remapped rows/remapping failure occurred")),
            pcie_gen=_int(_find(d, "pcie generation/current")), pcie_gen_max=_int(_find(d, "pcie generation/max")),
            pcie_width=_int(_find(d, "link width/current")), pcie_width_max=_int(_find(d, "link width/max")),
        ))
    return tuple(out)


def _x(el: ET.Element, path: str) -> str | None:
    found = el.find(path)
    return found.text if found is not None and found.text is not None else None


def parse_q_xml(text: str) -> tuple[GpuTelemetry, ...]:
    """GPUs from ``nvidia-smi -q -x`` (DTD v11-v13). Raises ParseError for bad XML."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError("nvidia-smi -q -x", str(exc)) from None
    out = []
    for i, g in enumerate(root.iter("gpu")):
        mask, seen = 0, False
        for tag in ("clocks_event_reasons", "clocks_throttle_reasons"):
            for child in g.find(tag) if g.find(tag) is not None else []:
                name = child.tag.split("reason_", 1)[-1].replace("_", " ")
                bit = _REASON_BITS.get(name) or _REASON_BITS.get(name.replace("display clocks", "display clock"))
                if bit:
                    seen = True
                    mask |= bit if (child.text or "").strip().lower() == "active" else 0
        ecc = {f"{sec}/{c.tag}": c.text or "" for sec in ("volatile", "aggregate")
               for c in (g.find(f"ecc_errors/{sec}") if g.find(f"ecc_errors/{sec}") is not None else [])}
        unc = lambda sec: sum(_int(v) or 0 for k, v in ecc.items() if k.startswith(sec) and "uncorrectable" in k) if ecc else None  # noqa: E731
        cor = lambda sec: sum(_int(v) or 0 for k, v in ecc.items() if k.startswith(sec) and k.endswith("_correctable")) if ecc else None  # noqa: E731
        minor = _int(_x(g, "minor_number"))
        out.append(GpuTelemetry(
            index=minor if minor is not None else i, pci_bus_id=g.get("id"), name=_x(g, "product_name"),
            temp_gpu=_num(_x(g, "temperature/gpu_temp")),
            power_w=_num(_x(g, "gpu_power_readings/power_draw") or _x(g, "power_readings/power_draw")),
            power_limit_w=_num(_x(g, "gpu_power_readings/current_power_limit") or _x(g, "power_readings/power_limit")),
            clock_event_reasons=mask if seen else None,
            ecc_corr_volatile=cor("volatile"), ecc_uncorr_volatile=unc("volatile"),
            ecc_corr_aggregate=cor("aggregate"), ecc_uncorr_aggregate=unc("aggregate"),
            remapped_correctable=_int(_x(g, "remapped_rows/remapped_row_corr")),
            remapped_uncorrectable=_int(_x(g, "remapped_rows/remapped_row_unc")),
            remapped_pending=_bool(_x(g, "remapped_rows/remapped_row_pending")),
            remapped_failure=_bool(_x(g, "remapped_rows/remapped_row_failure")),
            pcie_gen=_int(_x(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
            pcie_gen_max=_int(_x(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
            pcie_width=_int(_x(g, "pci/pci_gpu_link_info/link_widths/current_link_width")),
            pcie_width_max=_int(_x(g, "pci/pci_gpu_link_info/link_widths/max_link_width")),
        ))
    return tuple(out)


def parse_any(text: str) -> tuple[GpuTelemetry, ...]:
    """XML, ``-q`` text or ``--query-gpu`` CSV, recognised by content. Raises ParseError."""
    s = text.lstrip()
    if s.startswith("<?xml") or s.startswith("<nvidia_smi_log"):
        return parse_q_xml(text)
    if re.search(r"^GPU [0-9A-Fa-f]{4,8}:", text, re.M):
        return parse_q_text(text)
    return parse_query_gpu(text)


@dataclass(frozen=True, slots=True)
class GpuProblem:
    gpu: str  # "GPU 3 (0000:9b:00)"
    kind: str  # ecc, remap, thermal, power, throttle, pcie
    severity: str
    text: str


def check_gpu(g: GpuTelemetry, temp_warn_c: float = 85.0) -> list[GpuProblem]:
    """Rules for one GPU; thresholds from the plugin config."""
    name = f"GPU {g.index}" + (f" ({norm_pci(g.pci_bus_id)})" if g.pci_bus_id else "")
    out: list[GpuProblem] = []

    def add(kind: str, sev: str, text: str) -> None:
        out.append(GpuProblem(name, kind, sev, f"{name}: {text}"))

    if g.ecc_uncorr_volatile:
        add("ecc", "CRIT", f"{g.ecc_uncorr_volatile} uncorrectable ECC errors since the driver loaded")
    if g.remapped_failure:
        add("remap", "CRIT", "row remapping failed: the GPU is out of spare rows (RMA)")
    if g.remapped_pending:
        add("remap", "WARN", "a row remap is pending: reset the GPU to activate it")
    if g.remapped_uncorrectable:
        add("remap", "WARN", f"{g.remapped_uncorrectable} rows remapped for uncorrectable errors")
    if g.temp_gpu is not None and g.temp_gpu >= temp_warn_c:
        add("thermal", "WARN", f"temperature {g.temp_gpu:g} C (threshold {temp_warn_c:g} C)")
    if g.power_w is not None and g.power_limit_w and g.power_w > g.power_limit_w * 1.02:
        add("power", "WARN", f"power draw {g.power_w:g} W above its limit {g.power_limit_w:g} W")
    bad = [r for r in g.clock_events if r in ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")]
    if bad:
        add("throttle", "WARN", "clocks held back: " + ", ".join(bad))
    if g.pcie_degraded:
        add("pcie", "WARN", f"PCIe link x{g.pcie_width} below its maximum x{g.pcie_width_max}")
    busy = g.util_gpu is not None and g.util_gpu >= 50
    if busy and g.pcie_gen and g.pcie_gen_max and g.pcie_gen < g.pcie_gen_max:
        # at idle the link drops its generation to save power; under load it should not
        add("pcie", "WARN", f"PCIe gen {g.pcie_gen} below its maximum {g.pcie_gen_max} under load")
    return out
