"""The pre-flight plugin's parsers on real recorded outputs (tests/data/*/SOURCES.md):
fio JSON, dd, nvidia-smi -q, dcgmi diag, ibstat, /sys/class/infiniband trees, and
cockpit's own job outputs recorded on the test cluster. Expected values were read
off the files by hand; bad input is a one-line ParseError naming what was wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.plugins.api import ParseError
from cockpit_preflight.burnin_job import burnin_nodes
from cockpit_preflight.common import parse_job_output, parse_params, split_tasks
from cockpit_preflight.dcgmi import looks_like_diag, parse_diag
from cockpit_preflight.fio import parse_dd, parse_fio_json, parse_meta_loop
from cockpit_preflight.ibparse import parse_ibstat, parse_rate, parse_sysfs_dump, read_sysfs_tree
from cockpit_preflight.nvsmi_q import parse_q
from cockpit_preflight.storage_job import figures, size_bytes

DATA = Path(__file__).resolve().parents[1] / "data"


def text(*parts: str) -> str:
    return (DATA.joinpath(*parts)).read_text()


# ---------------------------------------------------------------- fio


@pytest.mark.parametrize("name,rw,bw_kib,iops,numjobs,version", [
    ("fioplot-raid0-md0-3xmx200-randread-4k-qd1-fio3.1.json", "randread", 26301, 6575.457076, 1, "fio-3.1"),
    ("fioplot-raid0-md0-3xmx200-randread-4k-qd16-jobs32-fio3.1.json", "randread", 575656, 143914.094787, 32, "fio-3.1"),
    ("fioplot-floppy-seqread-4k-fio3.1.json", "read", 12, 3.153662, 1, "fio-3.1"),
    ("fioplot-floppy-seqwrite-4k-fio3.1.json", "write", 12, 3.011922, 1, "fio-3.1"),
    ("fioplot-md127-randread-4k-fio2.18.json", "randread", 292, 73.182907, 1, "fio-2.18-59-g618e"),
])
def test_fio_json_real_outputs(name, rw, bw_kib, iops, numjobs, version):
    run = parse_fio_json(text("fio", name), name)
    (job,) = run.jobs
    assert (run.version, job.rw, job.numjobs, job.error) == (version, rw, numjobs, 0)
    # No bw_bytes in fio 2.18/3.1: bw is KiB/s.
    assert run.bandwidth == bw_kib * 1024
    assert run.iops == pytest.approx(iops)


def test_fio_json_from_the_cluster_has_bw_bytes_and_text_before_it():
    nodes = parse_job_output(text("preflight-jobs", "storage-fio-node01-02-loop-ext4.out"), "storage", "rec")
    sec = nodes["node01"].find("fio", path="local", test="seqread")[0]
    run = parse_fio_json("note: fio said something first\n" + sec.text, "rec")
    assert run.version == "fio-3.33" and run.bandwidth == 4988727396.0


@pytest.mark.parametrize("bad,why", [
    ("", "no JSON document"), ("fio: failed to open file\n", "no JSON document (first line 'fio: failed"),
    ('{"jobs": [', "bad JSON at line 1"), ('{"fio version": "fio-3.33"}', "no 'jobs' list"),
    ('{"jobs": [{"jobname": "x", "read": {"bw": "fast", "iops": 1}, "write": {"bw": 0, "iops": 0}}]}',
     "job 'x' read: bad or missing"),
])
def test_fio_bad_input_is_one_line(bad, why):
    with pytest.raises(ParseError) as exc:
        parse_fio_json(bad, "f.json")
    assert why in str(exc.value) and "\n" not in str(exc.value)


# ---------------------------------------------------------------- dd and the metadata loop


@pytest.mark.parametrize("name,nbytes,seconds", [
    ("findstring-29666650069-dd-write-1GiB.txt", 1073741824, 0.324293),
    ("findstring-49011546439-cephfs-dd-write-10GiB.txt", 10737418240, 3.62128),
    ("findstring-49011546439-cephfs-dd-read-10GiB.txt", 10737418240, 1.30639),
    ("findstring-25209369829-dd-usb-de-locale.txt", 3353227264, 365.951),  # decimal commas
])
def test_dd_real_outputs(name, nbytes, seconds):
    run = parse_dd(text("dd", name))
    assert (run.bytes, run.seconds) == (nbytes, seconds)
    assert run.bandwidth == pytest.approx(nbytes / seconds)


def test_dd_error_is_not_a_measurement():
    with pytest.raises(ParseError, match="error reading '/dev/sda1': Input/output error"):
        parse_dd(text("dd", "findstring-31935247354-dd-read-io-error.txt"))
    with pytest.raises(ParseError, match="no 'N bytes"):
        parse_dd("dd: invalid option\n".replace("dd: ", "dd "))


def test_meta_loop_and_the_dd_fallback_job_from_the_cluster():
    figs = figures(text("preflight-jobs", "storage-dd-fallback-node01-02.out"), "rec")
    assert {n.tool for n in figs.values()} == {"dd"}
    shared = figs["node01"].paths["shared"]
    assert shared.seqwrite and shared.seqread and set(shared.meta) == {"create", "stat", "unlink"}
    assert figs["node01"].paths["local"].randread_iops is None  # dd cannot measure it
    assert parse_meta_loop("meta create files=200 ns=1000000\n") == {"create": 200 / 1e-3}
    with pytest.raises(ParseError):
        parse_meta_loop("meta create files=200 ns=0\n")


# ---------------------------------------------------------------- storage job outputs


def test_storage_job_output_per_node_and_path():
    figs = figures(text("preflight-jobs", "storage-fio-node01-02-loop-ext4.out"), "rec")
    assert sorted(figs) == ["node01", "node02"]
    loc, sh = figs["node01"].paths["local"], figs["node01"].paths["shared"]
    assert (loc.fstype, loc.source, loc.target) == ("ext4", "/dev/loop0", "/tmp/pf-exp/mnt")
    assert (loc.seqwrite, loc.seqread, loc.randread_iops) == (3967514085.0, 4988727396.0, pytest.approx(132035.98, 1e-6))
    assert (sh.fstype, sh.source) == ("ext4", "/dev/vda")
    assert sh.meta["create"] == pytest.approx(8695.652174) and not loc.problems and not sh.problems


def test_a_task_cut_short_is_reported_not_guessed():
    full = text("preflight-jobs", "storage-fio-node01-02-loop-ext4.out")
    cut = full[: full.index("0: @@begin fio path=local test=seqread")]  # node01 died before its read
    figs = figures(cut, "cut")
    assert figs["node01"].paths["local"].seqread is None
    assert any("did not finish" in e for e in figs["node01"].errors)


def test_split_tasks_and_headers():
    assert split_tasks(" 0: a\n12: b\nc") == {"0": ["a"], "12": ["b"], "": ["c"]}
    with pytest.raises(ParseError, match="not a cockpit storage job output"):
        parse_job_output("Submitted batch job 1 (did not run)\n", "storage", "x.out")


def test_params_and_sizes():
    assert parse_params("70B") == 70e9 and parse_params("7.5b") == 7.5e9 and parse_params("350M") == 350e6
    assert size_bytes("4G") == 4 << 30 and size_bytes("512M") == 512 << 20
    for bad in ("70X", "-1B", "B", ""):
        with pytest.raises(Exception, match="bad --params"):
            parse_params(bad)


# ---------------------------------------------------------------- nvidia-smi -q


def test_q_h100_under_load():
    (g,) = parse_q(text("nvidia-smi-load", "q-h100-80gb-hbm3-under-gpu-burn-590.48.01.txt"))
    assert (g.name, g.bus_id, g.pstate) == ("NVIDIA H100 80GB HBM3", "00000000:00:09.0", "P0")
    assert g.reasons == frozenset() and g.throttle == frozenset()
    assert (g.temp_c, g.power_w, g.power_limit_w, g.default_limit_w) == (59.0, 629.45, 700.0, 700.0)
    assert (g.sm_mhz, g.sm_max_mhz, g.util_pct) == (1980.0, 1980.0, 100.0)
    assert (g.ecc_uncorrectable, g.ecc_correctable) == (0, 0)


def test_q_h100_idle_and_the_power_brake_excerpt():
    (idle,) = parse_q(text("nvidia-smi-load", "q-h100-80gb-hbm3-idle-590.48.01.txt"))
    assert idle.reasons == {"gpu_idle"} and (idle.temp_c, idle.sm_mhz, idle.util_pct) == (41.0, 345.0, 0.0)
    (v100,) = parse_q(text("nvidia-smi-load", "q-excerpt-v100-sxm2-32gb-c4130-hw-power-brake-l4rz.txt"))
    assert v100.bus_id is None and v100.sm_mhz == 382.0 and v100.power_w is None
    assert v100.throttle == {"hw_slowdown", "hw_power_brake_slowdown"}


def test_q_eight_gpus_module_rail_ignored():
    gpus = parse_q(text("nvidia-smi-load", "q-gpud-8x-rtx4090-535.154.05.txt"))
    assert len(gpus) == 8 and [g.index for g in gpus] == list(range(8))
    assert (gpus[0].power_w, gpus[0].power_limit_w, gpus[0].temp_c) == (46.62, 450.0, 27.0)  # not Module: N/A
    assert gpus[1].bus_id == "00000000:21:00.0" and gpus[0].ecc_uncorrectable is None  # ECC N/A, never 0


@pytest.mark.parametrize("bad", [
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
    "stand-in nvidia-smi: only -q has a recorded output\n", "| Diagnostic | Result |\n"])
def test_q_bad_input(bad):
    with pytest.raises(ParseError) as exc:
        parse_q(bad, "smi")
    assert "\n" not in str(exc.value)


# ---------------------------------------------------------------- dcgmi diag


def test_dcgmi_33_pass_and_skip():
    run = parse_diag(text("dcgmi", "aws-efa-cheatsheet-p4de-8xa100-r2-dcgm3.3.3.txt"))
    assert run.meta == {"version": "3.3.3", "driver": "535.104.12", "device_ids": ",".join(["20b2"] * 8)}
    assert len(run.tests) == 11 and not run.failed()
    assert {t.name: t.gpus for t in run.tests if t.category != "Deployment"} == {
        "PCIe": {"all": "pass"}, "GPU Memory": {"all": "pass"}}
    skips = parse_diag(text("dcgmi", "gnosia93-slurm-2xrtxpro6000-r3-dcgm3.3.9-skips.txt"))
    stress = [t for t in skips.tests if t.category == "Stress"]
    assert [t.name for t in stress] == ["Targeted Stress", "Targeted Power", "Memory Bandwidth", "EUD Test"]
    assert all(t.statuses == {"skip"} for t in stress)


def test_dcgmi_44_layout():
    run = parse_diag(text("dcgmi", "dcgm-issue124-1xgpu-r2-dcgm4.4.2.txt"))
    assert run.meta["version"] == "4.4.2"
    assert [(t.category, t.name, t.overall, t.gpus) for t in run.tests] == [
        ("Deployment", "software", "pass", {"0": "pass"}), ("Hardware", "memory", "pass", {"0": "pass"}),
        ("Integration", "pcie", "pass", {"0": "pass"})]


def test_dcgmi_fail_with_wrapped_warning_from_an_excerpt():
    src = text("dcgmi", "go-dcgm-issue52-gpu0-memory-fail-r2-EXCERPT.txt")
    assert looks_like_diag(src)
    (failed,) = parse_diag(src).failed()
    assert (failed.category, failed.name, failed.gpus) == ("Hardware", "GPU Memory", {"1": "pass", "0": "fail"})
    # wrapped at the column width, mid-word ("R" + "estart", "cre" + "ate"): joined back exactly
    assert failed.warnings == ["GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system logs for errors. Reset "
                               "GPU. Restart DCGM. Rerun diagnostics. Unable to create CUDA context: 'CUDA-capable "
                               "device(s) is/are busy or unavailable'."]


def test_dcgmi_errors():
    with pytest.raises(ParseError, match="Error: Unable to complete diagnostic"):
        parse_diag("Error: Unable to complete diagnostic for group 2147483647. Return: (-37)\n")
    with pytest.raises(ParseError, match="no dcgmi diag table"):
        parse_diag("dcgmi: command not found\n")


# ---------------------------------------------------------------- ibstat and sysfs


def test_ibstat_real_outputs():
    a100 = parse_ibstat(text("ibstat", "gpud-ibstat.47.0.a100.all.active.0.txt"))
    ports = [p for h in a100.values() for p in h.ports.values()]
    assert len(a100) == 9 and {p.rate_gbps for p in ports} == {200.0} and all(p.active for p in ports)
    assert sorted(p.link_layer for p in ports).count("Ethernet") == 1
    down = parse_ibstat(text("ibstat", "gpud-ibstat.47.0.h100.some.down.0.txt"))
    states = {(h.name, p.state, p.rate_gbps, p.link_layer) for h in down.values() for p in h.ports.values()}
    assert ("mlx5_2", "DOWN", 40.0, "Ethernet") in states and ("mlx5_0", "ACTIVE", 400.0, "InfiniBand") in states
    assert down["mlx5_0"].hca_type == "MT4129" and down["mlx5_1"].fw_ver == "22.38.1002"


def test_ibstat_panic_and_garbage():
    with pytest.raises(ParseError, match="ibpanic: .* stat of IB device 'mlx5_8' failed"):
        parse_ibstat(text("ibstat", "gpud-ibstat.39.0.a100.failed.ibpanic.exit-255.0.txt"))
    with pytest.raises(ParseError, match="not ibstat output"):
        parse_ibstat("bash: ibstat: command not found\n")


def test_sysfs_trees():
    h100 = read_sysfs_tree(DATA / "ib-sysfs" / "gpud-h100-8xndr")
    assert sorted(h100) == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9",
                            "mlx5_bond_0"]
    p = h100["mlx5_0"].ports[1]
    assert (p.rate_gbps, p.width, p.speed, p.state, p.phys_state, p.link_layer) == (
        400.0, "4X", "NDR", "ACTIVE", "LinkUp", "InfiniBand")
    assert h100["mlx5_bond_0"].ports[1].roce and h100["mlx5_bond_0"].hca_type == "MT41692"
    old = read_sysfs_tree(DATA / "ib-sysfs" / "procfs-fixture-hfi1-mlx4-mlx5")
    assert [(h, sorted((n, p.rate_gbps) for n, p in old[h].ports.items())) for h in sorted(old)] == [
        ("hfi1_0", [(1, 100.0)]), ("mlx4_0", [(1, 40.0), (2, 40.0)]), ("mlx5_0", [(1, 25.0)])]


def test_sysfs_dump_as_grep_prints_it_and_bad_rates():
    dump = "/x/node01/mlx5_0/ports/1/rate:200 Gb/sec (4X HDR)\n/x/node01/mlx5_0/ports/1/state:4: ACTIVE\n"
    (p,) = parse_sysfs_dump(dump)["mlx5_0"].ports.values()
    assert (p.rate_gbps, p.speed, p.state) == (200.0, "HDR", "ACTIVE")
    assert parse_rate("2.5 Gb/sec (1X SDR)", "r") == (2.5, "1X", "SDR")
    with pytest.raises(ParseError, match="bad link rate 'fast'"):
        parse_sysfs_dump("/x/mlx5_0/ports/1/rate:fast\n")


# ---------------------------------------------------------------- burnin job output


def test_burnin_job_output_from_the_cluster():
    nodes = burnin_nodes(text("preflight-jobs", "burnin-torch-cpu-node01-02-standin.out"), "rec")
    n1, n2 = nodes["node01"], nodes["node02"]
    assert (n1.engine, n1.load_rc, n1.finished, n1.problems) == ("torch", 0, True, [])
    assert len(n1.phase("load")) == 4 and len(n1.phase("before")) == len(n1.phase("after")) == 1
    assert n1.phase("load")[0].gpus[0].name == "NVIDIA H100 80GB HBM3"  # the replayed recording
    assert n2.phase("load")[0].gpus[0].throttle == {"hw_slowdown", "hw_power_brake_slowdown"}
    assert n1.xid_before == n1.xid_after == []
    (final,) = [d for d in n1.load_lines if d.get("final")]
    assert final["device"] == "cpu" and final["tflops"] > 0 and final["matrix"] == 512
