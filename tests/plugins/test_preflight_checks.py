"""The three pre-flight checks judging recorded outputs (--log), in-process and through
``cockpit check``: verdicts, findings, JSON, --prometheus, exit codes, bad input as one
line, and the burn-in's proposed drain going through the gate (plan printed without
--yes, refused and audited in read-only mode)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.audit import AuditLog, read_audit
from cockpit.plugins.api import Severity, UsageError
from cockpit_preflight import plugin
from cockpit_preflight.burnin_job import NodeBurnin, Sample
from cockpit_preflight.burnin_judge import judge as judge_burnin
from cockpit_preflight.nvsmi_q import GpuReading
from cockpit_preflight.settings import merged
from pluginctx import make_ctx

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
JOBS = DATA / "preflight-jobs"
CHECKS = {c.name: c for c in plugin.checks}


def run(name: str, argv: list[str], config: dict | None = None, **ctx_kw):
    check = CHECKS[name]
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    return asyncio.run(check.run(make_ctx(config=config or {}, **ctx_kw), parser.parse_args(argv)))


def cockpit(tmp_path, *args, timeout=60):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    env.pop("COCKPIT_CONFIG", None)
    cfg = tmp_path / "cockpit.toml"
    if not cfg.exists():
        cfg.write_text("")
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(cfg), "--backend", "demo", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


# ---------------------------------------------------------------- storage


def test_storage_names_the_throttled_node_from_its_recorded_job():
    res = run("storage", ["--log", str(JOBS / "storage-fio-node02-03-node03-blkio-throttled.out")],
              {"storage_default_local_read_gbps": 0.02})
    assert res.severity == Severity.CRIT and res.data["slow_nodes"] == ["node03"]
    slow = [f for f in res.findings if f.rule == "storage-slow-node"]
    assert {f.title.split()[0] for f in slow} == {"node03"} and len(slow) == 3  # read, write, randread
    assert "node03 is slow: local sequential read 5.24 MB/s" in slow[0].title
    # node02's 10 GB/s meets the 0.02 GB/s configured; node03's 5.24 MB/s is 26% of it
    (exp,) = [f for f in res.findings if f.rule == "storage-expectation"]
    assert exp.title.startswith("node03: local sequential read 5.24 MB/s, 26% of the 20 MB/s expected")


def test_storage_expectations_per_partition():
    log = str(JOBS / "storage-fio-node02-03-node03-blkio-throttled.out")
    # The partition's own figure wins over '*' and over the guide's default.
    res = run("storage", ["--log", log, "--partition", "gpu"],
              {"storage_local_read_gbps": {"gpu": 0.004, "*": 100.0}, "storage_local_randread_kiops": {"gpu": 1.0}})
    exp = sorted(f.title for f in res.findings if f.rule == "storage-expectation")
    assert exp == ["node03: local 4k random read 0.37 kIOPS, 37% of the 1 kIOPS expected"]
    with pytest.raises(UsageError, match="bad expectation 'fast' for partition 'gpu'"):
        run("storage", ["--log", log, "--partition", "gpu"], {"storage_local_read_gbps": {"gpu": "fast"}})


def test_storage_default_expectation_is_the_guides_32_gbps_and_checkpoint_time():
    res = run("storage", ["--log", str(JOBS / "storage-fio-node01-02-loop-ext4.out"), "--params", "70B"])
    exp = [f for f in res.findings if f.rule == "storage-expectation"]
    assert [f.title for f in exp if "read" in f.title] == [
        "node01: local sequential read 4.99 GB/s, 16% of the 32 GB/s expected",
        "node02: local sequential read 4.98 GB/s, 16% of the 32 GB/s expected"]
    assert res.severity == Severity.CRIT  # 16% is below crit_ratio 0.7
    ck = res.data["checkpoint"]
    assert (ck["bytes"], ck["bytes_per_param"]) == (70e9 * 14, 14.0)
    # both nodes write at once: 980 GB / (3.97 + 3.93 GB/s) locally, / (1.39 + 1.43) shared
    assert ck["local_seconds"] == pytest.approx(980e9 / (3967514085.0 + 3929670876.0))
    assert ck["shared_seconds"] == pytest.approx(980e9 / (1389022753.0 + 1426021479.0))
    (f,) = [f for f in res.findings if f.rule == "storage-checkpoint-time"]
    assert "70B parameters (980 GB at 14 B/param)" in f.title and "asynchronously: saves" in f.fix
    assert {f.rule for f in res.findings if f.severity == Severity.WARN} >= {"storage-shared-filesystem"}


def test_storage_fio_json_log_and_nfs_finding(tmp_path):
    res = run("storage", ["--log", str(DATA / "fio" / "fioplot-floppy-seqread-4k-fio3.1.json"),
                          "--log-node", "floppy"])
    assert res.data["nodes"]["floppy"]["paths"]["local"]["seqread_bytes_per_s"] == 12 * 1024
    assert res.severity == Severity.CRIT and "0.000038% of the 32 GB/s" in res.findings[0].title
    # An NFS shared path, as findmnt reports it inside the job, is a finding in itself.
    rec = (JOBS / "storage-fio-node01-02-loop-ext4.out").read_text().replace("0: ext4   /dev/vda /",
                                                                             "0: nfs4   filer:/ckpt /")
    (tmp_path / "nfs.out").write_text(rec)
    res = run("storage", ["--log", str(tmp_path / "nfs.out")], {"storage_default_local_read_gbps": 0.0})
    (nfs,) = [f for f in res.findings if f.rule == "storage-nfs-checkpoints"]
    assert nfs.title.startswith("node01: shared path is NFS (nfs4 on filer:/ckpt)") and nfs.severity == Severity.WARN


def test_strings_from_the_nodes_are_text(tmp_path):
    rec = (JOBS / "storage-fio-node01-02-loop-ext4.out").read_text().replace(
        "0: ext4   /dev/vda /", "0: ext4   /dev/\x1b]52;c;ZWNobyBoaQ==\x07vda[bold] /")
    (tmp_path / "esc.out").write_text(rec)
    res = run("storage", ["--log", str(tmp_path / "esc.out")])
    assert res.data["nodes"]["node01"]["paths"]["shared"]["source"] == "/dev/vda[bold]"  # no escape, markup literal


def test_storage_dd_fallback_is_named_and_unmeasured_is_never_ok(tmp_path):
    res = run("storage", ["--log", str(JOBS / "storage-dd-fallback-node01-02.out")], {"storage_default_local_read_gbps": 0.0})
    assert [f.title for f in res.findings if f.rule == "storage-fio-missing"] == [
        "node01: fio not found: sequential figures from dd, random-read IOPS not measured",
        "node02: fio not found: sequential figures from dd, random-read IOPS not measured"]
    (tmp_path / "empty.out").write_text("0: @@preflight node=node01 check=storage tool=fio\n")
    res = run("storage", ["--log", str(tmp_path / "empty.out")])
    assert res.severity == Severity.UNKNOWN and "nothing measured" in res.summary


# ---------------------------------------------------------------- burnin


def test_burnin_flags_the_node_whose_recording_throttles_and_proposes_its_drain():
    res = run("burnin", ["--log", str(JOBS / "burnin-torch-cpu-node01-02-standin.out")])
    assert res.severity == Severity.CRIT and res.data["failing_nodes"] == ["node02"]
    (thr,) = [f for f in res.findings if f.rule == "burnin-throttled"]
    assert thr.title == ("node02 gpu0: throttled under load: hw_power_brake_slowdown (4 of 4 samples), "
                         "hw_slowdown (4 of 4 samples); SM 382 MHz")
    assert not [f for f in res.findings if f.title.startswith("node01") and f.severity != Severity.OK]
    (plan,) = res.data["proposed_drains"]
    assert plan["would_run"] == [["scontrol", "update", "NodeName=node02", "State=DRAIN",
                                  "Reason=preflight-burnin throttled: gpu0 hw_power_brake_slowdown+hw_slowdown "
                                  "sm=382MHz"]]


def _reading(i, **kw):
    return GpuReading(i, reasons=frozenset(kw.pop("reasons", ())), **kw)


def test_burnin_rules_on_values():
    cfg = merged({})
    before = Sample("before", 1, (_reading(0, ecc_uncorrectable=0, ecc_correctable=3),))
    load = [Sample("load", 2, (_reading(0, sm_mhz=1980, power_w=250, power_limit_w=400, default_limit_w=700,
                                        reasons={"sw_power_cap"}), _reading(1, sm_mhz=1000), _reading(2, sm_mhz=1970)))]
    after = Sample("after", 3, (_reading(0, ecc_uncorrectable=2, ecc_correctable=3),))
    xid = "NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus."
    nb = NodeBurnin("gpu07", "torch", [before, *load, after], xid_before=[], xid_after=[xid], load_rc=0,
                    load_lines=[{"device": f"cuda:{i}", "tflops": t, "final": True} for i, t in enumerate((700, 400, 690))],
                    finished=True)
    res, reasons = judge_burnin({"gpu07": nb}, cfg, job={"job_id": 5})
    rules = {(f.rule, f.severity.name) for f in res.findings}
    assert ("burnin-power-capped", "WARN") in rules  # SW power cap at 250 W of 400 W, and 400 W below 700 default
    assert ("burnin-slow-gpu", "WARN") in rules and ("burnin-slow-gpu", "CRIT") in rules  # gpu1 clock, cuda:1 TFLOPS
    assert ("burnin-xid", "CRIT") in rules and ("burnin-ecc", "CRIT") in rules
    assert reasons["gpu07"].startswith("preflight-burnin ") and reasons["gpu07"].endswith(" job=5")
    assert "xid: xid=79" in reasons["gpu07"] and "ecc: gpu0 ecc_uncorrectable+2" in reasons["gpu07"]
    assert len(reasons["gpu07"]) <= 200


def test_burnin_unreadable_inputs_are_unknown_not_ok():
    nb = NodeBurnin("gpu01", "torch", [], xid_before=None, xid_after=None, problems=["gpu01: dmesg failed before"])
    res, reasons = judge_burnin({"gpu01": nb}, merged({}))
    assert res.severity == Severity.UNKNOWN and not reasons
    assert any("no nvidia-smi sample while the load ran" in f.title for f in res.findings)


def test_burnin_dcgmi_logs():
    res = run("burnin", ["--log", f"gpu9={DATA / 'dcgmi' / 'go-dcgm-issue52-gpu0-memory-fail-r2-EXCERPT.txt'}",
                         "--log", str(DATA / "dcgmi" / "gnosia93-slurm-2xrtxpro6000-r3-dcgm3.3.9-skips.txt")])
    titles = {f.title for f in res.findings}
    assert "gpu9: dcgmi Hardware GPU Memory failed (GPU 0)" in titles
    assert ("gnosia93-slurm-2xrtxpro6000-r3-dcgm3.3.9-skips: dcgmi skipped every stress test: the GPUs were not "
            "put under load") in titles
    # NODE= names a Slurm node: its drain is proposed; a file name is not a node: no drain.
    assert [p["targets"] for p in res.data["proposed_drains"]] == [["gpu9"]]


# ---------------------------------------------------------------- fabric


def test_fabric_mixed_recorded_trees_against_64_gpus():
    res = run("fabric", ["--log", f"node01={DATA / 'ib-sysfs' / 'gpud-h100-8xndr'}",
                         "--log", f"node02={DATA / 'ib-sysfs' / 'gpud-h100-8xndr'}",
                         "--log", f"node03={DATA / 'ib-sysfs' / 'procfs-fixture-hfi1-mlx4-mlx5'}", "--gpus", "64"])
    assert res.severity == Severity.CRIT
    by = {(f.rule, f.title.split(":")[0]): f for f in res.findings}
    assert by[("fabric-table", "node01")].severity == Severity.WARN  # 400 meets the minimum, not the 800 recommended
    assert "8 link(s) at >= 400 Gb/s" in by[("fabric-table", "node01")].title
    assert by[("fabric-table", "node03")].title == "node03: slowest link 100 Gb/s, below the 400 Gb/s minimum for 64 GPUs"
    assert by[("fabric-slow-node", "node03")].severity == Severity.CRIT
    assert by[("fabric-mixed-rates", "log")].title == "log: mixed link rates: 400 Gb/s (node01, node02); 100 Gb/s (node03)"
    assert res.data["groups"]["log"]["need_gbps"] == [400.0, 800.0]


def test_fabric_table_bands_and_roce_rails():
    h100 = f"n1={DATA / 'ibstat' / 'gpud-ibstat.47.0.h100.all.active.0.txt'}"
    res = run("fabric", ["--log", h100, "--gpus", "16"])
    (f,) = [f for f in res.findings if f.rule == "fabric-table"]
    # RoCE only: the 8 x 400 MT4129 rails count, the 100G frontend MT4125 ports do not
    assert f.severity == Severity.OK and f.title == "n1: 8 link(s) at >= 400 Gb/s (RoCE, not InfiniBand)"
    res = run("fabric", ["--log", h100, "--gpus", "4"])
    assert [f.title for f in res.findings] == ["log: 4 GPUs: the table asks for no inter-node fabric"]
    res = run("fabric", ["--log", h100])
    assert res.severity == Severity.UNKNOWN and "GPU count unknown" in res.findings[0].title
    with pytest.raises(UsageError, match=r"bad fabric_table row \[8, 400\]"):
        run("fabric", ["--log", h100], {"fabric_table": [[8, 400]]})


def test_fabric_ports_down():
    res = run("fabric", ["--log", f"n1={DATA / 'ibstat' / 'gpud-ibstat.47.0.h100.some.down.0.txt'}", "--gpus", "64"])
    # the three Down ports are Ethernet (unused frontend): not findings; the 8 NDR rails are judged
    assert not [f for f in res.findings if f.rule == "fabric-port-down"]
    assert res.data["nodes"]["n1"]["rate_gbps"] == 400.0 and res.data["nodes"]["n1"]["rails"] == 8


# ---------------------------------------------------------------- through `cockpit check`


def test_cli_json_prometheus_and_exit_codes(tmp_path):
    log = str(JOBS / "burnin-torch-cpu-node01-02-standin.out")
    proc = cockpit(tmp_path, "check", "burnin", "--log", log, "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 and doc["status"] == "CRIT" and doc["data"]["failing_nodes"] == ["node02"]
    prom = cockpit(tmp_path, "check", "burnin", "--log", log, "--prometheus")
    assert prom.returncode == 2
    assert 'cockpit_preflight_burnin_gpu_throttled{node="node02",gpu="0"} 1' in prom.stdout
    assert 'cockpit_preflight_burnin_gpu_throttled{node="node01",gpu="0"} 0' in prom.stdout
    assert 'cockpit_preflight_check_status{check="burnin"} 2' in prom.stdout
    st = cockpit(tmp_path, "check", "storage", "--log", str(JOBS / "storage-fio-node02-03-node03-blkio-throttled.out"),
                 "--prometheus")
    assert 'cockpit_preflight_storage_slow_node{node="node03"} 1' in st.stdout
    assert 'cockpit_preflight_storage_bytes_per_second{node="node03",path="local",test="seqread"} 5.2' in st.stdout


@pytest.mark.parametrize("args,message", [
    (["check", "storage", "--log", "/nonexistent/x.out"], "cannot read --log '/nonexistent/x.out'"),
    (["check", "storage", "--log", str(DATA / "dd" / "findstring-29666650069-dd-write-1GiB.txt")], "no JSON document"),
    (["check", "storage", "--log", str(JOBS / "storage-dd-fallback-node01-02.out"), "--params", "70X"],
     "bad --params '70X'"),
    (["check", "burnin", "--log", str(DATA / "fio" / "fioplot-floppy-seqread-4k-fio3.1.json")],
     "not nvidia-smi -q output"),
    (["check", "fabric", "--log", f"n={DATA / 'ibstat' / 'gpud-ibstat.39.0.a100.failed.ibpanic.exit-255.0.txt'}"],
     "ibpanic:"),
    (["check", "storage", "--nodes", "node[01-02]", "--local", "relative/path"], "bad --local 'relative/path'"),
    (["check", "storage", "--nodes", "node[01-02]", "--shared", "/a:b"], "fio cannot take a path with ':'"),
    (["check", "fabric", "--nodes", "dgx001", "--ib-root", "/sys/$(reboot)"], "bad --ib-root '/sys/$(reboot)'"),
])
def test_cli_bad_input_is_one_line_exit_3(tmp_path, args, message):
    proc = cockpit(tmp_path, *args)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("cockpit: ") and "warning" not in ln]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in proc.stderr


def test_drain_goes_through_the_gate(tmp_path):
    log = str(JOBS / "burnin-torch-cpu-node01-02-standin.out")
    proc = cockpit(tmp_path, "check", "burnin", "--log", log, "--drain")
    assert proc.returncode == 2 and "scontrol update NodeName=node02 State=DRAIN" in proc.stdout
    assert "add --yes" in proc.stderr
    ro = cockpit(tmp_path, "--read-only", "check", "burnin", "--log", log, "--drain", "--yes", "--json")
    doc = json.loads(ro.stdout)
    assert ro.returncode == 2 and doc["data"]["drains"] == []
    assert any(f["rule"] == "burnin-drain" and "read-only mode" in f["title"] for f in doc["findings"])
    (rec,) = read_audit(tmp_path / "state" / "cockpit" / "demo-audit.jsonl")  # the demo's own file
    assert (rec["action"], rec["result"], rec["targets"]) == ("drain", "refused", ["node02"])
    assert not (tmp_path / "state" / "cockpit" / "audit.jsonl").exists()  # never the site's


def test_read_only_refuses_a_launch_and_audits_it(tmp_path):
    audit = AuditLog(tmp_path / "audit.jsonl")
    from cockpit.backends.demo import DemoBackend
    from cockpit.plugins.api import ReadOnlyError

    with pytest.raises(ReadOnlyError, match="read-only mode: refusing to submit dgx\\[001-002\\]"):
        run("storage", ["--nodes", "dgx[001-002]", "--local", "/scratch"], backend=DemoBackend(), read_only=True,
            audit=audit)
    (rec,) = read_audit(tmp_path / "audit.jsonl")
    assert (rec["action"], rec["result"]) == ("submit", "refused")
