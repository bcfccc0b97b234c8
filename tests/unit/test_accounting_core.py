"""cockpit.core's accounting logic without Slurm: windows and states typed by the
user, failure texts, a node's summary line, the why-pending findings on recorded
outputs, the utilisation arithmetic against a hand computation, efficiency."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from cockpit.backends.accounting_limits import parse_assoc_mgr
from cockpit.backends.accounting_text import parse_reservations
from cockpit.backends.slurm_text import parse_scontrol_kv
from cockpit.core.accounting import failure_text, parse_since, parse_states
from cockpit.core.efficiency import efficiency
from cockpit.core.nodehistory import flapping, summarize
from cockpit.core.utilization import compute, idle_fraction
from cockpit.core.whyparts import (
    Asks, asks_from_detail, candidates, free_blocks, limit_findings, parse_dependency, reason_names,
    reservation_findings,
)
from cockpit.errors import UsageError
from cockpit.models import GpuGroup, Node, Partition, Switch, Topology
from cockpit.models.accounting import JobRecord, Limit, NodeEvent, StepRecord

DATA = Path(__file__).resolve().parents[1] / "data"
VERSIONS = ("slurm-22.05", "slurm-24.11")
NOW = 1_796_200_000


def rec(version: str, name: str) -> str:
    return (DATA / version / "accounting" / name).read_text()


def state(version: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", rec(version, "state.txt").splitlines()[0])}


# -- what the user types ---------------------------------------------------------------
def test_since_spans_dates_and_bad_values():
    assert parse_since("7d", NOW) == NOW - 7 * 86400
    assert parse_since("90m", NOW) == NOW - 5400 and parse_since("2w", NOW) == NOW - 14 * 86400
    assert parse_since("2026-11-30", NOW) < NOW
    for bad, word in (("yesterday", "yesterday"), ("7x", "7x"), ("2026-13-01", "2026-13-01"), ("5y", "5y")):
        with pytest.raises(UsageError, match=re.escape(repr(bad))):
            parse_since(bad, NOW)
    with pytest.raises(UsageError, match="over a year"):
        parse_since("400d", NOW)


def test_states_words_and_abbreviations():
    assert parse_states("failed,TO,oom") == ("FAILED", "TIMEOUT", "OUT_OF_MEMORY")
    assert "COMPLETED" in parse_states(None)
    with pytest.raises(UsageError, match="'running'"):
        parse_states("running")


def job(**kw) -> JobRecord:
    base = dict(job_id="1", job_id_raw=1, state="COMPLETED", alloc_tres={"cpu": 4, "gres/gpu": 8, "mem": 4000},
                node_count=1, nodes=("n1",), elapsed_s=100, start_time=NOW - 100, end_time=NOW)
    base.update(kw)
    return JobRecord(**base)


def test_failure_text():
    assert failure_text(job()) == ""
    assert failure_text(job(state="FAILED", exit_code=3)) == "exit 3"
    assert failure_text(job(state="FAILED", exit_code=0, exit_signal=9)) == "failed, signal 9 (KILL)"
    assert failure_text(job(state="TIMEOUT", time_limit=60)) == "time limit 60 min"
    assert failure_text(job(state="NODE_FAIL", nodes=("n2",))) == "node failure (n2)"
    assert failure_text(job(state="CANCELLED", start_time=None, reason="Dependency")) == "cancelled before it started, Dependency"


# -- a node's line ------------------------------------------------------------------------
def test_node_summary_counts_drains_xids_and_failed_jobs():
    ev = lambda s, state, reason: NodeEvent("node03", s, s + 60, state, reason, "root")  # noqa: E731
    events = (ev(1, "DRAIN", "Xid 79 fell off the bus"), ev(100, "DRAIN", "xid 79 again"),
              ev(200, "IDLE+DRAIN", "NVLink Xid 74"), ev(300, "DOWN*", "Not responding"))
    recent = tuple(job(job_id=str(i), job_id_raw=i, state="FAILED" if i < 4 else "COMPLETED") for i in range(10))
    line, counts, xids, failed = summarize(events, recent, 14 * 86400)
    assert line == "drained 3x, down 1x in 14 d, 2x Xid 79, 1x Xid 74, 4 of the last 10 jobs failed"
    assert counts == {"drain": 3, "down": 1} and xids == {79: 2, 74: 1} and failed == 4
    assert flapping(counts) and not flapping({"drain": 2})


# -- why pending --------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_pending_jobs_from_scontrol(version):
    qos = asks_from_detail("1", parse_scontrol_kv(rec(version, "scontrol-show-job-qos-wait.txt"))[0])
    assert (qos.qos, qos.reason, qos.gpus_per_node, qos.gpu_type, qos.req_tres["gres/gpu"]) == \
        ("gpu8", "QOSMaxGRESPerUser", 4, "h100", 4)
    assert (qos.user, qos.uid) == ("root", "0")
    maint = asks_from_detail("2", parse_scontrol_kv(rec(version, "scontrol-show-job-maint-wait.txt"))[0])
    assert maint.time_limit == 120 and maint.req_nodes == ("node04",) and maint.reason.startswith("ReqNodeNotAvail")
    dep = asks_from_detail("3", parse_scontrol_kv(rec(version, "scontrol-show-job-dep.txt"))[0])
    assert parse_dependency(dep.dependency) == [("afterok", str(state(version)["qos_run"]), "unfulfilled")]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_qos_gpu_limit_is_found_with_its_usage(version):
    asks = asks_from_detail("1", parse_scontrol_kv(rec(version, "scontrol-show-job-qos-wait.txt"))[0])
    (finding,) = limit_findings(parse_assoc_mgr(rec(version, "assoc-mgr-qos.txt")), asks)
    assert finding.blocks and finding.limit.used == 8 and finding.asks == 4
    assert finding.text == "QOS gpu8: MaxTRESPU gres/gpu=8, user root uses 8, this job asks 4 -> holds it back"


def test_reasons_name_their_limit():
    gpu_pu = Limit("MaxTRESPU", "gres/gpu", 8, 8)
    assert reason_names("QOSMaxGRESPerUser", "QOS", gpu_pu)
    assert not reason_names("QOSMaxGRESPerAccount", "QOS", gpu_pu)
    assert not reason_names("AssocMaxGRESPerUser", "QOS", gpu_pu)
    assert reason_names("AssocGrpCpuLimit", "Assoc", Limit("GrpTRES", "cpu", 64, 64))
    assert reason_names("QOSMaxJobsPerUserLimit", "QOS", Limit("MaxJobsPU", "", 2, 2))
    assert not reason_names("QOSGrpCPUMinutesLimit", "QOS", Limit("GrpTRES", "cpu", 64, 64))


@pytest.mark.parametrize("version", VERSIONS)
def test_a_time_limit_crossing_a_maintenance_reservation(version):
    asks = asks_from_detail("1", parse_scontrol_kv(rec(version, "scontrol-show-job-maint-wait.txt"))[0])
    (res,) = parse_reservations(rec(version, "scontrol-show-reservation.txt"))
    now = res.start - 1800  # the reservation starts in 30 min; the job asks 2 h
    cand = candidates(asks, {"gpu": ("node01", "node02", "node03", "node04")})
    assert cand == ("node04",)
    (f,) = reservation_findings((res,), cand, asks, now, now)
    assert f.all_nodes and f.nodes == ("node04",)
    assert f.text.startswith("its time limit (2 h) crosses maintenance reservation rec-maint (node04, from ")
    assert "under 30 min" in f.text
    assert reservation_findings((res,), cand, replace(asks, time_limit=20), now, now) == ()  # ends before it


def node(name, alloc=0, drained=False):
    return Node(name, "idle" if not alloc else "mixed", frozenset({"drain"}) if drained else frozenset(),
                gpus=(GpuGroup("h100", 8, tuple(range(alloc))),))


def test_free_blocks_per_leaf_switch_and_node():
    nodes = (node("n1", 8), node("n2", 2), node("n3", 0), node("n4", 0, drained=True))
    topo = Topology("tree", (Switch("leaf1", nodes=("n1", "n2")), Switch("leaf2", nodes=("n3", "n4")),
                             Switch("spine", 1, switches=("leaf1", "leaf2"))))
    asks = Asks("9", "u", "1", "a", "normal", ("gpu",), 2, 4, "h100", 60, {}, (), (), "", "", "Resources", "PENDING")
    blocks = free_blocks(nodes, topo, ("n1", "n2", "n3", "n4"), asks)
    by = {(b.kind, b.name): b for b in blocks}
    assert (by["leaf switch", "leaf1"].free_gpus, by["leaf switch", "leaf1"].nodes_that_fit) == (6, 1)
    assert (by["leaf switch", "leaf2"].free_gpus, by["leaf switch", "leaf2"].nodes) == (8, ("n3",))  # n4 drained
    assert not any(b.fits for b in blocks if b.kind == "leaf switch")  # 2 nodes x 4 GPUs under one leaf: no
    assert by["node", "n3"].free_gpus == 8


# -- utilisation, by hand -------------------------------------------------------------------
def test_utilization_matches_a_hand_computation():
    h = 3600
    t0 = NOW - 10 * h  # a 10-hour window
    nodes = (node("n1"), node("n2"), node("n3"))  # 3 nodes x 8 GPUs = 24 GPUs
    parts = (Partition("gpu", ("n1", "n2", "n3")), Partition("debug", ("n1",)))
    jobs = (
        # 8 GPUs for 2 h inside the window, account ml, partition gpu: 16 GPU-h
        job(job_id="1", job_id_raw=1, account="ml", partition="gpu", nodes=("n1",), start_time=t0 + h, end_time=t0 + 3 * h),
        # 4 GPUs, started 1 h before the window, ended 1 h into it: 4 GPU-h counted
        job(job_id="2", job_id_raw=2, account="cv", partition="debug", nodes=("n1",), alloc_tres={"gres/gpu": 4},
            start_time=t0 - h, end_time=t0 + h),
        # 2 GPUs on n2, still running (no end): from t0+8h to now = 2 h -> 4 GPU-h
        job(job_id="3", job_id_raw=3, account="ml", partition="gpu", nodes=("n2",), alloc_tres={"gres/gpu": 2},
            state="RUNNING", start_time=t0 + 8 * h, end_time=None),
        # no GPUs: not counted
        job(job_id="4", job_id_raw=4, account="ml", partition="gpu", alloc_tres={"cpu": 1}, start_time=t0, end_time=NOW),
    )
    # n3 drained for 3 h (8 GPUs, nothing running there): 24 GPU-h drained.
    events = (NodeEvent("n3", t0 + 2 * h, t0 + 5 * h, "DRAIN", "Xid 79", "root"),)
    u = compute(jobs, events, nodes, parts, t0, NOW, bucket_s=5 * h)
    total = u.rows[0]
    assert total.capacity == 24 * 10  # 240 GPU-h
    assert total.allocated == pytest.approx(16 + 4 + 4)
    assert total.drained == pytest.approx(24)
    assert total.unallocated == pytest.approx(240 - 24 - 24)
    assert total.utilization == pytest.approx(10.0)
    rows = {(r.scope, r.name): r for r in u.rows}
    assert rows["partition", "gpu"].allocated == pytest.approx(20) and rows["partition", "debug"].allocated == pytest.approx(4)
    assert rows["partition", "debug"].capacity == 80
    assert rows["account", "ml"].allocated == pytest.approx(20) and rows["account", "cv"].allocated == pytest.approx(4)
    assert rows["account", "ml"].capacity is None
    first, second = u.trend
    assert first.allocated == pytest.approx(4 + 16) and first.drained == pytest.approx(24)
    assert second.allocated == pytest.approx(4)
    assert total.idle_in_alloc is None  # not measured


def test_drained_time_excludes_what_jobs_still_held():
    h = 3600
    t0 = NOW - 2 * h
    held = job(nodes=("n1",), alloc_tres={"gres/gpu": 4}, start_time=t0, end_time=t0 + h)
    events = (NodeEvent("n1", t0, NOW, "MIXED+DRAIN", "maintenance", "root"),)
    u = compute((held,), events, (node("n1"),), (Partition("gpu", ("n1",)),), t0, NOW)
    assert u.rows[0].drained == pytest.approx(8 * 2 - 4) and u.rows[0].allocated == pytest.approx(4)


def test_idle_fraction_from_gpuutil():
    steps = (StepRecord("0", elapsed_s=100, tres_in_ave={"gres/gpuutil": 25.0}),)
    frac, measured = idle_fraction((job(steps=steps), job(job_id="2", job_id_raw=2)))
    assert measured == 1 and frac == pytest.approx(0.75)


# -- efficiency -------------------------------------------------------------------------------
def test_efficiency_says_where_each_figure_came_from():
    steps = (StepRecord("batch", elapsed_s=100, total_cpu_s=200.0, tres_in_max={"mem": 1000.0}),)
    e = {m.name: m for m in efficiency(job(steps=steps)).measures}
    assert e["cpu"].percent == 50.0 and "TotalCPU" in e["cpu"].source
    assert e["memory"].percent == 25.0 and "TRESUsageInMax" in e["memory"].source
    assert e["gpu"].percent is None and e["gpu"].source.startswith("not measured")
    bare = {m.name: m for m in efficiency(job(steps=(StepRecord("batch", elapsed_s=100),))).measures}
    assert bare["memory"].percent is None and bare["memory"].source.startswith("not measured")
