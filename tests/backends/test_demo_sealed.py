"""The demo is sealed: ``cockpit --demo`` never runs a program on this machine.

Every headless command runs as a subprocess with recording trap scripts first
on PATH for Slurm's commands, ssh and the node tools (each appends its argv to
a calls file and exits 1), HOME and the XDG folders in a temporary directory,
and the calls file must stay absent. The outcomes are checked too: the NCCL
pair run names the simulated slow node, the hung-job runbook names the stalled
output and the straggler rank with its stack, gpu-xid finds Xid 79 and reboots
that node; the pre-flight checks name the slow RAID0 node, flag and drain the
thermally throttled one and put the slow-NCCL node's links below the others.
Below those, the simulated nodes' answers are read by cockpit's own parsers, and
the probe runner serves everything that reads nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRAPPED = ("sbatch", "scancel", "scontrol", "squeue", "sinfo", "srun", "salloc", "ssh", "scp", "sacct",
           "sacctmgr", "sprio", "sshare", "sstat", "nvidia-smi", "dmesg", "journalctl", "py-spy", "ps",
           "stat", "tail", "cat", "mkdir", "hostname", "ibstat", "sh", "bash", "find", "grep", "fio", "dd",
           "findmnt", "dcgmi")
# the demo's jobs end at the second look: no need to wait 2 s
CONFIG = "[plugins.nccl]\npoll_interval = 0.2\n[plugins.preflight]\npoll_interval = 0.2\n"


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """(run, calls file, home): ``run(*args)`` is ``cockpit --demo ARGS`` in the sealed environment."""
    root = tmp_path_factory.mktemp("sealed")
    traps, calls, home = root / "bin", root / "calls", root / "home"
    traps.mkdir()
    home.mkdir()
    for name in TRAPPED:
        trap = traps / name
        trap.write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\nexit 1\n')
        trap.chmod(0o755)
    (root / "config" / "cockpit").mkdir(parents=True)
    (root / "config" / "cockpit" / "config.toml").write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCKPIT_", "SLURM_"))}
    env.update(PATH=f"{traps}{os.pathsep}{env.get('PATH', '')}", HOME=str(home),
               XDG_STATE_HOME=str(root / "state"), XDG_CONFIG_HOME=str(root / "config"),
               XDG_DATA_HOME=str(root / "data"), XDG_CACHE_HOME=str(root / "cache"))
    assert all(shutil.which(n, path=env["PATH"]) == str(traps / n) for n in TRAPPED)  # the traps come first

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cockpit.cli", "--demo", *args], capture_output=True,
                              text=True, env=env, timeout=timeout, cwd=root)

    return run, calls, home


@pytest.fixture(scope="module")
def ids(sealed):
    """Job ids of the scenario (the same in every process: built from the seed)."""
    run, _, _ = sealed
    proc = run("snapshot", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)["jobs"]
    by_name: dict[str, dict] = {}
    for j in jobs:  # the scenario's own job of each name comes first
        by_name.setdefault(j["name"], j)
    return {"hung": str(by_name["llama-70b-pretrain"]["job_id"]), "vit": str(by_name["vit-h14-pretrain"]["job_id"]),
            "pending": str(by_name["llama-405b-sft"]["job_id"])}


def no_calls(calls: Path) -> None:
    assert not calls.exists(), "the demo ran programs on this machine:\n" + calls.read_text()


def outcome(proc: subprocess.CompletedProcess, codes: tuple[int, ...]) -> None:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.returncode in codes, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


# (arguments after --demo, allowed exit codes); {hung} {vit} {pending} are the scenario's jobs.
COMMANDS = [
    (("snapshot", "--format", "json"), (0,)),
    (("snapshot", "--format", "table", "--partition", "debug"), (0,)),
    (("doctor",), (0,)),
    (("doctor", "--json"), (0,)),
    (("check",), (0,)),
    (("check", "layout", "--job", "{hung}", "--tp", "8", "--pp", "4", "--json"), (0, 1, 2)),
    (("check", "layout", "--nodes", "dgx[001-004]", "--tp", "8", "--pp", "2", "--json"), (0, 1, 2)),
    (("check", "nccl", "--nodes", "dgx[049-050]", "--mode", "all", "--json"), (2,)),  # a plan, not confirmed
    (("check", "nccl", "--nodes", "dgx049", "--mode", "node", "--engine", "torch", "--yes", "--json"), (0, 1, 2, 3)),
    (("runbook", "list"), (0,)),
    (("runbook", "run", "hung-job", "--job", "{hung}", "--dry-run", "--json"), (2,)),
    (("runbook", "run", "hung-job", "--job", "{hung}", "--yes", "--json"), (2,)),
    (("job", "tail", "{hung}", "-n", "5"), (0,)),
    (("job", "procs", "{hung}", "--json"), (0,)),
    (("job", "cancel", "{vit}", "--yes"), (0,)),
    (("job", "signal", "{vit}", "-s", "USR1", "--yes"), (0,)),
    (("job", "hold", "{pending}", "--yes"), (0,)),
    (("job", "release", "{pending}", "--yes"), (0,)),
    (("job", "timelimit", "{pending}", "-t", "2:00:00", "--yes"), (0,)),
    (("job", "requeue", "{vit}", "--yes"), (0,)),
    (("node", "drain", "dgx050", "--reason", "x", "--yes"), (0,)),
    (("node", "reboot", "dgx050", "--reason", "x", "--yes"), (0,)),
    (("node", "resume", "dgx013", "--yes"), (0,)),
    (("node", "reasons",), (0,)),
    (("gpus", "--nodes", "dgx[001,049]", "--json"), (0,)),
    (("gpus", "--nodes", "dgx013"), (1,)),  # a GPU fell off the bus: nvidia-smi fails there
    (("exec", "dgx[001-004]", "--", "hostname"), (0,)),
    (("exec", "dgx001", "--", "uname", "-a"), (1,)),  # not simulated: a failure, never a real program
    (("exec", "dgx001", "--srun", "--", "hostname"), (2,)),
    (("record", "{tmp}/rec"), (2,)),  # nothing raw to record
    (("check", "storage", "--nodes", "dgx[001-004]", "--json"), (2,)),  # a plan, not confirmed
    (("check", "burnin", "--nodes", "dgx[001-004]", "--json"), (2,)),  # a plan, not confirmed
    (("check", "storage", "--nodes", "dgx[005-006]", "--local", "/var/tmp", "--shared", "/home/x", "--yes"), (2,)),
    (("check", "burnin", "--nodes", "dgx049", "--duration", "30", "--yes", "--json"), (0,)),
    (("check", "fabric", "--nodes", "dgx[050-051]", "--gpus", "16", "--ib-root", "/nonexistent", "--json"), (2,)),
    (("check", "fabric", "--partition", "interactive", "--json"), (1,)),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "codes"), COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_every_headless_command_stays_in_the_simulation(sealed, ids, tmp_path, args, codes):
    run, calls, home = sealed
    proc = run(*(a.format(tmp=tmp_path, **ids) for a in args))
    outcome(proc, codes)
    no_calls(calls)
    assert not (home / "cockpit-nccl").exists()  # the submission's mkdir is simulated too
    assert not (home / "cockpit-preflight").exists()


@pytest.mark.slow
def test_nccl_pair_mode_names_the_simulated_slow_node(sealed):
    run, calls, _ = sealed
    argv = ("check", "nccl", "--nodes", "dgx[049-052]", "--mode", "pair", "--json")
    plan = run(*argv)
    outcome(plan, (2,))
    doc = json.loads(plan.stdout)
    assert doc["status"] == "NOT_CONFIRMED" and "sbatch" in json.dumps(doc["plan"])
    proc = run(*argv, "--yes")
    outcome(proc, (0, 1, 2))
    doc = json.loads(proc.stdout)
    assert doc["data"]["suspect"]["nodes"] == ["dgx051"] and not doc["data"]["suspect"]["ambiguous"]
    assert doc["status"] == "CRIT" and all(r["job_state"] == "COMPLETED" for r in doc["data"]["runs"])
    slow = [r for r in doc["data"]["runs"] if "051" in r["nodes"]]
    fast = [r for r in doc["data"]["runs"] if "051" not in r["nodes"]]
    assert slow and fast and max(r["busbw_gbps"] for r in slow) < 0.4 * min(r["busbw_gbps"] for r in fast)
    no_calls(calls)


@pytest.mark.slow
def test_preflight_storage_plans_then_names_the_simulated_slow_raid0_node(sealed):
    run, calls, home = sealed
    argv = ("check", "storage", "--nodes", "dgx[001-004]", "--json")
    plan = run(*argv)
    outcome(plan, (2,))
    doc = json.loads(plan.stdout)
    assert doc["status"] == "NOT_CONFIRMED" and "cockpit-storage" in doc["plan"]["scripts"][0]
    proc = run(*argv, "--yes")
    outcome(proc, (2,))
    doc = json.loads(proc.stdout)
    assert doc["status"] == "CRIT" and doc["data"]["slow_nodes"] == ["dgx003"]
    assert doc["data"]["job_state"] == "COMPLETED"
    local = {n: v["paths"]["local"] for n, v in doc["data"]["nodes"].items()}
    assert set(local) == {"dgx001", "dgx002", "dgx003", "dgx004"}
    assert all((p["fstype"], p["source"], p["raid_level"]) == ("xfs", "/dev/md0", "raid0") for p in local.values())
    assert local["dgx003"]["seqread_bytes_per_s"] < 0.4 * local["dgx001"]["seqread_bytes_per_s"]
    shared = run(*argv, "--shared", "/lustre/ckpt", "--params", "70B", "--yes")
    outcome(shared, (2,))
    doc = json.loads(shared.stdout)
    assert {v["paths"]["shared"]["fstype"] for v in doc["data"]["nodes"].values()} == {"lustre"}
    assert doc["data"]["slow_nodes"] == ["dgx003"] and doc["data"]["checkpoint"]["shared_seconds"] > 0
    no_calls(calls)
    assert not (home / "cockpit-preflight").exists()


@pytest.mark.slow
def test_preflight_burnin_flags_and_drains_the_simulated_throttled_node(sealed):
    run, calls, _ = sealed
    proc = run("check", "burnin", "--nodes", "dgx[001-004]", "--yes", "--json")
    outcome(proc, (2,))
    doc = json.loads(proc.stdout)
    assert doc["data"]["failing_nodes"] == ["dgx002"]
    assert any(f["rule"] == "burnin-throttled" and f["title"].startswith("dgx002 gpu5") for f in doc["findings"])
    (plan,) = doc["data"]["proposed_drains"]
    assert plan["targets"] == ["dgx002"] and plan["params"]["reason"].startswith("preflight-burnin throttled:")
    assert "drains" not in doc["data"]  # proposed, not done
    proc = run("check", "burnin", "--nodes", "dgx[001-004]", "--drain", "--yes", "--json")
    outcome(proc, (2,))
    (done,) = json.loads(proc.stdout)["data"]["drains"]
    assert done["ok"] and done["results"][0]["argv"][2] == "NodeName=dgx002"
    no_calls(calls)


@pytest.mark.slow
def test_preflight_fabric_reads_the_simulated_trees_and_gives_the_guides_verdict(sealed):
    run, calls, _ = sealed
    proc = run("check", "fabric", "--partition", "debug", "--json")
    outcome(proc, (2,))
    doc = json.loads(proc.stdout)
    assert doc["status"] == "CRIT" and doc["data"]["probes"] == "demo (simulated nodes)"
    assert doc["summary"].startswith("debug: 128 GPUs on 16 nodes, needs >= 400 Gb/s (800 recommended)")
    assert doc["summary"].endswith("below the others: dgx051")
    slow = [f["title"] for f in doc["findings"] if f["rule"] == "fabric-slow-node"]
    assert slow == ["dgx051: links at 100 Gb/s, below the others (400 Gb/s)"]
    assert doc["data"]["groups"]["debug"]["need_gbps"] == [400.0, 800.0]
    assert {n["source"] for n in doc["data"]["nodes"].values()} == {"sysfs"}
    no_calls(calls)


def _findings(report: dict, step: str) -> list[dict]:
    return next(s for s in report["steps"] if s["id"] == step)["findings"]


@pytest.mark.slow
def test_hung_job_runbook_names_the_stalled_output_and_the_straggler(sealed, ids):
    run, calls, _ = sealed
    proc = run("runbook", "run", "hung-job", "--job", ids["hung"], "--json")
    outcome(proc, (2,))
    doc = json.loads(proc.stdout)
    stalled = next(f for f in _findings(doc, "progress") if f["rule"] == "progress.stalled")
    assert any(f"llama-70b-pretrain-{ids['hung']}.out" in e for e in stalled["evidence"])
    odd = next(f for f in _findings(doc, "stacks") if f["rule"] == "stacks.straggler")
    assert "rank 43" in odd["title"] and "dgx006" in odd["title"]
    assert any("indexed_dataset.py" in e and "<-" in e for e in odd["evidence"])  # its stack, not the collective
    behind = next(f for f in _findings(doc, "watchdog") if f["rule"] == "straggler.logs")
    assert "43" in behind["title"]
    assert doc["facts"]["straggler_node"] == "dgx006"
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["drain-straggler"]["status"] == "proposed"
    assert steps["requeue"]["argv"][1] == ["scontrol", "update", f"JobId={ids['hung']}", "ExcNodeList=dgx006"]
    no_calls(calls)


@pytest.mark.slow
def test_gpu_xid_runbook_finds_xid79_and_reboots_that_node(sealed):
    run, calls, _ = sealed
    proc = run("runbook", "run", "gpu-xid", "--node", "dgx013", "--json", "--yes")
    outcome(proc, (2,))
    doc = json.loads(proc.stdout)
    xid = [f for f in _findings(doc, "xid") if f["severity"] == "CRIT"]
    assert xid and "Xid 79" in xid[0]["title"] and "0000:61:00" in xid[0]["title"]
    acted = [s for s in doc["steps"] if s["status"] == "done"]
    assert acted and acted[0]["id"] in ("reboot", "drain")
    assert acted[0]["argv"][0][-1] == "dgx013" or "NodeName=dgx013" in acted[0]["argv"][0]
    assert all(r["ok"] for r in acted[0]["results"])
    no_calls(calls)


# -- the simulated nodes' answers, read by cockpit's own parsers -----------------------

T0 = 1_760_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def demo():
    from cockpit.backends.demo import DemoBackend

    clock = Clock()
    backend = DemoBackend(clock=clock)
    return backend, backend.probe_runner(None), clock


async def test_gpu_telemetry_follows_the_scenario(demo):
    from cockpit.telemetry.nvsmi import parse_query_gpu, query_argv

    b, probes, clock = demo
    snap = await b.snapshot()
    hung = snap.job(b.hung_job_id)
    for gpu in parse_query_gpu(probes.answer(hung.nodes[0], query_argv()).text()):
        assert gpu.util_gpu == 0 and gpu.mem_used_mib > 60_000 and not gpu.clock_events
    busy = next(j for j in snap.jobs if j.state == "RUNNING" and j.gpus and j.job_id != b.hung_job_id)
    node, idx = busy.gpus[0].node, busy.gpus[0].indexes[0]
    reading = {g.index: g for g in parse_query_gpu(probes.answer(node, query_argv()).text())}
    assert reading[idx].util_gpu >= 85 and reading[idx].power_w > 500
    free = next(n for n in snap.nodes if n.state == "idle")
    assert all(g.clock_events == ("gpu_idle",) and g.util_gpu == 0
               for g in parse_query_gpu(probes.answer(free.name, query_argv()).text()))
    lost = probes.answer(b.xid_node, query_argv())
    assert lost.returncode == 15 and "GPU is lost" in lost.err_text()
    assert sorted(g.index for g in parse_query_gpu(lost.text())) == [i for i in range(8) if i != b.xid_gpu]
    await b.reboot_node(b.xid_node, "Xid 79")
    clock.now += 181
    await b.snapshot()
    assert probes.answer(b.xid_node, query_argv()).returncode == 0  # a power cycle brought it back
    assert "Xid" not in probes.answer(b.xid_node, ["dmesg", "-T"]).text()


async def test_job_processes_and_gpus_through_the_probe_runner(demo):
    from cockpit.core.jobprocs import job_processes, parse_listpids

    b, probes, _ = demo
    hung = await b.fetch_job(b.hung_job_id)
    procs, errors = await job_processes(probes, hung.job_id, hung.nodes)
    assert not errors and set(procs) == set(hung.nodes)
    for node, plist in procs.items():
        tasks = [p for p in plist if p.step == "0"]
        assert [p.gpu_index for p in tasks] == list(hung.gpus[hung.nodes.index(node)].indexes)
        stuck = [p for p in tasks if p.state.startswith("D")]
        assert len(stuck) == (1 if node == b.straggler_node else 0)
    text = probes.answer(hung.nodes[0], ["env", f"SLURMD_NODENAME={hung.nodes[0]}", "scontrol", "listpids",
                                         str(hung.job_id)]).text()
    assert {step for _, step in parse_listpids(text)} == {"batch", "extern", "0"}
    assert probes.answer("dgx064", ["scontrol", "listpids", str(hung.job_id)]).returncode == 1


async def test_pyspy_stacks_and_environ_name_the_straggler(demo):
    from cockpit.core.jobprocs import job_processes
    from cockpit_runbooks import pyspy

    b, probes, _ = demo
    hung = await b.fetch_job(b.hung_job_id)
    procs, _ = await job_processes(probes, hung.job_id, hung.nodes)
    stacks = {}
    for node, plist in procs.items():
        for p in (p for p in plist if p.step == "0"):
            env = dict(kv.split("=", 1) for kv in probes.answer(node, ["cat", f"/proc/{p.pid}/environ"]).text().split("\0") if kv)
            dump = pyspy.parse_dump(probes.answer(node, ["py-spy", "dump", "--pid", str(p.pid)]).text())
            assert dump.pid == p.pid and env["SLURM_JOB_ID"] == str(hung.job_id)
            stacks[f"rank {env['RANK']}"] = dump.main
    assert len(stacks) == 64
    odd = pyspy.find_odd(stacks)
    assert odd is not None and odd.labels == (f"rank {b.straggler_rank}",)
    assert pyspy.in_collective(stacks["rank 0"]) and not pyspy.in_collective(stacks[odd.labels[0]])
    assert probes.answer(hung.nodes[0], ["py-spy", "dump", "--pid", "1"]).returncode == 1


async def test_hung_job_log_stops_at_hung_since_with_the_watchdog(demo):
    from cockpit.remote.filetail import RemoteFile
    from cockpit_runbooks import watchdog

    b, probes, _ = demo
    hung = await b.fetch_job(b.hung_job_id)
    assert probes.answer("", ["stat", "-c", "%Y", "--", hung.stdout]).text().strip() == str(b.hung_since)
    text = probes.answer(hung.nodes[0], ["tail", "-c", str(4 << 20), "--", hung.stdout]).text()
    assert "SIMULATED" in text.splitlines()[0]
    verdict = watchdog.compare(watchdog.parse(text))
    assert verdict.behind == (b.straggler_rank,)
    remote = RemoteFile(probes, hung.nodes[0], hung.stdout)
    data, cut = await remote.last_bytes(2048)
    assert cut and b"FlightRecorder is disabled" in data and await remote.poll() == b""
    script = probes.answer("", ["scontrol", "write", "batch_script", str(hung.job_id), "-"]).text()
    assert "NCCL_TIMEOUT=1800" in script and "SIMULATED" in script
    missing = probes.answer("", ["tail", "-c", "1", "--", "/nonexistent"])
    assert missing.returncode == 1 and "No such file" in missing.err_text()


@pytest.mark.parametrize("argv", [["dmesg", "-T"], ["dmesg"], ["dmesg", "--time-format=iso"],
                                  ["journalctl", "-k", "--no-pager"]])
def test_xid_node_kernel_log_has_xid79_in_each_format(demo, argv):
    from cockpit_runbooks import xid

    b, probes, _ = demo
    out = probes.answer(b.xid_node, argv)
    assert out.returncode == 0 and "SIMULATED" in out.text().splitlines()[0]
    verdicts = xid.by_gpu(xid.parse_log(out.text()))
    assert [(v.pci, v.xids, v.action) for v in verdicts] == [("0000:61:00", (79,), "RESTART_BM")]
    assert xid.by_gpu(xid.parse_log(probes.answer("dgx001", argv).text())) == []


async def test_nccl_jobs_print_parsable_tables_at_the_slowest_nodes_busbw(demo):
    from cockpit_nccl import sbatch
    from cockpit_nccl.judge import Thresholds, judge
    from cockpit_nccl.parser import parse

    b, probes, _ = demo

    async def run(nodes: tuple[str, ...], torch: bool = False):
        job = sbatch.JobSpec(sbatch.Placement(nodes), "/home/op/nccl/out-%j.out", "cockpit-nccl-test")
        script = sbatch.torch_script(job, sbatch.TorchSpec()) if torch else sbatch.nccl_tests_script(job, sbatch.NcclTestsSpec())
        job_id = await b.submit_batch(script)
        assert [await b.job_state(job_id) for _ in range(2)] == [("RUNNING", ""), ("COMPLETED", "")]
        out = await probes.on_slurm_host(["cat", "--", f"/home/op/nccl/out-{job_id}.out"])
        assert out.ok and out.text.startswith("# SIMULATED")
        return parse(out.text)

    fast, slow = await run(("dgx049", "dgx050")), await run(("dgx050", b.slow_nccl_node))
    assert fast.hosts == ("dgx049", "dgx050") and fast.nranks == 16 and not fast.launch_problems
    th = Thresholds(0.9, 0.8, 3, 256 << 20)
    bw_fast, bw_slow = judge(fast, None, th, None).busbw, judge(slow, None, th, None).busbw
    assert 350 < bw_fast < 420 and 0.25 < bw_slow / bw_fast < 0.35
    assert (await run(("dgx049",), torch=True)).engine == "torch"


async def test_submissions_speak_sbatchs_words(demo):
    from cockpit.errors import CommandFailed

    b, _, _ = demo
    with pytest.raises(CommandFailed, match="Invalid node name specified"):
        await b.submit_batch("#!/bin/bash\n#SBATCH --nodelist=nope[1-2]\nsrun true\n")
    with pytest.raises(CommandFailed, match="Invalid partition name"):
        await b.submit_batch("#!/bin/bash\n#SBATCH -p gpu\nsrun true\n")
    job_id = await b.submit_batch(f"#!/bin/bash\n#SBATCH -w {b.down_node}\nsrun true\n")
    assert (await b.job_state(job_id))[0] == "PENDING" and "ReqNodeNotAvail" in (await b.job_state(job_id))[1]
    assert await b.job_state(99_999_999) == ("GONE", "")


def test_ib_dump_shows_the_slow_nodes_degraded_rail(demo):
    from cockpit_runbooks import ib

    b, probes, clock = demo
    before = ib.parse_dump(probes.answer(b.slow_nccl_node, list(ib.DUMP_ARGV)).text())
    clock.now += 5
    after = ib.parse_dump(probes.answer(b.slow_nccl_node, list(ib.DUMP_ARGV)).text())
    assert len(after) == 8 and {p.rate_gbps for p in after} == {400.0, 100.0}
    assert {p.kind for p in ib.check_ports(after, 400.0, before)} == {"rate", "counter"}
    healthy = ib.parse_dump(probes.answer("dgx001", list(ib.DUMP_ARGV)).text())
    assert ib.check_ports(healthy, 400.0, healthy) == []


async def test_unknown_commands_and_unreachable_nodes_never_run_anything(demo):
    from cockpit.errors import UsageError

    b, probes, _ = demo
    out = probes.answer("dgx001", ["uname", "-a"])
    assert out.returncode == 127 and out.err_text() == "demo: uname: not simulated\n"
    with pytest.raises(UsageError, match="read-only commands only"):
        await probes.run("dgx001", ["scancel", "1"])
    got = await probes.on_nodes([b.down_node, "nope"], ["hostname"])
    assert "No route to host" in got[b.down_node].error and "no such node" in got["nope"].error


async def test_the_probe_runner_serves_everything_that_reads_nodes(demo):
    """What the TUI needs from backend.probe_runner(None): telemetry, fan-out, tails."""
    from cockpit.core.joblog import open_job_output
    from cockpit.remote.fanout import fanout
    from cockpit.remote.settings import SshSettings
    from cockpit.telemetry.collect import TelemetryCollector

    b, probes, _ = demo
    collector = TelemetryCollector(SshSettings(), pool=probes)
    readings = await collector.telemetry_for(["dgx001", b.xid_node, b.down_node])
    assert len([k for k in readings if k[0] == "dgx001"]) == 8 and set(collector.errors) == {b.xid_node, b.down_node}
    res = await fanout(probes, ["dgx001", "dgx002"], ["hostname"])
    assert [r.stdout for r in res.values()] == [b"dgx001\n", b"dgx002\n"]
    out = open_job_output(await b.fetch_job(b.hung_job_id), where="node", pool=probes)
    assert "FlightRecorder is disabled" in (await out.tail(1))[0]
    await out.close()
    await collector.close()
