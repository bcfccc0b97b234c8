"""Folding identical outputs by node set (clubak style)."""

from cockpit.remote.fanout import HostResult
from cockpit.remote.fold import fold, render


def _r(host, out=b"", code=0, err=None):
    return HostResult(host, None if err else code, out, b"", 0.1, err)


def test_identical_outputs_fold_into_one_nodeset():
    res = {h: _r(h, b"same\n") for h in ("node01", "node02", "node03", "node07")}
    res["node04"] = _r("node04", b"other\n")
    folds = fold(res)
    assert [(f.nodes, f.count, f.output) for f in folds] == [
        ("node[01-03,07]", 4, "same\n"),
        ("node04", 1, "other\n"),
    ]


def test_errors_fold_by_cause_and_exit_codes_are_reported():
    res = {
        "node01": _r("node01", err="ssh node01: connection refused"),
        "node02": _r("node02", err="ssh node02: connection refused"),
        "node03": _r("node03", b"boom\n", code=2),
    }
    text = render(fold(res))
    assert "node[01-02]: error: ssh node[01-02]: connection refused" in text
    assert "node03: exited with exit code 2" in text
    assert text.index("boom") < text.index("error:")


def test_same_output_different_exit_code_does_not_fold():
    res = {"a1": _r("a1", b"x"), "a2": _r("a2", b"x", code=1)}
    assert len(fold(res)) == 2
