"""Accounting over slurmrestd's /slurmdb endpoints on recorded answers
(tests/data/slurmrestd-22.05/slurmdb-*.json, from the test cluster's slurmrestd):
the query's parameters per API version, the CLI's sacct JSON reader over them,
22.05's untrusted exit codes left unknown, one job, and what REST does not serve."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cockpit.backends import rest_accounting as ra
from cockpit.backends.accounting import AccountingUnavailable, JobQuery
from cockpit.errors import BackendError

REST = Path(__file__).resolve().parents[1] / "data" / "slurmrestd-22.05"
NOW = 1_796_200_000.0


class Recorded:
    """Answers each path with a recorded body (a replay of real answers, as the replay
    backend does for commands), and keeps what was asked."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, dict | None]] = []

    async def get(self, path: str, params: dict | None = None) -> bytes:
        self.asked.append((path, params))
        return (REST / self.answers[path]).read_bytes()


def _reader(answers: dict[str, str], params=None) -> tuple[ra.RestAccounting, Recorded]:
    client = Recorded(answers)
    openapi = json.loads((REST / "openapi-v3.json").read_text())
    return ra.RestAccounting(client, "v0.0.38", params or ra.jobs_params(openapi, "v0.0.38"), clock=lambda: NOW), client


def test_the_query_parameters_come_from_the_servers_openapi():
    openapi = json.loads((REST / "openapi-v3.json").read_text())
    names = ra.jobs_params(openapi, "v0.0.38")
    assert {"start_time", "end_time", "state", "partition", "account", "node", "skip_steps"} <= names
    assert "users" not in names  # 22.05 has none: filtered by cockpit
    assert ra.jobs_params({"paths": {}}, "v0.0.38") == ra._V38_PARAMS
    assert "users" in ra.jobs_params({"paths": {}}, "v0.0.41")
    later = {"paths": {"/slurmdb/v0.0.42/jobs/": {"get": {"parameters": [{"name": "users"}, {"name": "state"}]}}}}
    assert ra.jobs_params(later, "v0.0.42") == {"users", "state"}


def test_a_query_is_bounded_like_saccts_and_filters_here_what_the_version_cannot():
    acct, _ = _reader({})
    q = JobQuery(start=int(NOW) - 3600, end=int(NOW) - 60, states=("COMPLETED", "FAILED"), users=("alice",),
                 partitions=("gpu",), nodes="node[01-02]")
    params, bounds, here = acct.query(q, NOW)
    assert params == {"start_time": "now-3600seconds", "end_time": "now-60seconds", "skip_steps": "true",
                      "state": "COMPLETED,FAILED", "node": "node[01-02]", "partition": "gpu"}
    assert here == {"users": ("alice",)} and any("users filtered by cockpit" in b for b in bounds)
    acct.params = acct.params | {"users"}
    params, _, here = acct.query(q, NOW)
    assert params["users"] == "alice" and here == {}
    acct.dbapi = "v0.0.42"  # data_parser: one flag per state, the parameter repeated
    assert acct.query(q, NOW)[0]["state"] == ["COMPLETED", "FAILED"]


def test_finished_jobs_read_with_the_cli_reader_and_22_05_exit_codes_unknown():
    acct, client = _reader({"/slurmdb/v0.0.38/jobs": "slurmdb-jobs.json"})
    ans = asyncio.run(acct.jobs(JobQuery(start=int(NOW) - 10800, partitions=("debug",))))
    jobs = {j.job_id: j for j in ans.items}
    assert sorted(jobs) == ["9715", "9716"] and not ans.warnings
    ok, bad = jobs["9715"], jobs["9716"]
    assert (ok.state, ok.exit_code, ok.nodes, ok.elapsed_s) == ("COMPLETED", 0, ("node01",), 2)
    assert ok.alloc_tres["cpu"] == 1 and ok.alloc_tres["mem"] == 1000 and ok.partition == "debug"
    assert bad.state == "FAILED" and bad.exit_code is None  # the JSON says 0; sacct -P says 3
    assert "left unknown" in ans.costs[0].command and ans.costs[0].records == 2
    assert client.asked[0][1]["partition"] == "debug" and client.asked[0][1]["end_time"] == "now"


def test_a_users_filter_on_v0_0_38_is_applied_here():
    acct, _ = _reader({"/slurmdb/v0.0.38/jobs": "slurmdb-jobs.json"})
    assert asyncio.run(acct.jobs(JobQuery(start=0, users=("nobody-here",)))).items == ()
    assert len(asyncio.run(acct.jobs(JobQuery(start=0, users=("root",)))).items) == 2


def test_one_job_with_its_steps_and_an_unknown_id():
    acct, _ = _reader({"/slurmdb/v0.0.38/job/9715": "slurmdb-job.json",
                       "/slurmdb/v0.0.38/job/999999999": "slurmdb-job-not-found.json"})
    found = asyncio.run(acct.job("9715"))
    (job,) = found.items
    assert [s.step_id for s in job.steps] == ["batch", "0", "1"]
    assert all(s.state == "COMPLETED" and s.exit_code == 0 for s in job.steps)
    assert found.costs[0].bounds == ("job 9715",) and "left unknown" not in found.costs[0].command  # COMPLETED: 0
    assert asyncio.run(acct.job("999999999")).items == ()


def test_slurms_words_when_slurmdbd_refuses_the_query():
    acct, _ = _reader({"/slurmdb/v0.0.38/jobs": "slurmdb-jobs-bad-time.json"})
    with pytest.raises(BackendError, match="Unable to parse time format"):
        asyncio.run(acct.jobs(JobQuery(start=0)))


def test_what_rest_does_not_serve_is_said_in_one_line():
    acct, _ = _reader({})
    events = asyncio.run(acct.node_events("", 0))
    assert events.items == () and "serves no node events" in events.warnings[0]
    with pytest.raises(AccountingUnavailable, match="sshare"):
        asyncio.run(acct.shares())
    with pytest.raises(AccountingUnavailable, match="assoc_mgr"):
        asyncio.run(acct.limits())


def test_the_tres_slurmdbd_knows():
    names = asyncio.run(ra.tres_names(Recorded({"/slurmdb/v0.0.38/tres": "slurmdb-tres.json"}), "v0.0.38"))
    assert "gres/gpuutil" in names.split(",") and names.startswith("cpu,mem")


def test_no_slurmdb_api_is_no_accounting_with_the_reason():
    from cockpit.backends.rest_client import RestSettings
    from cockpit.backends.slurmrestd import SlurmRestBackend

    b = SlurmRestBackend(RestSettings(url="http://127.0.0.1:9"), client=object())
    offer = b.capabilities().accounting
    assert asyncio.run(offer.accounting()) is None and "serves no slurmdb API" in offer.accounting_why
