"""nccl-tests edge cases on real recordings (tests/data/nccl-tests/SOURCES.md):
the oldest output layout, a log that does not name its collective, a single rank.
Every expected value was read off the recording by hand."""

from __future__ import annotations

from pathlib import Path

from cockpit.plugins.api import Severity
from cockpit_nccl.judge import infer_nranks, judge
from cockpit_nccl.parser import parse
from cockpit_nccl.run import Judged, result_of

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
OLDEST = "nccl-tests-issue37-oldest-layout-no-hash-error-column-oob-failed-EXCERPT.txt"
SINGLE = "nccl-tests-issue287-single-rank-alltoall-rtx5090-EXCERPT.txt"
UNNAMED = "nccl-tests-issue252-ring-2node-collective-not-named-EXCERPT.txt"


def load(name):
    return parse((DATA / name).read_text(), name)


def test_oldest_layout_without_hash_prefixes_is_read_and_its_failure_is_crit():
    run = load(OLDEST)
    # "all_gather_perf -g 8 -b 4294967296 -e 4294967296": one 4 GiB row, an error column of 1e+00
    assert run.collective == "all_gather" and run.legacy
    (row,) = run.rows
    assert (row.size, row.count, row.oop.busbw, row.ip.busbw) == (4294967296, 134217728, 129.05, 128.84)
    assert (row.oop.error, row.ip.error) == (1.0, 1.0)
    # " Out of bounds values : 2 FAILED" and " Avg bus bandwidth    : 128.942" (no '#')
    assert run.out_of_bounds == 2 and run.summary
    v = judge(run, expected=100.0)
    assert v.severity == Severity.CRIT and v.findings[0].rule == "out-of-bounds"


def test_a_log_that_does_not_name_its_collective_is_not_called_all_reduce():
    run = load(UNNAMED)
    assert run.collective is None and len(run.rows) == 5
    v = judge(run, None)
    # the best of the three largest sizes: 97.37 GB/s (4 GiB, out-of-place); no figure to compare with
    assert (v.busbw, v.size) == (97.37, 4294967296)
    assert v.severity == Severity.UNKNOWN and "does not name its collective" in v.summary
    res = result_of([Judged(("node01", "node02"), v, run)], "log", "nccl-tests")
    assert res.data["runs"][0]["collective"] is None
    # busbw/algbw = 93.46/53.41 = 1.75 > 1: only all_reduce's factor exceeds 1, so n = 2/(2-1.75) = 8
    assert infer_nranks(run) == 8
    # ... a guess from a ratio, so the result says so: no "Rank" lines, no stated count
    assert res.data["runs"][0]["nranks"] is None and res.data["runs"][0]["nranks_inferred"] == 8


def test_a_single_rank_run_is_nothing_to_judge_not_crit_at_zero():
    run = load(SINGLE)
    # "nGpus 1", one Rank line, busbw 0.00 in both columns, "Avg bus bandwidth : 0"
    assert (run.collective, run.nranks, run.rows[0].oop.busbw, run.rows[0].ip.busbw) == ("alltoall", 1, 0.0, 0.0)
    for expected in (None, 100.0):
        v = judge(run, expected)
        assert v.severity == Severity.UNKNOWN and [f.rule for f in v.findings] == ["single-rank"]
    assert result_of([Judged((), judge(run, 100.0), run)], "log", "nccl-tests").severity == Severity.UNKNOWN
