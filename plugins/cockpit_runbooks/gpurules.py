"""The nvidia-smi health rules: ECC, retired pages, remapped rows, temperature,
power, clock event (throttle) reasons, PCIe link below its maximum.

A value the GPU did not report is not a pass: where a rule cannot be applied
(ECC disabled, a vGPU guest whose sensors belong to the host, a MIG-mode GPU
without whole-GPU utilisation) the GPU gets a
``not checked`` note (severity OK, ``checked`` False) instead of silence, so the
probe can tell "judged healthy" from "nothing could be judged".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .xid import norm_pci


@dataclass(frozen=True, slots=True)
class GpuProblem:
    gpu: str  # "GPU 3 (0000:9b:00)"
    kind: str  # ecc, remap, thermal, power, throttle, pcie
    severity: str  # OK for a "not checked" note
    text: str
    checked: bool = True  # False: the rule could not be applied to this GPU


def gpu_name(g: Any) -> str:
    return f"GPU {g.index}" + (f" ({norm_pci(g.pci_bus_id)})" if g.pci_bus_id else "")


def _memory(g: Any, add) -> None:
    if getattr(g, "ecc_enabled", None) is False:
        add("ecc", "OK", "ECC disabled: not checked", checked=False)
    elif g.ecc_uncorr_volatile is None and g.ecc_corr_volatile is None:
        add("ecc", "OK", "ECC counters not reported (N/A): not checked", checked=False)
    elif g.ecc_uncorr_volatile:
        add("ecc", "CRIT", f"{g.ecc_uncorr_volatile} uncorrectable ECC errors since the driver loaded")
    if getattr(g, "retired_dbe", None):
        add("ecc", "CRIT", f"{g.retired_dbe} pages retired for double-bit ECC errors (RMA signal on pre-Ampere GPUs)")
    if getattr(g, "retired_pending", None):
        add("ecc", "WARN", "a page retirement is pending: reboot (or reset the GPU) to retire it")
    if g.remapped_failure:
        add("remap", "CRIT", "row remapping failed: the GPU is out of spare rows (RMA)")
    if g.remapped_pending:
        add("remap", "WARN", "a row remap is pending: reset the GPU to activate it")
    if g.remapped_uncorrectable:
        add("remap", "WARN", f"{g.remapped_uncorrectable} rows remapped for uncorrectable errors")
    if g.remapped_pending is None and g.remapped_failure is None and g.remapped_uncorrectable is None:
        add("remap", "OK", "remapped rows not reported (N/A): not checked", checked=False)


def check_gpu(g: Any, temp_warn_c: float = 85.0) -> list[GpuProblem]:
    """Rules for one GPU snapshot (a GpuHealth, or a plain GpuTelemetry from the CSV)."""
    name = gpu_name(g)
    out: list[GpuProblem] = []

    def add(kind: str, sev: str, text: str, checked: bool = True) -> None:
        out.append(GpuProblem(name, kind, sev, f"{name}: {text}", checked))

    _memory(g, add)
    if getattr(g, "vgpu_guest", False):
        for kind in ("thermal", "power", "pcie"):
            add(kind, "OK", "vGPU guest: temperature, power and PCIe belong to the host: not checked", checked=False)
        if g.clock_event_reasons is None:
            add("throttle", "OK", "vGPU guest: clock event reasons not reported: not checked", checked=False)
        return out
    if g.temp_gpu is None:
        add("thermal", "OK", "temperature not reported: not checked", checked=False)
    elif g.temp_gpu >= temp_warn_c:
        add("thermal", "WARN", f"temperature {g.temp_gpu:g} C (threshold {temp_warn_c:g} C)")
    if g.power_w is None or not g.power_limit_w:
        add("power", "OK", "power draw or limit not reported: not checked", checked=False)
    elif g.power_w > g.power_limit_w * 1.02:
        add("power", "WARN", f"power draw {g.power_w:g} W above its limit {g.power_limit_w:g} W")
    if g.clock_event_reasons is None:
        add("throttle", "OK", "clock event reasons not reported: not checked", checked=False)
    bad = [r for r in g.clock_events if r in ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")]
    if bad:
        add("throttle", "WARN", "clocks held back: " + ", ".join(bad))
    if g.pcie_width is None or g.pcie_width_max is None:
        add("pcie", "OK", "PCIe link not reported: not checked", checked=False)
    elif g.pcie_degraded:
        add("pcie", "WARN", f"PCIe link x{g.pcie_width} below its maximum x{g.pcie_width_max}")
    if g.util_gpu is None and getattr(g, "mig", None):
        # in MIG mode utilisation is per instance: the whole GPU reports N/A
        add("pcie", "OK", "MIG mode: no whole-GPU utilisation, so the PCIe generation under load is not checked",
            checked=False)
    busy = g.util_gpu is not None and g.util_gpu >= 50
    if busy and g.pcie_gen and g.pcie_gen_max and g.pcie_gen < g.pcie_gen_max:
        # at idle the link drops its generation to save power; under load it should not
        add("pcie", "WARN", f"PCIe gen {g.pcie_gen} below its maximum {g.pcie_gen_max} under load")
    return out


def judged_kinds(g: Any) -> set[str]:
    """The kinds some rule could be applied to on this GPU: a value it reported was read
    and judged, whether or not another rule of the same kind had to be left out (a MIG
    GPU's PCIe width is judged though its generation under load is not)."""
    out = set()
    vgpu = getattr(g, "vgpu_guest", False)
    if getattr(g, "ecc_enabled", None) is not False and (g.ecc_uncorr_volatile is not None or g.ecc_corr_volatile is not None):
        out.add("ecc")
    if getattr(g, "retired_dbe", None) is not None or getattr(g, "retired_pending", None) is not None:
        out.add("ecc")
    if not (g.remapped_pending is None and g.remapped_failure is None and g.remapped_uncorrectable is None):
        out.add("remap")
    if g.clock_event_reasons is not None:
        out.add("throttle")
    if not vgpu:
        if g.temp_gpu is not None:
            out.add("thermal")
        if g.power_w is not None and g.power_limit_w:
            out.add("power")
        if g.pcie_width is not None and g.pcie_width_max is not None:
            out.add("pcie")
    return out
