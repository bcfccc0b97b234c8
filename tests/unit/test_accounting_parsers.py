"""The accounting parsers on real outputs recorded from the test cluster
(tests/data/slurm-*/accounting/, made by tests/cluster/record-accounting)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cockpit.backends import accounting_json as aj
from cockpit.backends import accounting_text as at
from cockpit.backends.accounting import accounting_why, parse_show_config
from cockpit.backends.accounting_limits import parse_assoc_mgr
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data"
VERSIONS = ("slurm-22.05", "slurm-24.11")


def rec(version: str, name: str) -> str:
    return (DATA / version / "accounting" / name).read_text()


def state(version: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", rec(version, "state.txt").splitlines()[0])}


def by_name(jobs, name):
    return [j for j in jobs if j.name == name][-1]


@pytest.mark.parametrize("version", VERSIONS)
def test_parsable_history_has_each_outcome(version):
    jobs = at.parse_sacct_parsable(rec(version, "sacct-X.txt"))
    ok, fail = by_name(jobs, "rec-acct-ok"), by_name(jobs, "rec-acct-fail")
    cancel, timeout = by_name(jobs, "rec-acct-cancel"), by_name(jobs, "rec-acct-timeout")
    assert (ok.state, ok.exit_code) == ("COMPLETED", 0) and 2 <= ok.elapsed_s <= 4  # sleep 2
    assert (fail.state, fail.exit_code) == ("FAILED", 3)
    assert cancel.state == "CANCELLED"  # "CANCELLED by 0" on 24.11
    assert timeout.state == "TIMEOUT" and timeout.time_limit == 1 and timeout.elapsed_s >= 60
    assert ok.nodes == ("node01",) and ok.alloc_tres["mem"] == 1000 and ok.time_limit is None
    gpu = by_name(jobs, "rec-acct-gpu")
    assert gpu.gpus == 2 and gpu.cpus == 1
    assert all(j.job_id == str(j.job_id_raw) for j in jobs)


@pytest.mark.parametrize("version", VERSIONS)
def test_parsable_steps_belong_to_their_job(version):
    (job,) = at.parse_sacct_parsable(rec(version, "sacct-job-steps.txt"))
    assert [s.step_id for s in job.steps] == ["batch", "0"]
    assert job.steps[1].name == "sleep" and job.steps[0].total_cpu_s is not None


@pytest.mark.parametrize("version", VERSIONS)
def test_json_history_matches_parsable_except_2205_exit_codes(version):
    doc = aj.load((DATA / version / "accounting" / "sacct-X.json").read_bytes())
    jobs = aj.parse_sacct_json(doc, steps=False)
    text = {j.job_id: j for j in at.parse_sacct_parsable(rec(version, "sacct-X.txt"))}
    fail = by_name(jobs, "rec-acct-fail")
    if version == "slurm-22.05":
        # The recorded bug: 22.05's JSON says 0/SUCCESS for a script that exited 3.
        assert not aj.exit_codes_trusted(doc) and fail.exit_code == 0
    else:
        assert aj.exit_codes_trusted(doc) and fail.exit_code == 3
    assert text[fail.job_id].exit_code == 3
    for j in jobs:
        t = text[j.job_id]
        assert (j.state, j.elapsed_s, j.nodes, j.time_limit, j.gpus) == (t.state, t.elapsed_s, t.nodes, t.time_limit, t.gpus)
        assert j.alloc_tres.get("mem") == t.alloc_tres.get("mem")


@pytest.mark.parametrize("version", VERSIONS)
def test_json_steps_and_usage(version):
    doc = aj.load((DATA / version / "accounting" / "sacct-steps.json").read_bytes())
    jobs = aj.parse_sacct_json(doc)
    gpu = by_name(jobs, "rec-acct-gpu")
    assert [s.step_id for s in gpu.steps] == ["batch", "0"] and gpu.gpus == 2
    timeout = by_name(jobs, "rec-acct-timeout")
    assert 0 < timeout.steps[0].tres_in_max["mem"] < 100  # peak RSS in MB (bytes in the JSON)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_failed_jobs_exit_code_in_sacct_text(version):
    line = next(ln for ln in rec(version, "sacct-failed-exit.txt").splitlines() if "FAILED" in ln and "." not in ln.split()[0])
    assert line.split()[3] == "3:0"


@pytest.mark.parametrize("version", VERSIONS)
def test_node_events_two_drains_with_reason_user_time(version):
    events = at.parse_events(rec(version, "sacctmgr-events.txt"))
    mine = [e for e in events if e.reason.startswith("rec: Xid 79")][-2:]
    assert [e.reason for e in mine] == ["rec: Xid 79 GPU has fallen off the bus", "rec: Xid 79 again"]
    assert all(e.node == "node03" and e.user == "root" and e.kind == "drain" for e in mine)
    assert mine[0].start < mine[0].end <= mine[1].start < mine[1].end


@pytest.mark.parametrize("version", VERSIONS)
def test_sprio_sshare_reservation(version):
    s = state(version)
    prio = {p.job_id: p for p in at.parse_sprio(rec(version, "sprio.txt"))}
    qos_wait = prio[s["qos_wait"]]
    assert qos_wait.priority == 1346 and qos_wait.factors["partition"] == 1000 and qos_wait.factors["fairshare"] == 333
    shares = at.parse_sshare(rec(version, "sshare.txt"))
    assert ("research", "cockpit-user") in {(x.account, x.user) for x in shares}
    (res,) = at.parse_reservations(rec(version, "scontrol-show-reservation.txt"))
    assert res.name == "rec-maint" and res.is_maintenance and res.nodes == ("node04",)
    assert res.end - res.start == 3600 and res.users == ("root",) and res.state == "INACTIVE"


@pytest.mark.parametrize("version", VERSIONS)
def test_assoc_mgr_qos_limit_with_usage(version):
    state_ = parse_assoc_mgr(rec(version, "assoc-mgr-qos.txt"))
    (qos,) = state_.qos
    assert qos.name == "gpu8" and qos.limits == ()
    (limits,) = qos.per_user.values()  # "root(0)" on 24.11, the uid "0" on 22.05
    (lim,) = limits
    assert (lim.key, lim.tres, lim.limit, lim.used) == ("MaxTRESPU", "gres/gpu", 8, 8)
    assocs = parse_assoc_mgr(rec(version, "assoc-mgr-assoc-root.txt")).assocs
    assert {(a.account, a.user) for a in assocs} >= {("root", "root"), ("research", "root")}


@pytest.mark.parametrize("version", VERSIONS)
def test_config_says_accounting_is_there(version):
    config = parse_show_config(rec(version, "scontrol-show-config.txt"))
    assert config["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert accounting_why(config) == ""
    assert "gres/gpuutil" in config["AccountingStorageTRES"]


def test_no_slurmdbd_is_one_line():
    why = accounting_why({"AccountingStorageType": "accounting_storage/none"})
    assert why.startswith("accounting is not configured") and "\n" not in why


def test_values_and_errors():
    assert at.parse_tres("cpu=2,mem=2G,gres/gpu=8,mem=512K") == {"cpu": 2, "mem": 0.5, "gres/gpu": 8}
    assert at.parse_exit("0:15") == (0, 15) and at.parse_exit("3:0") == (3, None)
    assert at.duration_seconds("1-02:03:04") == 93784 and at.duration_seconds("00:01.500") == 1.5
    with pytest.raises(ParseError, match="SLURM_TIME_FORMAT"):
        at.epoch("2026-12-01T08:00:00", "Start", "sacct")
    with pytest.raises(ParseError, match="expected 23 fields"):
        at.parse_sacct_parsable("1|2|3")
    # The job name is the last field and may hold the separator.
    line = "|".join(["5", "5", "u", "a", "p", "normal", "COMPLETED", "0:0", "0:0", "1", "2", "3", "1",
                     "UNLIMITED", "1", "n1", "cpu=1", "cpu=1", "00:00:01", "", "", "None", "a|b|[bold]x"])
    (job,) = at.parse_sacct_parsable(line)
    assert job.name == "a|b|[bold]x" and job.nodes == ("n1",)


def test_a_newline_in_a_job_name_or_reason_continues_the_record():
    fields = ["7", "7", "u", "a", "p", "normal", "FAILED", "1:0", "0:0", "1", "2", "3", "1", "UNLIMITED", "1",
              "n1", "cpu=1", "cpu=1", "00:00:01", "", "", "None", "act; $(x)"]
    nxt = ["8"] + fields[1:-1] + ["plain"]
    text = "|".join(fields) + "\nline2 [bold]|x|\n" + "|".join(nxt) + "\n"
    first, second = at.parse_sacct_parsable(text)
    assert first.name == "act; $(x)\nline2 [bold]|x|" and first.state == "FAILED" and second.name == "plain"
    events = at.parse_events("node03|10|20|DRAIN|root(0)|two\nlines|a\nnode03|30|40|DOWN|root(0)|b\n")
    assert [e.reason for e in events] == ["two\nlines|a", "b"]
