"""The nccl-tests parser and judge over every recorded fixture (tests/data/nccl-tests)."""

from pathlib import Path

import pytest

from cockpit.errors import ParseError
from cockpit.plugins.api import Severity
from cockpit_nccl.judge import Thresholds, bus_factor, infer_nranks, judge
from cockpit_nccl.parser import parse, strip_prefix

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
AWS = "aws-2x-p5-h100-efa3200-all_reduce_perf.txt"
DEEPOPS = "deepops-4x-dgx-a100-ib-all_reduce_perf-legacy-error-column.txt"
DUP = "nccl-tests-issue182-2node-A100-PCIE-duplicate-header-old-busid-EXCERPT.txt"
LOW = "nccl-tests-issue232-2node-1xH100-4nic-low-busbw-EXCERPT.txt"
NEBIUS = "nebius-soperator-pr428-srun-mpi-pmix-2node-H100-header-EXCERPT.txt"


def load(name):
    return parse((DATA / name).read_text(), name)


OLDEST = "nccl-tests-issue37-oldest-layout-no-hash-error-column-oob-failed-EXCERPT.txt"
SINGLE = "nccl-tests-issue287-single-rank-alltoall-rtx5090-EXCERPT.txt"
UNNAMED = "nccl-tests-issue252-ring-2node-collective-not-named-EXCERPT.txt"
# tables with a busbw column that are not nccl-tests output (tests/data/nccl-tests/SOURCES.md)
FOREIGN = {
    "nccl-1.x-readme-single-process-all-reduce-test.txt": "NCCL 1.x single-process test output",
    "blog-dgx1-nccl-1.x-all-reduce-test-tabs-EXCERPT.txt": "NCCL 1.x single-process test output",
    "deepspeed-issue7019-comms-logger-busbw-avg-table-EXCERPT.txt": "DeepSpeed comms logger summary",
}


def test_every_fixture_is_covered():
    assert {p.name for p in DATA.glob("*.txt")} == {AWS, DEEPOPS, DUP, LOW, NEBIUS, OLDEST, SINGLE, UNNAMED, *FOREIGN}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_a_foreign_busbw_table_is_refused_by_name(name):
    # NCCL 1.x: "#      bytes             N    type      op     time  algbw  busbw      res ..." with
    # 12-column rows that a column-count guess would have taken for nccl-tests' legacy layout
    with pytest.raises(ParseError) as err:
        load(name)
    assert FOREIGN[name] in str(err.value) and "not nccl-tests output" in str(err.value)


def test_a_foreign_header_stops_rows_being_guessed_but_a_real_header_after_it_counts():
    nccl1 = (DATA / "nccl-1.x-readme-single-process-all-reduce-test.txt").read_text()
    real = (DATA / DEEPOPS).read_text()
    run = parse(nccl1 + real, "both")
    # DeepOps' own rows and none of NCCL 1.x's 10000000-byte rows
    assert run.rows and all(r.size != 10000000 for r in run.rows)
    assert len(run.rows) == len(load(DEEPOPS).rows)


def test_aws_srun_prefixed_new_columns():
    run = load(AWS)
    assert len(run.rows) == 32
    assert run.rows[0].size == 8 and run.rows[-1].size == 17179869184
    last = run.rows[-1]
    assert (last.oop.busbw, last.ip.busbw) == (487.09, 487.26)
    assert last.oop.wrong == 0 and last.root == -1 and last.redop == "sum"
    assert run.check_enabled is True and not run.legacy
    # busbw/algbw = 2(n-1)/n = 1.875 on 2 x 8 H100.
    assert infer_nranks(run) == 16
    # Against the sample's own figure (AWS README: 487 GB/s at 16 GiB) the rows pass, but the
    # README excerpt stops after the last row (no "Avg bus bandwidth" line): never OK.
    v = judge(run, expected=487.0)
    assert not run.summary and v.busbw == 487.26 and v.size == 17179869184
    assert v.severity == Severity.UNKNOWN and [f.rule for f in v.findings] == ["expected-busbw", "incomplete"]
    assert v.findings[0].severity == Severity.OK


def test_deepops_legacy_error_column():
    run = load(DEEPOPS)
    assert run.legacy and run.check_enabled is None
    assert [r.size for r in run.rows][:2] == [1048576, 2097152] and len(run.rows) == 13
    last = run.rows[-1]
    assert last.root is None and last.oop.error == 1e-06 and last.oop.wrong is None
    assert last.ip.busbw == 191.56
    assert run.avg_busbw == 113.289  # parsed, not judged:
    v = judge(run, expected=191.0)  # deepops docs: 191 GB/s is "in line with what we would expect"
    assert v.severity == Severity.OK and v.busbw == 191.56
    assert infer_nranks(run) == 32  # 4 x DGX A100 x 8 GPUs: 191.05/98.61 = 1.9375


def test_avg_bus_bandwidth_never_decides():
    run = load(DEEPOPS)
    # The average (113) is 59% of 191 and would be CRIT; the large sizes are fine.
    assert run.avg_busbw / 191.0 < 0.8
    assert judge(run, expected=191.0).severity == Severity.OK


def test_issue232_low_busbw_is_crit():
    run = load(LOW)
    assert [r.size for r in run.rows] == [2097152 << i for i in range(5)]
    assert run.rows[-1].ip.busbw == 41.52
    v = judge(run, expected=200.0)  # the issue's expected figure
    assert v.severity == Severity.CRIT and v.busbw == 41.52
    assert "21%" in v.summary
    assert any(f.rule == "plateau" for f in v.findings)  # 32 MiB max: noted


def test_duplicate_header_is_a_launch_problem_not_bandwidth():
    run = load(DUP)
    assert run.launch_problems and "2 test headers" in run.launch_problems[0]
    assert run.hosts == ("testgpu1", "testgpu2") and run.ranks_per_host == {"testgpu1": 2, "testgpu2": 2}
    assert {d.busid for d in run.devices} == {"0x03"}
    assert run.nranks is None
    v = judge(run, expected=100.0)
    assert v.launch_problem and v.severity == Severity.CRIT and v.busbw is None
    assert v.summary.startswith("launch problem")


def test_nebius_header_ranks_per_host_and_no_rows():
    run = load(NEBIUS)
    assert run.params["nGpus"] == "1" and run.params["maxBytes"] == "8589934592"
    # The excerpt stops mid-line at rank 12: 12 whole rank lines, of the launch line's 2 x 8 = 16 ranks.
    assert len(run.devices) == 12 and run.nranks == 16 and run.hosts == ("worker-1", "worker-0")
    assert run.ranks_per_host == {"worker-1": 8, "worker-0": 4}
    assert run.devices[0].busid == "0x8d" and run.devices[0].name == "NVIDIA H100 80GB HBM3"
    assert not run.launch_problems  # the same pid on two hosts is not a duplicate rank
    assert judge(run, expected=370.0).severity == Severity.UNKNOWN


def test_openmpi_prefix_new_busid_na_and_wrong():
    # Built here from the documented formats (REFERENCE.md section 1), not recorded.
    text = "\n".join([
        "[1,0]<stdout>:# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803",
        "[1,0]<stdout>:# Collective test starting: all_gather_perf",
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid  12345 on   gpu01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3",
        "[1,0]<stdout>:#  Rank  1 Group  0 Pid  12346 on   gpu02 device  0 [0000:18:00] NVIDIA H100 80GB HBM3",
        "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "[1,0]<stdout>:     1048576        131072     float    none      -1    20.10   52.17   26.08    N/A    19.90   52.69   26.35    N/A",
        "[1,0]<stdout>:     2097152        262144     float    none      -1    30.10   69.67   34.84      3    29.90   70.14   35.07      0",
        "[1,0]<stdout>:# Avg bus bandwidth    : 30.58 FAILED",
    ])
    run = parse(text)
    assert run.collective == "all_gather" and run.version == "2.17.6"
    assert run.devices[1].busid == "0000:18:00" and run.nranks == 2
    assert run.rows[0].oop.wrong is None and run.rows[1].oop.wrong == 3
    assert run.avg_status == "FAILED"
    v = judge(run, expected=35.0)
    assert v.severity == Severity.CRIT and any(f.rule == "wrong" for f in v.findings)


def test_per_iteration_columns_from_header():
    # -I 1 adds i_min i_max i_p99 i_cv% per side (util.cu writePerIterReport); built here.
    text = "\n".join([
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%",
        "   134217728      33554432     float     sum      -1    870.3  154.22  289.16      0"
        "    860.1    890.2    889.0     1.20    876.8  153.07  287.01      0    870.0    880.0    879.0     0.50",
    ])
    row = parse(text).rows[0]
    assert row.oop.busbw == 289.16 and row.ip.busbw == 287.01
    assert dict(row.oop.extra)["i_p99"] == 889.0 and dict(row.ip.extra)["i_cv%"] == 0.5


def test_strip_prefix():
    assert strip_prefix("12: #  Rank") == ("12", "#  Rank")
    assert strip_prefix("[1,3]<stdout>:   8  2") == ("3", "  8  2")
    assert strip_prefix("   8  2") == (None, "   8  2")


def test_garbage_and_bad_rows_raise_parse_error():
    with pytest.raises(ParseError, match="no nccl-tests header"):
        parse("hello\nworld\n", "x.log")
    with pytest.raises(ParseError, match="line 2"):
        parse("#       size         count      type   redop    root     time   algbw   busbw #wrong"
              "     time   algbw   busbw #wrong\n 8 2 float sum -1 1.0 abc 0.0 0 1.0 0.0 0.0 0\n", "y.log")


def test_bus_factors():
    assert bus_factor("all_reduce", 16) == pytest.approx(1.875)
    assert bus_factor("all_gather", 4) == pytest.approx(0.75)
    assert bus_factor("reduce_scatter", 2) == pytest.approx(0.5)
    assert bus_factor("broadcast", 8) == 1.0 and bus_factor("sendrecv", 8) == 1.0


@pytest.mark.parametrize("ratio,sev", [(0.95, Severity.OK), (0.85, Severity.WARN), (0.75, Severity.CRIT)])
def test_thresholds(ratio, sev):
    # The DeepOps recording is whole (it ends with its 'Avg bus bandwidth' line); the best
    # busbw of its top sizes is the in-place 191.56 GB/s of the 4 GiB row (read by hand).
    run = load(DEEPOPS)
    measured = 191.56
    assert judge(run, expected=measured / ratio).severity == sev
    # The AWS excerpt is cut before its summary: the same ratios are never better than UNKNOWN.
    cut = judge(load(AWS), expected=487.26 / ratio).severity
    assert cut == (Severity.UNKNOWN if sev == Severity.OK else sev)


def test_thresholds_are_configurable_and_top_sizes_matters():
    run = load(DEEPOPS)
    strict = Thresholds(warn_ratio=0.999, crit_ratio=0.5)
    assert judge(run, expected=192.0, th=strict).severity == Severity.WARN
    # Judging only the very largest size vs the best of the top 3 picks different rows.
    assert judge(run, 200.0, Thresholds(top_sizes=1)).busbw == 191.56
    assert judge(run, None).severity == Severity.UNKNOWN


@pytest.mark.parametrize("name,nranks", [
    # "-np 2 ./all_reduce_perf ... -g 1": stated by the launch line, no Rank lines
    (LOW, 2),
    # "all_gather_perf -g 8" started alone: one process, 8 GPUs
    (OLDEST, 8),
    # "srun ... --nodes=2 --ntasks-per-node=8 ... all_reduce_perf_mpi ... -g 1": 16, though the excerpt
    # keeps only 12 "Rank" lines
    (NEBIUS, 16),
    # no launch line and no Rank lines: not stated (the busbw/algbw estimate is no count)
    (AWS, None), (DEEPOPS, None), (UNNAMED, None),
])
def test_the_rank_count_is_what_the_output_states(name, nranks):
    assert load(name).nranks == nranks
