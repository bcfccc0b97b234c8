"""A dead job's evidence read after the fact: PyTorch/NCCL logs as they print today
(tests/data/pytorch-nccl-timeout), saved py-spy dumps (tests/data/pyspy) and saved
Slurm outputs (tests/data/slurm-postmortem). Every expected value was read off the
recording by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.plugins.api import Severity
from pluginctx import make_ctx
from cockpit_runbooks import load_runbooks, probes_job, probes_slurm
from cockpit_runbooks.context import RunContext
from cockpit_runbooks.engine import run_runbook

DATA = Path(__file__).resolve().parents[1] / "data"
WD = DATA / "pytorch-nccl-timeout"
PYSPY = DATA / "pyspy"
SLURM = DATA / "slurm-postmortem"


async def watchdog(name):
    return await probes_job.watchdog_logs(RunContext(make_ctx(config={}), job_logs=(str(WD / name),)), {})


def found(res):
    return [(f.severity, f.rule, f.title) for f in res.findings]


# (log, the findings the probe must give): read by hand from each log
WATCHDOG = {
    "deim-issue105-heartbeat-monitor-watchdog-stuck-EXCERPT.log": [
        (Severity.CRIT, "watchdog.heartbeat", "watchdog heartbeat lost on 3 rank(s) (0, 1, 2): the watchdog itself "
                                              "was stuck, so the process was aborted")],
    "sglang-issue1691-no-heartbeat-first-pg-pg3-EXCERPT.log": [
        (Severity.CRIT, "watchdog.heartbeat", "watchdog heartbeat lost on 5 rank(s) (0, 1, 2, 6, 7): the watchdog "
                                              "itself was stuck, so the process was aborted")],
    "xdit-issue147-heartbeat-pg5-hard-wrapped-EXCERPT.log": [
        (Severity.CRIT, "watchdog.heartbeat", "watchdog heartbeat lost on 2 rank(s) (0, 4): the watchdog itself was "
                                              "stuck, so the process was aborted")],
    "basicsr-issue737-pg-guid-default-pg-exception-wording-EXCERPT.log": [
        (Severity.CRIT, "watchdog.timeout", "NCCL watchdog timeout on 3 rank(s): ALLREDUCE SeqNum 808 in PG "
                                            "0(default_pg) after 600000 ms"),
        (Severity.WARN, "watchdog.in_sync", "every rank stopped at the same SeqNum: the collective hung on all of them")],
    "nemo-rl-ray-megatron-tp-ep-pg-guid-names-dump-signal.log": [
        (Severity.CRIT, "watchdog.timeout", "NCCL watchdog timeout on 1 rank(s): ALLTOALL_BASE SeqNum 52229 in PG "
                                            "100(EXPERT_MODEL_PARALLEL_GROUP) after 600000 ms"),
        (Severity.WARN, "flight_recorder.off", "the flight recorder was off, so no per-collective trace was kept")],
    "vllm-issue6042-ray-worker-ansi-prefix-timeout-at-nccl-work-EXCERPT.log": [
        (Severity.CRIT, "watchdog.timeout", "NCCL watchdog timeout on 1 rank(s): GATHER SeqNum 158046 in PG 1 after "
                                            "600000 ms")],
    "llamafactory-issue8261-line-number-prefix-pg-guid-flight-recorder-wait-EXCERPT.log": [
        (Severity.CRIT, "watchdog.dump_signal", "a collective timed out: flight-recorder dump signalled on 1 rank(s)")],
    "pytorch-issue118369-legacy-format-seqnum-skew-EXCERPT.log": [
        (Severity.CRIT, "watchdog.timeout", "NCCL watchdog timeout on 2 rank(s): ALLREDUCE SeqNum 96125 in a PG the "
                                            "log does not name after 1800000 ms"),
        (Severity.WARN, "straggler.logs", "rank(s) behind by the logs: 7")],
    "ml-engineering-nccl-warn-net-ib-file-line-prefix-wrapped.log": [
        (Severity.WARN, "nccl.warn", "NCCL WARN on node-2 (pid 5776, GPU 0): NET/IB : Got completion from peer "
                                     "10.2.0.5<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)")],
    "ml-engineering-nccl-warn-socket-h-connect-refused.log": [
        (Severity.WARN, "nccl.warn", "NCCL WARN on r11i6n2 (pid 486514, GPU 1): Connect to 10.148.3.247<56821> "
                                     "failed : Connection refused")],
}


@pytest.mark.parametrize("name", sorted(WATCHDOG))
async def test_hung_job_logs_as_printed_today_are_read_and_never_ok(name):
    res = await watchdog(name)
    assert found(res) == WATCHDOG[name]
    assert res.sources[0].startswith(f"{WD / name}: ") and "watchdog line(s) recognised" in res.sources[0]


async def test_every_recorded_log_ends_above_ok():
    for p in sorted(WD.glob("*.log")):
        res = await watchdog(p.name)
        assert res.findings and max(f.severity for f in res.findings) != Severity.OK, p.name


async def test_a_log_that_mentions_nccl_but_is_not_understood_is_unknown(tmp_path):
    # the heartbeat log with its message words cut out of every line: only the frame lines stay
    lines = (WD / "deim-issue105-heartbeat-monitor-watchdog-stuck-EXCERPT.log").read_text().splitlines()
    kept = tmp_path / "cut.log"
    kept.write_text("\n".join(ln.split("]", 1)[0] + "] ProcessGroupNCCL.cpp" for ln in lines if "[rank" in ln))
    res = await probes_job.watchdog_logs(RunContext(make_ctx(config={}), job_logs=(str(kept),)), {})
    assert [(f.severity, f.rule) for f in res.findings] == [(Severity.UNKNOWN, "watchdog.unread")]


# --- py-spy dumps ---------------------------------------------------------------

async def stacks(name, node=None):
    return await probes_job.pyspy_stacks(RunContext(make_ctx(config={}), node=node,
                                                    pyspy_files=(str(PYSPY / name),)), {})


async def test_saved_py_spy_dumps_name_the_process_that_is_elsewhere():
    res = await stacks("local-py-spy-0.4.3-three-ranks-one-elsewhere.txt", node="gpu07")
    # pids 11546 and 11548 wait under barrier (rank.py:3); 11547 sleeps in load_batch (rank.py:7)
    assert found(res) == [(Severity.CRIT, "stacks.straggler", "straggler: pid 11547 on gpu07")]
    assert res.facts == {"straggler_node": "gpu07", "straggler_nodes": "gpu07", "straggler_rank": "11547"}
    assert res.sources == [f"{PYSPY / 'local-py-spy-0.4.3-three-ranks-one-elsewhere.txt'}: py-spy dump, 3 process(es)"]


@pytest.mark.parametrize("name,title", [
    ("ml-engineering-py-spy-dump-deepspeed-pipe-broadcast-no-process-header.txt",
     "one process dumped (thread 835995, at broadcast (torch/distributed/distributed_c10d.py:1191)): "
     "no other stack to compare it with"),
    # threading's wait is not a collective: the first frame is named instead
    ("ml-engineering-py-spy-dump-two-threads-hex-ids.txt",
     "one process dumped (thread 0x7F6D3C29D740, at wait (threading.py:312)): no other stack to compare it with"),
])
async def test_a_single_dump_is_nothing_to_compare(name, title):
    assert found(await stacks(name)) == [(Severity.UNKNOWN, "stacks.single", title)]


async def test_a_py_spy_file_without_a_dump_is_unknown():
    res = await probes_job.pyspy_stacks(RunContext(make_ctx(config={}), pyspy_files=(str(SLURM / "SOURCES.md"),)), {})
    assert [(f.severity, f.rule) for f in res.findings] == [(Severity.UNKNOWN, "stacks.unreadable")]


# --- saved Slurm outputs ------------------------------------------------------------

SLURM_CASES = {
    "trixie-issue105-seff-stanage-completed-EXCERPT.txt": ("seff", [(Severity.OK, "job 64626 completed (exit code 0)")]),
    "reportseff-issue16-seff-multinode-EXCERPT.txt": ("seff", [(Severity.OK, "job 65638294 completed (exit code 0)")]),
    "reportseff-issue41-seff-site-boxed-format-EXCERPT.txt": ("seff", [(Severity.OK, "job 131042 completed (exit code 0)")]),
    # jobs 20 and 21 and their .0 steps FAILED; 19.0 is a completed step, 22 COMPLETED
    "soperator-pr321-sacct-default-table-failed-EXCERPT.txt": ("sacct", [
        (Severity.WARN, "job 20 failed (non-zero exit)"), (Severity.WARN, "job 20.0 failed (non-zero exit)"),
        (Severity.WARN, "job 21 failed (non-zero exit)"), (Severity.WARN, "job 21.0 failed (non-zero exit)"),
        (Severity.OK, "job 22 completed")]),
    "slurmweb-24.11-0.0.42-restd-slurmdb-job-failed.json": ("sacct --json", [
        (Severity.WARN, "job 6359 failed (non-zero exit) (exit code ERROR 1) on cn1")]),
    "slurmweb-24.11-0.0.42-restd-slurmdb-job-timeout.json": ("sacct --json", [
        (Severity.WARN, "job 6357 hit its time limit (exit code SUCCESS 0) on cn1")]),
    # 11 whole rows; the last line (" e15") stops after its Account column
    # fair share is recorded, not judged: UNKNOWN, never OK (docs/verdicts.md)
    "schedmd-slurm-pr114-sshare-a-EXCERPT.txt": ("sshare", [
        (Severity.UNKNOWN, "11 association(s); lowest fair share 0.000000 (e104725 e104725)"),
        (Severity.UNKNOWN, "1 sshare row(s) end before their last column: the copy was cut")]),
    # server_thread_count 2, agent_queue_size 0, dbd_agent_queue_size 0, bf_cycle_counter 0 (not judged),
    # rpcs_by_user: root only, 29
    "rivosinc-exporter-sdiag-24.05.5-json.json": ("sdiag --json", [
        (Severity.OK, "slurmctld server threads: 2 of 256"),
        (Severity.OK, "agent queue (RPCs waiting to go out to nodes): 0"),
        (Severity.OK, "slurmdbd agent queue (messages waiting for slurmdbd): 0"),
        (Severity.OK, "29 RPCs from 1 user(s); most from root (29)")]),
    # k8s, jjres, GPUmemoryissue, sebatlab, maint, ampres2022; "maint" carries the MAINT flag
    "ciml-2022-expanse-scontrol-show-res-EXCERPT.txt": ("reservations", [
        (Severity.OK, "6 reservation(s), 1 for maintenance (MAINT)")]),
    "slurmweb-24.11-0.0.41-restd-reservations.json": ("reservations", [
        (Severity.OK, "2 reservation(s), 0 for maintenance (MAINT)")]),
}


def test_every_slurm_recording_is_covered():
    assert {p.name for p in SLURM.iterdir() if p.name != "SOURCES.md"} == set(SLURM_CASES)


@pytest.mark.parametrize("name", sorted(SLURM_CASES))
async def test_saved_slurm_outputs(name):
    kind, expected = SLURM_CASES[name]
    res = await probes_slurm.slurm_records(RunContext(make_ctx(config={}), slurm_files=(str(SLURM / name),)), {})
    assert res.sources == [f"{SLURM / name}: {kind}"]
    assert [(f.severity, f.title) for f in res.findings] == expected


async def test_a_node_in_a_maintenance_reservation():
    name = "ciml-2022-expanse-scontrol-show-res-EXCERPT.txt"
    rc = RunContext(make_ctx(config={}), node="exp-15-05", slurm_files=(str(SLURM / name),))
    res = await probes_slurm.slurm_records(rc, {})
    # "ReservationName=maint StartTime=2022-05-27T14:01:01 ... Nodes=exp-15-[05-08,...]" with MAINT
    (f,) = res.findings
    assert f.severity == Severity.WARN and f.title.startswith("exp-15-05 is in reservation maint (2022-05-27T14:01:01")


async def test_hung_job_post_mortem_uses_every_saved_file():
    books, _ = load_runbooks()
    rc = RunContext(make_ctx(config={}), job_logs=(str(WD / "basicsr-issue737-pg-guid-default-pg-exception-wording-EXCERPT.log"),),
                    pyspy_files=(str(PYSPY / "local-py-spy-0.4.3-three-ranks-one-elsewhere.txt"),),
                    slurm_files=(str(SLURM / "slurmweb-24.11-0.0.42-restd-slurmdb-job-timeout.json"),))
    rep = await run_runbook(books["hung-job"], rc, "propose")
    status = {s.id: s.status for s in rep.steps}
    assert status["watchdog"] == status["stacks"] == status["slurm"] == "ran"
    assert status["progress"] == status["xid"] == status["gpu"] == status["nvlink"] == status["ib"] == "n/a"
    assert rep.severity == Severity.CRIT and len(rep.inputs) == 3
