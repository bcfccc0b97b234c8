"""GPU health from nvidia-smi: ``--query-gpu`` CSV (parsed by cockpit.telemetry),
``-q`` text and ``-q -x`` XML (parsed here), each GPU as a :class:`GpuHealth`:
the GpuTelemetry fields plus what only ``-q`` reports (ECC mode, retired pages,
virtualization and MIG mode). The rules live in :mod:`cockpit_runbooks.gpurules`.

Driver generations read (tests/data/nvidia-smi-q/SOURCES.md): XML DTD v10/v11
(``clocks_throttle_reason_*``, ``power_readings/power_draw``), v12 (535:
``clocks_event_reason_*``, ``gpu_power_readings``) and v13 (570+/595:
``average_power_draw``/``instant_power_draw``); the same names in ``-q`` text.
Pre-Ampere GPUs report ECC as ``single_bit``/``double_bit`` totals, newer ones
as ``sram_``/``dram_`` counters. ``N/A`` is "not reported" (None), never 0.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from cockpit.plugins.api import GpuTelemetry, ParseError, parse_query_gpu

_KV = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")
_NUM = re.compile(r"^(-?[\d.]+)")
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
# -q text / XML names of the clock event reasons -> bit (REFERENCE.md section 4)
_REASON_BITS = {
    "idle": 0x1, "gpu idle": 0x1, "applications clocks setting": 0x2, "sw power cap": 0x4, "hw slowdown": 0x8,
    "sync boost": 0x10, "sw thermal slowdown": 0x20, "hw thermal slowdown": 0x40,
    "hw power brake slowdown": 0x80, "display clock setting": 0x100, "display clocks setting": 0x100,
}


@dataclass(frozen=True)
class GpuHealth:
    """One GPU snapshot: its GpuTelemetry (attributes read through) and the ``-q``-only facts."""

    t: GpuTelemetry
    ecc_enabled: bool | None = None  # ECC mode "Current"; None when not reported
    retired_sbe: int | None = None  # pages retired for single-bit errors (pre-Ampere RMA signal)
    retired_dbe: int | None = None  # pages retired for double-bit errors
    retired_pending: bool | None = None  # a page retirement waits for a reboot
    virtualization: str | None = None  # None, Pass-Through, VGPU, Host VGPU
    mig: bool | None = None  # MIG mode "Current"
    # False: a -q text block that ends before its last section ("Processes"): the output
    # was cut (or is a ``-q -d`` subset), so an absent field proves nothing
    complete: bool = True

    def __getattr__(self, name: str):
        return getattr(self.t, name)

    @property
    def key(self) -> tuple[str | None, str | None]:
        """One physical GPU: the same (UUID, bus id) in two snapshots is the same GPU."""
        return (self.t.uuid, (self.t.pci_bus_id or "").lower() or None)

    @property
    def vgpu_guest(self) -> bool:
        return (self.virtualization or "").strip().upper() == "VGPU"


def _num(v: str | None) -> float | None:
    m = _NUM.match((v or "").strip())
    return float(m.group(1)) if m else None


def _int(v: str | None) -> int | None:
    n = _num(v)
    return int(n) if n is not None else None


def _bool(v: str | None) -> bool | None:
    low = (v or "").strip().lower()
    return True if low in ("yes", "enabled") else False if low in ("no", "disabled") else None


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
            out.setdefault(path, m.group(3).strip())
        else:
            stack.append((indent, key))
    return out


def _find(d: dict[str, str], *suffixes: str) -> str | None:
    for suf in suffixes:
        for k, v in d.items():
            if k == suf or k.endswith("/" + suf):
                return v
    return None


def _sum(vals: list[int | None]) -> int | None:
    """Sum of the counters that were reported; None when none was (N/A is not 0)."""
    got = [v for v in vals if v is not None]
    return sum(got) if got else None


def _text_ecc(d: dict[str, str], section: str, uncorrectable: bool) -> int | None:
    """ECC counters of one section: Ampere+ ``DRAM/SRAM (Un)correctable`` or pre-Ampere ``Single/Double Bit / Total``."""
    vals: list[int | None] = []
    for k, v in d.items():
        if f"ecc errors/{section}/" not in k or "sources" in k:
            continue
        last = k.rsplit("/", 1)[-1]
        if "correctable" in last and ("uncorrectable" in last) == uncorrectable:
            vals.append(_int(v))
    if not any(v is not None for v in vals):
        bit = "double bit" if uncorrectable else "single bit"
        vals.append(_int(d.get(f"ecc errors/{section}/{bit}/total")))
    return _sum(vals)


def _reasons_text(d: dict[str, str]) -> int | None:
    mask, seen = 0, False
    for k, v in d.items():
        if ("clocks event reasons/" in k or "clocks throttle reasons/" in k) and "counters" not in k:
            name = k.rsplit("/", 1)[-1]
            if name in _REASON_BITS:
                seen = True
                mask |= _REASON_BITS[name] if v.strip().lower() == "active" else 0
    return mask if seen else None


def _text_gpu(i: int, bus: str, d: dict[str, str]) -> GpuHealth:
    idx = _int(_find(d, "minor number"))
    virt = _find(d, "gpu virtualization mode/virtualization mode")
    vgpu = (virt or "").strip().upper() == "VGPU"
    t = GpuTelemetry(
        index=idx if idx is not None else i, uuid=_find(d, "gpu uuid"), pci_bus_id=bus, name=_find(d, "product name"),
        util_gpu=None if vgpu else _num(_find(d, "utilization/gpu")),
        temp_gpu=_num(_find(d, "temperature/gpu current temp")),
        power_w=_num(_find(d, "gpu power readings/power draw", "gpu power readings/average power draw",
                           "power readings/power draw")),
        power_limit_w=_num(_find(d, "gpu power readings/current power limit", "power readings/power limit")),
        clock_event_reasons=_reasons_text(d), ecc_mode=_find(d, "ecc mode/current"),
        ecc_corr_volatile=_text_ecc(d, "volatile", False), ecc_uncorr_volatile=_text_ecc(d, "volatile", True),
        ecc_corr_aggregate=_text_ecc(d, "aggregate", False), ecc_uncorr_aggregate=_text_ecc(d, "aggregate", True),
        remapped_correctable=_int(_find(d, "remapped rows/correctable error")),
        remapped_uncorrectable=_int(_find(d, "remapped rows/uncorrectable error")),
        remapped_pending=_bool(_find(d, "remapped rows/pending")),
        remapped_failure=_bool(_find(d, "remapped rows/remapping failure occurred")),
        pcie_gen=_int(_find(d, "pcie generation/current")), pcie_gen_max=_int(_find(d, "pcie generation/max")),
        pcie_width=_int(_find(d, "link width/current")), pcie_width_max=_int(_find(d, "link width/max")),
    )
    return GpuHealth(t, _bool(_find(d, "ecc mode/current")), _int(_find(d, "retired pages/single bit ecc")),
                     _int(_find(d, "retired pages/double bit ecc")),
                     _bool(_find(d, "retired pages/pending page blacklist", "retired pages/pending page retirement")),
                     virt, _bool(_find(d, "mig mode/current")),
                     any(k == "processes" or k.startswith("processes/") for k in d))


def parse_q_text(text: str) -> tuple[GpuHealth, ...]:
    """GPUs from ``nvidia-smi -q`` text. Raises ParseError when no ``GPU <bus id>`` block exists."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _GPU_HEADER.match(line)
        if m:
            blocks.append((m.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
    if not blocks:
        raise ParseError("nvidia-smi -q", "no 'GPU <bus id>' section")
    return tuple(_text_gpu(i, bus, _flatten_text(lines)) for i, (bus, lines) in enumerate(blocks))


def _x(el: ET.Element, *paths: str) -> str | None:
    for path in paths:
        found = el.find(path)
        if found is not None and found.text is not None and found.text.strip():
            return found.text.strip()
    return None


def _xml_reasons(g: ET.Element) -> int | None:
    mask, seen = 0, False
    for tag in ("clocks_event_reasons", "clocks_throttle_reasons"):
        for child in (g.find(tag) if g.find(tag) is not None else []):
            name = child.tag.split("reason_", 1)[-1].replace("_", " ")
            bit = _REASON_BITS.get(name)
            if bit:
                seen = True
                mask |= bit if (child.text or "").strip().lower() == "active" else 0
    return mask if seen else None


def _xml_ecc(g: ET.Element, section: str, uncorrectable: bool) -> int | None:
    sec = g.find(f"ecc_errors/{section}")
    if sec is None:
        return None
    vals = [_int(c.text) for c in sec if c.tag.endswith("correctable") and ("uncorrectable" in c.tag) == uncorrectable]
    if not any(v is not None for v in vals):  # pre-Ampere: single_bit/double_bit with a total
        vals = [_int(_x(sec, f"{'double_bit' if uncorrectable else 'single_bit'}/total"))]
    return _sum(vals)


def _xml_gpu(i: int, g: ET.Element) -> GpuHealth:
    minor = _int(_x(g, "minor_number"))
    virt = _x(g, "gpu_virtualization_mode/virtualization_mode")
    vgpu = (virt or "").upper() == "VGPU"
    link = "pci/pci_gpu_link_info"
    t = GpuTelemetry(
        index=minor if minor is not None else i, uuid=_x(g, "uuid"), pci_bus_id=g.get("id"), name=_x(g, "product_name"),
        util_gpu=None if vgpu else _num(_x(g, "utilization/gpu_util")),
        # a vGPU guest reports "0 C": the host owns the sensor
        temp_gpu=None if vgpu else _num(_x(g, "temperature/gpu_temp")),
        power_w=_num(_x(g, "gpu_power_readings/power_draw", "gpu_power_readings/average_power_draw",
                        "gpu_power_readings/instant_power_draw", "power_readings/power_draw")),
        power_limit_w=_num(_x(g, "gpu_power_readings/current_power_limit", "power_readings/power_limit")),
        clock_event_reasons=_xml_reasons(g), ecc_mode=_x(g, "ecc_mode/current_ecc"),
        ecc_corr_volatile=_xml_ecc(g, "volatile", False), ecc_uncorr_volatile=_xml_ecc(g, "volatile", True),
        ecc_corr_aggregate=_xml_ecc(g, "aggregate", False), ecc_uncorr_aggregate=_xml_ecc(g, "aggregate", True),
        remapped_correctable=_int(_x(g, "remapped_rows/remapped_row_corr")),
        remapped_uncorrectable=_int(_x(g, "remapped_rows/remapped_row_unc")),
        remapped_pending=_bool(_x(g, "remapped_rows/remapped_row_pending")),
        remapped_failure=_bool(_x(g, "remapped_rows/remapped_row_failure")),
        pcie_gen=_int(_x(g, f"{link}/pcie_gen/current_link_gen")), pcie_gen_max=_int(_x(g, f"{link}/pcie_gen/max_link_gen")),
        pcie_width=_int(_x(g, f"{link}/link_widths/current_link_width")),
        pcie_width_max=_int(_x(g, f"{link}/link_widths/max_link_width")),
    )
    pending = _x(g, "retired_pages/pending_retirement", "retired_pages/pending_blacklist")
    return GpuHealth(t, _bool(_x(g, "ecc_mode/current_ecc")),
                     _int(_x(g, "retired_pages/multiple_single_bit_retirement/retired_count")),
                     _int(_x(g, "retired_pages/double_bit_retirement/retired_count")), _bool(pending),
                     virt, _bool(_x(g, "mig_mode/current_mig")))


def parse_q_xml(text: str) -> tuple[GpuHealth, ...]:
    """GPUs from ``nvidia-smi -q -x`` (DTD v10-v13). Raises ParseError for bad XML or no <gpu>."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError("nvidia-smi -q -x", str(exc)) from None
    gpus = tuple(_xml_gpu(i, g) for i, g in enumerate(root.iter("gpu")))
    if not gpus:
        raise ParseError("nvidia-smi -q -x", "no <gpu> element")
    return gpus


def xml_format(text: str) -> str:
    """``nvidia-smi -q -x (DTD nvsmi_device_v12, driver 535.54.03)`` from the document's head."""
    dtd = re.search(r"nvsmi_device_(v\d+)\.dtd", text[:400])
    drv = re.search(r"<driver_version>([^<]+)<", text[:2000])
    parts = [f"DTD nvsmi_device_{dtd.group(1)}" if dtd else "no DTD", f"driver {drv.group(1)}" if drv else None]
    return "nvidia-smi -q -x (" + ", ".join(p for p in parts if p) + ")"


def read_gpus(text: str) -> tuple[str, tuple[GpuHealth, ...]]:
    """(format detected, GPU snapshots) from XML, ``-q`` text or ``--query-gpu`` CSV.

    Raises ParseError naming the format it took the text for."""
    s = text.lstrip()
    if s.startswith("<?xml") or s.startswith("<nvidia_smi_log") or "<nvidia_smi_log" in s[:300]:
        return xml_format(text), parse_q_xml(text)
    if re.search(r"^GPU [0-9A-Fa-f]{4,8}:", text, re.M):
        drv = re.search(r"^Driver Version\s*:\s*(\S+)", text, re.M)
        return f"nvidia-smi -q{f' (driver {drv.group(1)})' if drv else ''}", parse_q_text(text)
    gpus = parse_query_gpu(text)
    if not gpus:
        raise ParseError("nvidia-smi output", "neither -q -x XML, -q text nor a --query-gpu CSV row")
    return "nvidia-smi --query-gpu CSV", tuple(GpuHealth(g, _bool(g.ecc_mode)) for g in gpus)


def attached(text: str) -> int | None:
    """How many GPU blocks the output announces (``Attached GPUs : 8`` / ``<attached_gpus>``),
    summed over the snapshots a capture holds; None when it does not say."""
    counts = re.findall(r"^Attached GPUs\s*:\s*(\d+)|<attached_gpus>\s*(\d+)", text, re.M)
    return sum(int(a or b) for a, b in counts) if counts else None


def parse_any(text: str) -> tuple[GpuHealth, ...]:
    """GPU snapshots from any nvidia-smi form (see read_gpus). Raises ParseError."""
    return read_gpus(text)[1]


def distinct(gpus: tuple[GpuHealth, ...]) -> int:
    """How many physical GPUs the snapshots describe (an idle and a load -q of one GPU are one)."""
    return len({g.key for g in gpus})


from .gpurules import GpuProblem, check_gpu, gpu_name, judged_kinds  # noqa: E402  (the rules; kept importable from here)

__all__ = ["GpuHealth", "GpuProblem", "attached", "check_gpu", "distinct", "gpu_name", "judged_kinds", "parse_any",
           "parse_q_text", "parse_q_xml", "read_gpus"]
