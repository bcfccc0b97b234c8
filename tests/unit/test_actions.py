"""Planning of operator actions: exact argv per target, validation, reasons."""

from __future__ import annotations

import pytest

from cockpit.core.actions import (
    ACTIONS,
    REASON_TEMPLATES,
    Params,
    build_plan,
    check_job_id,
    expand_nodes,
    make_reason,
)
from cockpit.errors import UsageError

HOSTILE = "x; rm -rf / $(reboot) `id` 'q' \"dq\"\nline2 [bold red]markup[/]"


@pytest.mark.parametrize(
    ("name", "params", "argv"),
    [
        ("cancel", Params(), ["scancel", "--verbose", "--", "42"]),
        ("signal", Params(signal="usr1"), ["scancel", "--verbose", "--signal=USR1", "--", "42"]),
        ("signal", Params(signal="SIGTERM", full=True), ["scancel", "--verbose", "--signal=TERM", "--full", "--", "42"]),
        ("signal", Params(signal="10", batch=True), ["scancel", "--verbose", "--signal=10", "--batch", "--", "42"]),
        ("requeue", Params(), ["scontrol", "requeue", "42"]),
        ("requeuehold", Params(), ["scontrol", "requeuehold", "42"]),
        ("hold", Params(), ["scontrol", "hold", "42"]),
        ("release", Params(), ["scontrol", "release", "42"]),
        ("timelimit", Params(time_limit="1-02:00:00"), ["scontrol", "update", "JobId=42", "TimeLimit=1-02:00:00"]),
        ("timelimit", Params(time_limit="+30"), ["scontrol", "update", "JobId=42", "TimeLimit=+30"]),
        ("top", Params(), ["scontrol", "top", "42"]),
        ("nice", Params(nice=-5), ["scontrol", "update", "JobId=42", "Nice=-5"]),
    ],
)
def test_job_argv(name, params, argv):
    plan = build_plan(name, ["42"], params)
    assert [list(s.argv) for s in plan.steps] == [argv]
    assert plan.targets == ("42",)


@pytest.mark.parametrize(
    ("name", "params", "argv"),
    [
        ("drain", Params(reason="ECC"), ["scontrol", "update", "NodeName=node01", "State=DRAIN", "Reason=ECC"]),
        ("resume", Params(), ["scontrol", "update", "NodeName=node01", "State=RESUME"]),
        ("down", Params(reason="dead"), ["scontrol", "update", "NodeName=node01", "State=DOWN", "Reason=dead"]),
        ("undrain", Params(), ["scontrol", "update", "NodeName=node01", "State=UNDRAIN"]),
        ("reboot", Params(reason="Xid 79"), ["scontrol", "reboot", "ASAP", "nextstate=resume", "reason=Xid 79", "node01"]),
        ("reboot", Params(reason="r", nextstate="down"), ["scontrol", "reboot", "ASAP", "nextstate=down", "reason=r", "node01"]),
    ],
)
def test_node_argv(name, params, argv):
    assert [list(s.argv) for s in build_plan(name, ["node01"], params).steps] == [argv]


def test_every_action_has_a_test_above():
    tested = {"cancel", "signal", "requeue", "requeuehold", "hold", "release", "timelimit", "top", "nice",
              "drain", "resume", "down", "undrain", "reboot", "submit"}  # submit: tests/unit/test_gate.py
    assert set(ACTIONS) == tested


def test_hostile_reason_is_one_argv_element_exactly_as_typed():
    plan = build_plan("drain", ["node01"], Params(reason=HOSTILE))
    argv = plan.steps[0].argv
    assert argv[-1] == "Reason=" + HOSTILE
    assert len(argv) == 5
    reboot = build_plan("reboot", ["node02"], Params(reason=HOSTILE)).steps[0].argv
    assert reboot[4] == "reason=" + HOSTILE and reboot[5] == "node02"


def test_hostlists_expand_one_step_per_node_in_order_without_duplicates():
    plan = build_plan("drain", ["node[01-03]", "node02", "gpu07"], Params(reason="IB link"))
    assert plan.targets == ("node01", "node02", "node03", "gpu07")
    assert [s.argv[2] for s in plan.steps] == ["NodeName=node01", "NodeName=node02", "NodeName=node03", "NodeName=gpu07"]


@pytest.mark.parametrize("bad", ["-p", "--help", "a=b", "node 01", "node\n01", "State=DOWN"])
def test_node_names_that_would_change_the_argv_are_refused(bad):
    with pytest.raises(UsageError, match="bad node name|bad hostlist"):
        expand_nodes([bad])


def test_node_names_with_shell_characters_pass_through_verbatim():
    # Slurm will reject them itself; what matters is that no shell sees them.
    names = expand_nodes(["n;rm", "n$(id)", "n`id`"])
    assert names == ("n;rm", "n$(id)", "n`id`")


@pytest.mark.parametrize("good", ["1", "123", "123_4", "123+1"])
def test_job_ids(good):
    assert check_job_id(good) == good


@pytest.mark.parametrize("bad", ["", "-1", "--user=root", "12;rm", "12 13", "abc", "12_", "1$(id)", "\u0663\u0664", "1\u00b9"])
def test_bad_job_ids_name_the_value(bad):
    with pytest.raises(UsageError) as exc:
        check_job_id(bad)
    assert repr(bad) in str(exc.value)


@pytest.mark.parametrize("name", ["drain", "down", "reboot"])
@pytest.mark.parametrize("reason", [None, "", "   "])
def test_reason_required(name, reason):
    with pytest.raises(UsageError, match="needs a reason"):
        build_plan(name, ["node01"], Params(reason=reason))


def test_reason_refused_where_meaningless():
    with pytest.raises(UsageError, match="takes no reason"):
        build_plan("resume", ["node01"], Params(reason="x"))


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("signal", Params(signal="BOGUS"), "bad signal 'BOGUS'"),
        ("signal", Params(signal="99"), "bad signal"),
        ("signal", Params(signal="USR1", full=True, batch=True), "exclude"),
        ("timelimit", Params(time_limit="2 hours"), "bad time limit '2 hours'"),
        ("timelimit", Params(time_limit="1:2:3:4"), "bad time limit"),
        ("nice", Params(), "bad nice"),
        ("reboot", Params(reason="r", nextstate="drain"), "bad nextstate"),
    ],
)
def test_bad_params(name, params, match):
    with pytest.raises(UsageError, match=match):
        build_plan(name, ["1"] if ACTIONS[name].kind == "job" else ["node01"], params)


def test_unknown_action_and_no_targets():
    with pytest.raises(UsageError, match="unknown action 'explode'"):
        build_plan("explode", ["1"])
    with pytest.raises(UsageError, match="no jobs given"):
        build_plan("cancel", [])


def test_reason_templates():
    assert make_reason(None, "free text; as typed") == "free text; as typed"
    assert make_reason("xid79", None) == REASON_TEMPLATES["xid79"]
    assert make_reason("xid79", "GPU 3") == REASON_TEMPLATES["xid79"] + ": GPU 3"
    assert make_reason("ecc", "  ") == REASON_TEMPLATES["ecc"]
    with pytest.raises(UsageError, match="unknown reason template 'nope'"):
        make_reason("nope", "x")


def test_dangerous_flags_are_declared_in_one_place():
    dangerous = {n for n, s in ACTIONS.items() if s.dangerous}
    assert {"cancel", "signal", "requeue", "drain", "down", "reboot"} <= dangerous
    assert "release" not in dangerous


def test_describe_quotes_for_display():
    plan = build_plan("drain", ["node01"], Params(reason="a b; c"))
    assert plan.describe() == ["scontrol update NodeName=node01 State=DRAIN 'Reason=a b; c'"]


@pytest.mark.parametrize("sig", ["\u00b9", "\u0663", "65", "0"])
def test_bad_signal_numbers_are_one_line_errors(sig):
    # '¹'.isdigit() is True and int('¹') raises: that was a traceback, not an error line
    with pytest.raises(UsageError, match="bad signal"):
        build_plan("signal", ["42"], Params(signal=sig))
