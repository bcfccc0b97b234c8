"""nvidia-smi --query-gpu CSV parser on real recorded captures (tests/data/nvidia-smi)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cockpit.errors import ParseError
from cockpit.telemetry.nvsmi import QUERY_FIELDS, GpuTelemetry, parse_query_gpu, query_argv

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi"


def _capture(name: str) -> str:
    return (DATA / f"query-gpu-h100-{name}.csv").read_text()


def test_recorded_capture_with_header_maps_fields_by_name():
    (idle,) = parse_query_gpu(_capture("idle"))
    assert (idle.index, idle.name, idle.pci_bus_id) == (0, "NVIDIA H100 80GB HBM3", "00000000:00:09.0")
    assert (idle.util_gpu, idle.mem_used_mib, idle.mem_total_mib) == (0.0, 0.0, 81559.0)
    assert (idle.temp_gpu, idle.temp_mem, idle.power_w, idle.power_limit_w) == (41.0, 48.0, 69.85, 700.0)
    assert idle.clock_event_reasons == 1 and idle.clock_events == ("gpu_idle",) and idle.throttled is False
    assert (idle.ecc_mode, idle.ecc_uncorr_volatile, idle.ecc_corr_aggregate) == ("Enabled", 0, 0)
    assert (idle.remapped_pending, idle.remapped_failure, idle.remapped_uncorrectable) == (False, False, 0)
    assert (idle.pcie_gen, idle.pcie_width, idle.pcie_width_max, idle.pcie_degraded) == (5, 16, 16, False)
    assert idle.missing == ()


def test_load_capture_differs_where_the_load_shows():
    (load,) = parse_query_gpu(_capture("load"))
    assert (load.util_gpu, load.util_mem, load.mem_used_mib, load.temp_gpu) == (100.0, 11.0, 19818.0, 59.0)
    assert load.power_w == 631.95 and load.clock_sm_mhz == 1980.0 and load.clock_event_reasons == 0


def _noheader_nounits(name: str, fields: tuple[str, ...]) -> str:
    """Derive the --format=csv,noheader,nounits form of a recorded capture:
    pick our columns by header name and drop the unit suffixes nvidia-smi adds."""
    header, row = list(csv.reader(io.StringIO(_capture(name)), skipinitialspace=True))
    by_name = {h.split(" [")[0]: v for h, v in zip(header, row)}
    vals = [by_name[f].rsplit(" ", 1)[0] if f in by_name and by_name[f][-1:] in "BWz%" and " " in by_name[f] else by_name[f] for f in fields]
    return ", ".join(vals) + "\n"


def test_noheader_nounits_form_is_read_by_position():
    text = _noheader_nounits("load", QUERY_FIELDS)
    assert "MiB" not in text and "[N/A]" not in text
    (gpu,) = parse_query_gpu(text)
    assert (gpu.util_gpu, gpu.mem_used_mib, gpu.power_w) == (100.0, 19818.0, 631.95)


def test_na_values_become_none_not_zero():
    # hostname and pcie.link.gen.hostmax are [N/A] in the recorded capture
    fields = ("index", "pcie.link.gen.hostmax", "fan.speed", "temperature.gpu")
    text = _noheader_nounits("idle", fields)
    assert text.count("[N/A]") == 2
    (gpu,) = parse_query_gpu(text, fields=("index", "pcie.link.gen.max", "utilization.gpu", "temperature.gpu"))
    assert gpu.pcie_gen_max is None and gpu.util_gpu is None and gpu.temp_gpu == 41.0


def test_fields_missing_from_the_output_are_reported():
    header, row = _capture("idle").splitlines()
    keep = [i for i, h in enumerate(header.split(", ")) if not h.startswith(("remapped_rows", "power.draw"))]
    text = ", ".join(header.split(", ")[i] for i in keep) + "\n" + ", ".join(row.split(", ")[i] for i in keep)
    (gpu,) = parse_query_gpu(text)
    assert gpu.power_w is None and gpu.remapped_pending is None and gpu.temp_gpu == 41.0
    assert "power.draw" in gpu.missing and "remapped_rows.pending" in gpu.missing


@pytest.mark.parametrize("bad, why", [("0, abc", "expected a number"), ("0", "1 values for 2 fields"), ("x, 5", "")])
def test_bad_values_raise_parse_error_naming_the_field(bad, why):
    with pytest.raises(ParseError) as exc:
        parse_query_gpu(bad, fields=("index", "utilization.gpu"))
    assert why in str(exc.value)


def test_query_argv_asks_for_every_field():
    argv = query_argv()
    assert argv[0] == "nvidia-smi" and argv[-1] == "--format=csv,noheader,nounits"
    assert argv[1].split("=", 1)[1].split(",") == list(QUERY_FIELDS)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_raises_only_parse_error(text):
    try:
        parse_query_gpu(text)
    except ParseError:
        pass


# -- read through a probe runner (what the TUI's poller reads) -----------------------------
async def test_read_telemetry_through_a_probe_runner_never_raises_for_a_node():
    from cockpit.errors import CockpitError
    from cockpit.models.actions import ProbeOutput
    from cockpit.telemetry.nvsmi import query_argv
    from cockpit.telemetry.probe import read_telemetry

    idle = (DATA / "query-gpu-h100-idle.csv").read_text()

    class Probes:
        def __init__(self):
            self.argv = None

        async def on_nodes(self, nodes, argv, *, via="auto", timeout=None):
            self.argv = list(argv)
            return {"ok": ProbeOutput("ok", True, idle), "down": ProbeOutput("down", False, "", "ssh down: no route"),
                    "gone": ProbeOutput("gone", False, "", "nvidia-smi: command not found"),
                    "junk": ProbeOutput("junk", True, "not,a,csv\n")}

    probes = Probes()
    got = await read_telemetry(probes, ["ok", "down", "gone", "junk", "silent"])
    assert probes.argv == query_argv()
    assert list(got.readings) == [("ok", 0)] and got.readings[("ok", 0)].temp_gpu == 41.0
    assert got.errors["down"] == "ssh down: no route"
    assert got.errors["gone"] == "gone: nvidia-smi: command not found"
    assert "junk" in got.errors["junk"] and "silent" in got.errors["silent"]

    class Broken:
        async def on_nodes(self, nodes, argv, **kw):
            raise CockpitError("no SSH settings")

    got = await read_telemetry(Broken(), ["a", "b"])
    assert got.readings == {} and got.errors == {"a": "no SSH settings", "b": "no SSH settings"}


def test_one_gpu_row_that_cannot_be_read_costs_that_row_only():
    # The recorded idle and load answers of the same H100, one under the other; the
    # first row's power reading damaged. That row is named, the other GPU row stays.
    idle = (DATA / "query-gpu-h100-idle.csv").read_text().splitlines()
    load = (DATA / "query-gpu-h100-load.csv").read_text().splitlines()
    header, first = idle[0], idle[1]
    names = [c.strip() for c in header.split(",")]
    cells = first.split(",")
    cells[names.index("power.draw [W]")] = " lots"
    warnings: list[str] = []
    gpus = parse_query_gpu("\n".join([header, ",".join(cells), load[1]]), warnings=warnings)
    assert len(gpus) == 1 and gpus[0].util_gpu == parse_query_gpu(load[0] + "\n" + load[1])[0].util_gpu
    assert len(warnings) == 1 and "telemetry row GPU0@line1 not understood" in warnings[0] and "'lots'" in warnings[0]
    with pytest.raises(ParseError):
        parse_query_gpu("\n".join([header, ",".join(cells), load[1]]))


# NVML's nvmlClocksEventReasons (NVML API reference R550, group__nvmlClocksEventReasons) and
# DCGM's DCGM_CLOCKS_EVENT_REASON_* constants ("a 1:1 map to the NVML reasons documented in
# nvml.h"), as published: bit value -> the reason it names.
NVML_DOCUMENTED = {
    0x1: "gpu_idle",                       # nvmlClocksEventReasonGpuIdle
    0x2: "applications_clocks_setting",    # ...ApplicationsClocksSetting
    0x4: "sw_power_cap",                   # ...SwPowerCap
    0x8: "hw_slowdown",                    # nvmlClocksThrottleReasonHwSlowdown
    0x10: "sync_boost",                    # ...SyncBoost
    0x20: "sw_thermal_slowdown",           # ...SwThermalSlowdown
    0x40: "hw_thermal_slowdown",           # ...HwThermalSlowdown
    0x80: "hw_power_brake_slowdown",       # ...HwPowerBrakeSlowdown
    0x100: "display_clocks_setting",       # ...DisplayClockSetting
}


def test_each_documented_bit_decodes_to_its_nvml_reason_and_an_unknown_bit_is_said():
    for bit, reason in NVML_DOCUMENTED.items():
        assert GpuTelemetry(index=0, clock_event_reasons=bit).clock_events == (reason,)
    # a bit cockpit has no name for (newer NVML also lists BoardLimit, Reliability) is said, never dropped
    assert GpuTelemetry(index=0, clock_event_reasons=0x41 | 0x400).clock_events == (
        "gpu_idle", "hw_thermal_slowdown", "bit_0x400")
