"""nvidia-smi -q / -q -x as drivers 418 to 595 write them (tests/data/nvidia-smi-q/SOURCES.md):
DTD v10-v13 names, ECC disabled and N/A, retired pages, one GPU in two snapshots,
cut and unreadable files, vGPU guests and MIG mode. Every expected value was read
off the recording by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from cockpit_runbooks import gpuhealth, probes_gpu
from cockpit_runbooks.context import RunContext

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi-q"


def read(name):
    return gpuhealth.read_gpus((DATA / name).read_text())


def checked(g):
    return sorted((p.kind, p.severity) for p in gpuhealth.check_gpu(g) if p.checked)


def notes(g):
    return {p.kind: p.text.split(": ", 1)[1] for p in gpuhealth.check_gpu(g) if not p.checked}


async def probe(*names, kinds=None):
    rc = RunContext(make_ctx(config={}), smi_files=tuple(str(DATA / n) for n in names))
    return await probes_gpu.gpu_health(rc, {"kinds": kinds} if kinds else {})


def test_dtd_v13_average_power_draw_and_gpu_util_are_read():
    fmt, (g,) = read("telegraf-nvidia-smi-q-x-rtx3080-v13-595.58.03-util65.xml")
    assert fmt == "nvidia-smi -q -x (DTD nvsmi_device_v13, driver 595.58.03)"
    # <average_power_draw>139.62 W, <current_power_limit>320.00 W, <gpu_util>65 %
    assert (g.power_w, g.power_limit_w, g.util_gpu) == (139.62, 320.0, 65.0)
    # under load (65 %) at its maximum generation (4 of 4): the "gen below max under load" rule ran and passed
    assert (g.pcie_gen, g.pcie_gen_max) == (4, 4) and checked(g) == []


def test_gpu_idle_reason_in_v11_and_v13_and_gen_drop_at_idle_is_no_fault():
    _, (a10g,) = read("telegraf-nvidia-smi-q-x-a10g-v11-515-throttle-idle.xml")
    _, (ada,) = read("telegraf-nvidia-smi-q-x-rtx4000-sff-ada-v13-595.84-ecc-disabled.xml")
    # clocks_throttle_reason_gpu_idle (v11) and clocks_event_reason_gpu_idle (v13), both Active
    assert a10g.clock_events == ada.clock_events == ("gpu_idle",)
    # both idle (0 %) at gen 1 of 4: a link that saves power at idle is not degraded
    assert (ada.util_gpu, ada.pcie_gen, ada.pcie_gen_max) == (0.0, 1, 4) and checked(ada) == []
    # the A10G's link is x8 of x16 whatever the load: that is a WARN
    assert (a10g.pcie_width, a10g.pcie_width_max) == (8, 16) and checked(a10g) == [("pcie", "WARN")]


def test_retired_pages_are_read_from_v11_xml():
    _, (t4,) = read("telegraf-nvidia-smi-q-x-tesla-t4-v11-515-retired-pages.xml")
    # multiple_single_bit_retirement 0, double_bit_retirement 0, pending_retirement No
    assert (t4.retired_sbe, t4.retired_dbe, t4.retired_pending) == (0, 0, False)
    assert not any(p.kind == "ecc" and p.checked for p in gpuhealth.check_gpu(t4))


@pytest.mark.parametrize("name", ["telegraf-nvidia-smi-q-x-rtx4000-sff-ada-v13-595.84-ecc-disabled.xml",
                                  "gpud-nvidia-smi-q-535.154.05-8x-rtx4090-ecc-disabled.txt"])
def test_ecc_disabled_is_not_checked_never_zero_errors(name):
    _, gpus = read(name)
    for g in gpus:
        assert g.ecc_enabled is False and g.ecc_uncorr_volatile is None
        assert notes(g)["ecc"] == "ECC disabled: not checked"


def test_na_is_unknown_not_zero_and_pre_ampere_totals():
    _, (p400,) = read("telegraf-nvidia-smi-q-x-quadro-p400-418-pre-ampere-ecc-na.xml")
    # driver 418, no DTD line; single_bit/double_bit <total>N/A</total>, power_draw N/A
    assert (p400.ecc_corr_volatile, p400.ecc_uncorr_volatile, p400.power_w) == (None, None, None)
    assert notes(p400)["ecc"].startswith("ECC counters not reported (N/A)")
    assert notes(p400)["power"] == "power draw or limit not reported: not checked"
    _, (titan,) = read("gpud-nvidia-smi-q-560.35.03-titan-v-pre-ampere.txt")
    # Volta, driver 560.35.03: ECC Mode N/A, Retired Pages N/A, 29.02 W of 250 W, 44 C
    assert (titan.ecc_mode, titan.retired_sbe, titan.power_w, titan.power_limit_w, titan.temp_gpu) == \
        ("N/A", None, 29.02, 250.0, 44.0)


async def test_one_gpu_in_an_idle_and_a_load_snapshot_is_one_gpu():
    name = "nvidia_gpu_exporter-h100-590.48.01-q-idle-and-load-same-gpu.txt"
    fmt, gpus = read(name)
    assert fmt == "nvidia-smi -q (driver 590.48.01)" and len(gpus) == 2 and gpuhealth.distinct(gpus) == 1
    idle, load = gpus
    assert idle.key == load.key == ("GPU-00000000-0000-0000-0000-000000000000", "00000000:00:09.0")
    assert (idle.util_gpu, idle.power_w) == (0.0, 69.85)  # Idle Active, 41 C
    assert load.util_gpu == 100.0 and load.power_w == 629.45  # gpu-burn: 629.45 W of 700 W
    res = await probe(name)
    assert res.sources == [f"{DATA / name}: nvidia-smi -q (driver 590.48.01), 1 GPU(s) in 2 snapshots"]
    assert res.evidence == ["1 GPU(s) read in 2 snapshots (nvidia-smi -q (driver 590.48.01))"]


async def test_a_cut_q_block_is_unknown_and_never_ok():
    res = await probe("gpud-nvidia-smi-q-535.183.01-h100-truncated.txt")
    rules = [(f.severity, f.rule) for f in res.findings]
    assert (Severity.UNKNOWN, "gpu.incomplete") in rules and not any(r == "gpu.ok" for _, r in rules)
    # the block stops inside Clocks Event Reasons: no temperature, power or ECC section
    (g,) = read("gpud-nvidia-smi-q-535.183.01-h100-truncated.txt")[1]
    assert not g.complete and (g.temp_gpu, g.power_w, g.ecc_mode) == (None, None, None)


async def test_an_unreadable_file_is_unknown_and_no_ok_is_claimed_for_it():
    bad = Path(__file__).resolve().parents[1] / "data" / "nvlink" / "gpud-nvlink-status-8x-a100-sxm4-80gb-12-links-25gbps.txt"
    rc = RunContext(make_ctx(config={}), smi_files=(str(bad), str(DATA / "telegraf-nvidia-smi-q-x-rtx3080-v13-595.58.03-util65.xml")))
    res = await probes_gpu.gpu_health(rc, {})
    assert [(f.severity, f.rule) for f in res.findings if f.severity != Severity.OK] == [(Severity.UNKNOWN, "gpu.unparsable")]
    assert not any(f.rule == "gpu.ok" for f in res.findings)  # one of two files unread: no "2 read: no problem"
    # neither XML nor a "GPU <bus id>" block: taken for --query-gpu CSV, whose first line has 1 of 28 fields
    assert res.sources[0] == f"{bad}: not read (cannot parse nvidia-smi --query-gpu: line 1: 1 values for 28 fields)"


async def test_vgpu_guest_is_not_judged_as_bare_metal():
    name = "telegraf-nvidia-smi-q-x-grid-p4-1q-vgpu-guest-v11-513.46-EXCERPT.xml"
    _, (g,) = read(name)
    # <virtualization_mode>VGPU, <gpu_temp>0 C: the sensor belongs to the host
    assert g.vgpu_guest and g.temp_gpu is None and g.ecc_uncorr_volatile is None
    assert set(notes(g)) == {"ecc", "remap", "thermal", "power", "pcie", "throttle"}
    res = await probe(name)
    assert [(f.severity, f.rule) for f in res.findings if f.severity != Severity.OK] == \
        [(Severity.UNKNOWN, "gpu.nothing_judged")]


async def test_mig_mode_gpu_says_what_it_cannot_judge():
    name = "nvidia-smi-q-x-a100-sxm4-v12-telegraf.xml"
    _, (g,) = read(name)
    # <current_mig>Enabled</current_mig>, <gpu_util>N/A</gpu_util>
    assert g.mig is True and g.util_gpu is None
    assert notes(g)["pcie"].startswith("MIG mode: no whole-GPU utilisation")
    assert checked(g) == []
    # <attached_gpus>4</attached_gpus> but one <gpu> (GPU 1): the other three are missing, never OK
    res = await probe(name)
    assert [(f.severity, f.title) for f in res.findings if f.severity != Severity.OK] == [
        (Severity.UNKNOWN, "the output announces 4 GPU block(s) but holds 1 (cut?): the GPUs missing were not checked")]


async def test_a_q_text_that_announces_more_gpus_than_it_holds():
    # "Attached GPUs : 8" and one block: the ml-engineering excerpt quotes GPU 0000:10:1c only
    res = await probe("nvidia-smi-q-ecc-row-remap-pending-a100-xid63-ml-engineering.txt", kinds=["ecc", "remap"])
    assert {(f.severity, f.rule) for f in res.findings if f.severity != Severity.OK} == {
        (Severity.UNKNOWN, "gpu.incomplete"), (Severity.WARN, "gpu.remap")}


async def test_hardware_slowdown_on_every_h100_is_one_warn_per_gpu():
    res = await probe("gpud-nvidia-smi-q-535.161.08-8x-h100-80gb-hbm3.txt")
    warns = [f.title for f in res.findings if f.severity == Severity.WARN]
    # HW Slowdown and HW Power Brake Slowdown Active on all eight GPUs
    assert len(warns) == 8 and all(t.endswith("clocks held back: hw_slowdown, hw_power_brake_slowdown") for t in warns)
    assert warns[0].startswith("GPU 0 (0000:19:00)")


async def test_remap_pending_and_uncorrectable_rows_on_a_pass_through_a10():
    res = await probe("gpud-nvidia-smi-q-535.129.03-a10-pass-through.txt", kinds=["ecc", "remap"])
    # Remapped Rows: Uncorrectable Error 4, Pending Yes
    assert sorted(f.title for f in res.findings if f.severity == Severity.WARN) == [
        "GPU 0 (0000:07:00): 4 rows remapped for uncorrectable errors",
        "GPU 0 (0000:07:00): a row remap is pending: reset the GPU to activate it"]


@pytest.mark.parametrize("name,bus", [("nvidia_gpu_exporter-h100-mig-590.48.01-q-idle-gen5-x16.txt", "0000:00:09"),
                                      ("nvidia_gpu_exporter-h200-mig-590.48.01-q-idle-gen5-x16.txt", "0000:83:00")])
async def test_a_mig_gpu_at_gen5_x16_has_its_pcie_link_judged(name, bus):
    # MIG mode: utilisation N/A, so the generation-under-load rule cannot apply; the width
    # (x16 of x16) and generation (5 of 5) were read: judged, not "nothing could be judged"
    _, (g,) = read(name)
    assert (g.mig, g.util_gpu, g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max) == (True, None, 5, 5, 16, 16)
    assert "pcie" in gpuhealth.judged_kinds(g)
    res = await probe(name, kinds=["pcie"])
    assert [(f.severity, f.rule) for f in res.findings] == [(Severity.OK, "gpu.not_checked.pcie"), (Severity.OK, "gpu.ok")]
    assert bus in res.findings[0].title
