"""The demo's ``scontrol show job|node|config`` and its slurmctld/slurmd logs: Slurm's
layouts (the real 24.11 recordings in tests/data/slurm-24.11, the real log lines in
tests/data/slurm_logs), read by cockpit's own parsers, and in agreement with the
simulated state the rest of the demo shows. All through the demo's probe runner:
nothing runs a program."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from cockpit.backends._demo.probes import DemoProbes
from cockpit.backends._demo.state import MIN_JOB_AGE, node_model
from cockpit.backends.accounting import accounting_why, parse_show_config
from cockpit.backends.demo import SLURM_VERSION, DemoBackend
from cockpit.backends.slurm_json_nodes import node_gres
from cockpit.backends.slurm_text import parse_scontrol_kv
from cockpit.hostlist import collapse
from test_demo_sealed import Clock  # the sealed tests' settable clock

DATA = Path(__file__).resolve().parents[1] / "data"
LOGS = DATA / "slurm_logs"
T0 = 1_750_000_000.0
CTLD = "/var/log/slurm/slurmctld.log"


@pytest.fixture
def demo():
    clock = Clock()
    clock.now = T0
    backend = DemoBackend(seed=7, clock=clock)
    return backend, DemoProbes(backend), clock


def ask(probes, node: str, *argv: str) -> tuple[int, str, str]:
    r = probes.answer(node, list(argv))
    return r.returncode, r.text(), r.err_text()


def key_order_follows(ours: list[str], real: list[str]) -> None:
    """The keys both records have come in the same order in ours as in Slurm's."""
    common = [k for k in ours if k in real]
    assert common == sorted(common, key=real.index), (common, real)
    assert len(common) >= 0.8 * len(ours), set(ours) - set(real)


# -- scontrol show job ---------------------------------------------------------------
async def test_show_job_is_slurms_layout_and_says_what_the_scheduler_view_says(demo):
    backend, probes, _ = demo
    real = parse_scontrol_kv((DATA / "slurm-24.11" / "scontrol-d-show-job.txt").read_text())
    real_keys = list(next(r for r in real if r["JobId"] == "3"))  # a running two-node batch job
    sched = await backend.capabilities().scheduling.scheduling()
    for job in list(backend._sim.jobs.values())[:40]:
        rc, text, _ = ask(probes, "", "scontrol", "show", "job", str(job.job_id))
        assert rc == 0 and text.startswith("JobId=") and f"JobId={job.job_id} " in text and text.endswith("\n   \n\n")
        assert all(ln.startswith(("   ", "JobId=")) for ln in text.splitlines() if ln)
        rec = next(r for r in parse_scontrol_kv(text) if r["JobId"] == str(job.job_id))
        key_order_follows([k for k in rec if k not in ("ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId",
                                                       "HetJobOffset", "MinMemoryNode")], real_keys)
        # the fields the why-pending view reads are the same in both
        detail = await sched.job_detail(str(job.job_id))
        assert {k: rec.get(k, "") for k in detail} == detail  # an empty one is not printed
        assert rec["NodeList"] == (collapse(job.nodes) if job.nodes else "")
        assert rec["UserId"] == f"{job.user}(1000)" and rec["JobState"] == job.state


async def test_show_job_of_the_hung_job_names_its_nodes_times_and_output(demo):
    backend, probes, _ = demo
    snap = await backend.snapshot()
    job = snap.job(backend.hung_job_id)
    rc, text, _ = ask(probes, "", "scontrol", "show", "job", str(job.job_id))
    rec = parse_scontrol_kv(text)[0]
    assert rc == 0 and rec["JobName"] == job.name and rec["NodeList"] == collapse(job.nodes)
    assert rec["BatchHost"] == job.nodes[0] and rec["StdOut"] == job.stdout
    assert rec["StartTime"] == time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(job.start_time))
    assert rec["EndTime"] == time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(job.end_time))
    assert rec["TimeLimit"] == "7-00:00:00" and rec["NumNodes"] == str(len(job.nodes))
    assert f"gres/gpu={job.gpus_per_node * len(job.nodes)}" in rec["AllocTRES"]


def test_show_job_of_an_array_and_a_het_job_lists_every_part(demo):
    backend, probes, _ = demo
    sim = backend._sim
    _, text, _ = ask(probes, "", "scontrol", "show", "job", str(backend.array_job_id))
    recs = parse_scontrol_kv(text)
    tasks = [j for j in sim.jobs.values() if j.array_job_id == backend.array_job_id]
    assert len(recs) == len(tasks) and {r["ArrayJobId"] for r in recs} == {str(backend.array_job_id)}
    assert recs[-1]["JobState"] == "PENDING" and recs[-1]["ArrayTaskThrottle"] == "4"
    one = next(j for j in tasks if j.array_task_id == 2)
    _, text, _ = ask(probes, "", "scontrol", "show", "job", f"{backend.array_job_id}_2")
    assert [r["JobId"] for r in parse_scontrol_kv(text)] == [str(one.job_id)]
    _, text, _ = ask(probes, "", "scontrol", "show", "job", str(backend.het_job_id))
    assert [r["HetJobOffset"] for r in parse_scontrol_kv(text)] == ["0", "1"]


def test_unknown_job_and_node_get_slurms_words(demo):
    _, probes, _ = demo
    assert ask(probes, "", "scontrol", "show", "job", "999999") == (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    assert ask(probes, "", "scontrol", "show", "job", "abc")[0] == 1
    assert ask(probes, "", "scontrol", "show", "node", "dgx999") == (1, "", "Node dgx999 not found\n")
    assert ask(probes, "", "scontrol", "show", "partition")[0] == 127  # not simulated, said so


# -- scontrol show node --------------------------------------------------------------
async def test_show_node_says_state_reason_and_gres_as_sinfo_does(demo):
    backend, probes, _ = demo
    snap = await backend.snapshot()
    real = parse_scontrol_kv((DATA / "slurm-24.11" / "scontrol-d-show-node.txt").read_text())
    real_keys = list(next(r for r in real if r["NodeName"] == "node04"))  # the drained one
    expected = {backend.xid_node: "IDLE+DRAIN", backend.down_node: "DOWN+NOT_RESPONDING",
                backend._sc.draining_node: "ALLOCATED+DRAIN"}
    for node in snap.nodes:
        rc, text, _ = ask(probes, "", "scontrol", "show", "node", node.name)
        rec = parse_scontrol_kv(text)[0]
        assert rc == 0 and rec["NodeName"] == node.name
        key_order_follows(list(rec), real_keys)
        state = rec["State"].split("+")
        assert state[0].lower() == node.state and ("DRAIN" in state) == ("drain" in node.flags)
        assert expected.get(node.name, rec["State"]) == rec["State"]
        used = node.gpus[0].alloc_indexes
        assert rec["GresUsed"].startswith(f"gpu:h100:{len(used)}(IDX:") and rec["CPUAlloc"] == str(node.alloc_cpus)
        # the Gres it prints reads back, through cockpit's reader, as the node the views show
        read = node_gres(rec["Gres"], rec["GresUsed"], "demo", rec["CfgTRES"])
        assert (read.gpus, read.mig, read.sharing) == (node.gpus, node.mig, node.sharing), node.name
        if node.reason:
            when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(node.reason_time))
            assert text.endswith(f"\n   \n   Reason={node.reason} [{node.reason_user}@{when}]\n\n")
        else:
            assert "Reason=" not in text and text.endswith("\n   CurrentWatts=0 AveWatts=0\n   \n\n")


# -- scontrol show config ------------------------------------------------------------
def test_show_config_names_the_logs_and_what_the_demo_claims(demo):
    _, probes, _ = demo
    rc, text, _ = ask(probes, "", "scontrol", "show", "config")
    conf = parse_show_config(text)
    assert rc == 0 and text.startswith("Configuration data as of 2025-06-15T15:06:40\n")
    assert text.rstrip().endswith("Slurmctld(primary) at slurm-login is UP")
    assert conf["SlurmctldLogFile"] == CTLD and conf["SlurmdLogFile"] == "/var/log/slurm/slurmd.%n.log"
    assert conf["SLURM_VERSION"] == SLURM_VERSION and conf["ClusterName"] == "demo"
    assert conf["SlurmctldHost[0]"].startswith("slurm-login(") and conf["MinJobAge"] == f"{MIN_JOB_AGE} sec"
    assert accounting_why(conf) == ""  # the demo has accounting, as its sacct views say
    real = list(parse_show_config((DATA / "slurm-24.11" / "accounting" / "scontrol-show-config.txt").read_text()))
    key_order_follows(list(conf), real)


# -- the logs ------------------------------------------------------------------------
TS = r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\] "
JOB = r"JobId=\d+(?:_\d+\(\d+\)|_\*|\+\d+\(\d+\))?"
# (the message's shape, the real excerpt it is seen in; "" where only Slurm's source shows it)
SHAPES = [
    (rf"_slurm_rpc_submit_batch_job: JobId=\d+ InitPrio=\d+ usec=\d+", "slurmctld-arjuna-137.log"),
    (r"sched: _slurm_rpc_allocate_resources JobId=\d+ NodeList=\(null\) usec=\d+", "slurmctld-unige-4163.log"),
    (rf"sched: Allocate {JOB} NodeList=\S+ #CPUs=\d+ Partition=\S+", "slurmctld-unige-4163.log"),
    (rf"_job_complete: {JOB} (?:WEXITSTATUS|WTERMSIG) \d+", "slurmctld-arjuna-137.log"),
    (rf"_job_complete: {JOB} done", "slurmctld-arjuna-137.log"),
    (r"update_node: node \S+ reason set to: .+", "slurmctld-hyperpod-resiliency.log"),
    (r"update_node: node \S+ state set to [A-Z]+", "slurmctld-hyperpod-resiliency.log"),
    (rf"Time limit exhausted for {JOB}", ""),
    (r"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=\d+ uid \d+", ""),
    (r"error: Nodes \S+ not responding(?:, setting DOWN)?", ""),
    (r"launch task StepId=\d+\.\d+ request from UID:\d+ GID:\d+ HOST:[\d.]+ PORT:\d+", "slurmd-spank-plugins-72.log"),
    (r"Launching batch JobId=\d+ for UID \d+", "slurmd-slurm_exporter-171.log"),
    (rf"\[\d+\.batch\] {JOB} completed with slurm_rc = \d+, job_rc = \d+", "slurmd-slurm_exporter-171.log"),
    (r"\[\d+\.(?:\d+|batch|extern)\] done with job", "slurmd-trixie-45.log"),
    (r"\[\d+\.\d+\] error: \*\*\* STEP \d+\.\d+ ON \S+ CANCELLED AT \S+( DUE TO TIME LIMIT)? \*\*\*", "slurmd-trixie-45.log"),
    (r"\[\d+\.batch\] error: \*\*\* JOB \d+ ON \S+ CANCELLED AT \S+( DUE TO TIME LIMIT)? \*\*\*", ""),
    (r"\[\d+\.(?:\d+|batch|extern)\] task/cgroup: _memcg_initialize: (?:job|step): alloc=\d+MB mem\.limit=\d+MB "
     r"memsw\.limit=unlimited", ""),
    (r"slurmd version [\d.]+ started", ""),
    (r"gpu/nvml: _get_system_gpu_list_nvml: \d+ GPU system device\(s\) detected", ""),
    (r"CPUs=\d+ Boards=\d+ Sockets=\d+ Cores=\d+ Threads=\d+ Memory=\d+ TmpDisk=\d+ Uptime=\d+ CPUSpecList=\S+ "
     r"FeaturesAvail=\S+ FeaturesActive=\S+", ""),
]


def test_every_shape_with_a_recording_is_seen_in_it():
    assert {f.name for f in LOGS.glob("*.log")} >= {f for _, f in SHAPES if f}
    for shape, name in SHAPES:
        if name:
            lines = (LOGS / name).read_text().splitlines()
            assert any(re.fullmatch(r"\[[\dT:.-]+\] " + shape, ln) for ln in lines), (shape, name)


async def _a_busy_day(backend, clock) -> str:
    """Half an hour on, with a two-node job cancelled and an operator's drain of dgx030
    (whose state then it returns); read within MinJobAge, while squeue and sacct still
    show the ended jobs."""
    sim = backend._sim
    clock.now = T0 + 1800
    await backend.snapshot()
    wide = next(j for j in sim.jobs.values() if j.state == "RUNNING" and len(j.nodes) > 1
                and j.job_id != backend.hung_job_id and j.het_job_id is None)
    await backend.cancel_job(wide.job_id)
    await backend.drain_node("dgx030", "bad DIMM (CHG-5001)")
    drained = node_model(sim.nodes["dgx030"]).state
    clock.now = T0 + 1860
    await backend.snapshot()
    return drained


def _all_logs(backend, probes) -> str:
    texts = [ask(probes, "", "cat", CTLD)[1]]
    texts += [ask(probes, n, "cat", f"/var/log/slurm/slurmd.{n}.log")[1] for n in backend._sim.nodes]
    return "".join(texts)


async def test_every_log_line_has_a_real_shape_and_the_logs_tell_every_kind(demo):
    backend, probes, clock = demo
    texts = [_all_logs(backend, probes)]  # the scenario's own ends: a completed and a failed job
    await _a_busy_day(backend, clock)
    texts.append(_all_logs(backend, probes))
    for hour in range(1, 13):  # a day of arrivals: some hit their time limit
        clock.now = T0 + hour * 3600
        await backend.snapshot()
        texts.append(_all_logs(backend, probes))
    seen = set()
    for line in "".join(texts).splitlines():
        assert re.match(TS, line), line
        message = line[len("[2025-06-15T15:06:40.123] "):]
        shape = next((s for s, _ in SHAPES if re.fullmatch(s, message)), None)
        assert shape is not None, f"a line of no known shape: {line}"
        seen.add(shape)
    missing = [s for s, _ in SHAPES if s not in seen]
    assert not missing, missing


async def test_slurmctld_log_tells_the_jobs_and_drains_the_demo_shows(demo):
    backend, probes, clock = demo
    drained_as = await _a_busy_day(backend, clock)
    snap = await backend.snapshot()
    rc, text, _ = ask(probes, "", "cat", CTLD)
    assert rc == 0

    def at(t: float) -> str:
        return time.strftime("[%Y-%m-%dT%H:%M:%S.", time.gmtime(t))

    lines = text.splitlines()
    assert lines == sorted(lines)  # in time order, milliseconds too
    for job in snap.jobs:
        if job.start_time and job.nodes:
            assert any(ln.startswith(at(job.start_time)) and f" NodeList={collapse(job.nodes)} " in ln
                       and "sched: Allocate JobId=" in ln for ln in lines), job.job_id
    drained = next(n for n in snap.nodes if n.name == "dgx030")
    assert f"{at(drained.reason_time)}" in text and "update_node: node dgx030 reason set to: bad DIMM (CHG-5001)" in text
    state = "DRAINING" if drained_as in ("allocated", "mixed") else "DRAINED"
    assert f"update_node: node dgx030 state set to {state}" in text
    xid = next(n for n in snap.nodes if n.name == backend.xid_node)
    assert f"{at(xid.reason_time)}" in text and f"node {xid.name} state set to DRAINED" in text
    assert f"error: Nodes {backend.down_node} not responding, setting DOWN" in text
    # tail is the end of the same file
    rc, tail, _ = ask(probes, "", "tail", "-n", "200", "--", CTLD)
    assert rc == 0 and tail.splitlines() == lines[-200:]


async def test_slurmd_log_is_the_nodes_own_and_tells_its_jobs_steps(demo):
    backend, probes, clock = demo
    await _a_busy_day(backend, clock)
    snap = await backend.snapshot()
    hung = snap.job(backend.hung_job_id)
    first, other = hung.nodes[0], hung.nodes[1]
    _, on_first, _ = ask(probes, first, "cat", f"/var/log/slurm/slurmd.{first}.log")
    _, on_other, _ = ask(probes, other, "cat", f"/var/log/slurm/slurmd.{other}.log")
    assert f"Launching batch JobId={hung.job_id} for UID 1000" in on_first
    assert f"Launching batch JobId={hung.job_id}" not in on_other  # the batch step runs on the first node only
    assert f"launch task StepId={hung.job_id}.0 request from UID:1000 GID:1000 HOST:10.10.1.1 " in on_other
    assert f"[{hung.job_id}.0] done with job" not in on_other  # it still runs
    j = next(j for j in backend._sim.jobs.values() if j.state == "CANCELLED" and len(j.nodes) > 1)
    _, log, _ = ask(probes, j.nodes[1], "cat", f"/var/log/slurm/slurmd.{j.nodes[1]}.log")
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(j.end_time))
    assert f"[{j.job_id}.0] error: *** STEP {j.job_id}.0 ON {j.nodes[1]} CANCELLED AT {when} ***" in log
    assert f"[{j.job_id}.extern] done with job" in log
    _, log, _ = ask(probes, j.nodes[0], "cat", f"/var/log/slurm/slurmd.{j.nodes[0]}.log")
    assert f"[{j.job_id}.batch] error: *** JOB {j.job_id} ON {j.nodes[0]} CANCELLED AT {when} ***" in log
    assert f"[{j.job_id}.batch] JobId={j.job_id} completed with slurm_rc = 0, job_rc = 15" in log
    # each log is on its own host: nowhere else
    assert ask(probes, other, "tail", "-n", "5", "--", f"/var/log/slurm/slurmd.{first}.log")[0] == 1
    assert ask(probes, first, "cat", CTLD)[0] == 1
    assert ask(probes, "", "cat", f"/var/log/slurm/slurmd.{first}.log")[0] == 1
    rc, stat, _ = ask(probes, first, "stat", "-c", "%s %Y", "--", f"/var/log/slurm/slurmd.{first}.log")
    size, mtime = (int(x) for x in stat.split())
    assert rc == 0 and size == len(on_first.encode()) and mtime <= clock.now


def test_the_same_clock_gives_the_same_bytes():
    def logs() -> str:
        backend = DemoBackend(seed=7, clock=lambda: T0)
        probes = DemoProbes(backend)
        return ask(probes, "", "cat", CTLD)[1] + ask(probes, "dgx001", "cat", "/var/log/slurm/slurmd.dgx001.log")[1] \
            + ask(probes, "", "scontrol", "show", "node", "dgx013")[1] + ask(probes, "", "scontrol", "show", "config")[1]

    first = logs()
    assert first == logs() and len(first) > 5000
