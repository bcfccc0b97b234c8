"""The slurmrestd backend's pieces on recorded answers (tests/data/slurmrestd-22.05, and
24.11's scontrol show partition --json, which is v0.0.40+'s /partitions document):
version choice, partitions, token handling, the read-back rules, redaction."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path

import pytest

from cockpit.backends import rest_client as rc
from cockpit.backends import slurmrestd as sr
from cockpit.errors import BackendError, ConfigError

DATA = Path(__file__).resolve().parents[1] / "data"
REST = DATA / "slurmrestd-22.05"


def _jwt(claims: dict) -> str:
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256'})}.{part(claims)}.c2lnbmF0dXJl"


def test_the_version_is_chosen_from_the_servers_openapi_paths():
    slurm, slurmdb = rc.served_versions((REST / "openapi-v3.json").read_bytes())
    assert slurm == {"v0.0.38"} and slurmdb == {"v0.0.38"}
    assert rc.choose_version(slurm) == "v0.0.38"
    assert rc.choose_version({"v0.0.38", "v0.0.42", "v0.0.41"}) == "v0.0.42"
    with pytest.raises(BackendError) as err:
        rc.choose_version({"v0.0.36", "v0.0.37"})
    assert "v0.0.36, v0.0.37" in str(err.value) and "\n" not in str(err.value)


def test_the_release_comes_from_meta():
    assert sr._release((REST / "ping.json").read_bytes()) == "22.05.8"


def test_partitions_of_v0_0_38_and_of_v0_0_40_on():
    old = sr.parse_rest_partitions((REST / "partitions.json").read_bytes(), "test")
    by = {p.name: p for p in old}
    assert by["gpu"].is_default and by["gpu"].nodes == ("node01", "node02", "node03", "node04")
    assert by["gpu"].max_time is None and by["gpu"].total_cpus == 64  # -1: UNLIMITED
    assert by["debug"].nodes == ("node01", "node02") and not by["debug"].is_default
    new = sr.parse_rest_partitions((DATA / "slurm-24.11" / "scontrol-show-partition.json").read_bytes(), "test")
    assert {p.name for p in new} == {"gpu", "debug"}
    assert all(p.nodes and p.state == "UP" for p in new)


def test_a_partition_record_that_cannot_be_read_costs_that_record_only():
    doc = json.loads((REST / "partitions.json").read_text())
    doc["partitions"][1]["nodes"] = "node[zz"  # not a hostlist
    parts = sr.parse_rest_partitions(json.dumps(doc).encode(), "test")
    assert [p.name for p in parts] == [doc["partitions"][0]["name"]]


def test_token_claims_user_and_expiry():
    tok = _jwt({"sun": "alice", "exp": 1_000, "iat": 900})
    assert sr.token_user(tok) == "alice"
    with pytest.raises(rc.RestAuthError) as err:
        sr.refuse_expired(tok, now=2_000)
    assert "expired" in str(err.value) and "alice" in str(err.value) and tok not in str(err.value)
    sr.refuse_expired(tok, now=999)  # still valid: no error
    assert sr.token_user("not-a-jwt") == "" and sr.token_claims("a.b.c") == {}


def test_a_token_file_others_can_read_is_refused(tmp_path):
    f = tmp_path / "token"
    f.write_text("SLURM_JWT=" + _jwt({"sun": "bob"}) + "\n")
    os.chmod(f, 0o644)
    with pytest.raises(ConfigError) as err:
        rc.read_token_file(str(f))
    assert "readable by others (mode 0644)" in str(err.value) and "chmod 600" in str(err.value)
    os.chmod(f, 0o600)
    assert rc.read_token_file(str(f)) == _jwt({"sun": "bob"})
    f.write_text("\n\n")
    with pytest.raises(ConfigError, match="holds no token"):
        rc.read_token_file(str(f))


def test_slurm_jwt_wins_then_the_file_then_the_command(tmp_path):
    f = tmp_path / "token"
    f.write_text("from-file\n")
    os.chmod(f, 0o600)
    s = rc.RestSettings(url="http://127.0.0.1:1", token_file=str(f), token_command=("echo", "SLURM_JWT=from-cmd"))
    assert asyncio.run(rc.find_token(s, {"SLURM_JWT": "from-env"})) == "from-env"
    assert asyncio.run(rc.find_token(s, {})) == "from-file"
    s2 = rc.RestSettings(url="http://127.0.0.1:1", token_command=("echo", "SLURM_JWT=from-cmd"))
    assert asyncio.run(rc.find_token(s2, {})) == "from-cmd"
    with pytest.raises(rc.RestAuthError, match="needs a token"):
        asyncio.run(rc.find_token(rc.RestSettings(url="http://127.0.0.1:1"), {}))
    with pytest.raises(ConfigError, match="not found"):
        asyncio.run(rc.find_token(rc.RestSettings(url="x", token_command=("/nonexistent/scontrol",)), {}))


def test_urls_are_checked_and_unix_sockets_need_a_path():
    with pytest.raises(ConfigError, match="absolute path"):
        rc.RestClient(rc.RestSettings(url="unix:relative.sock"), "t")
    with pytest.raises(ConfigError, match="expected http"):
        rc.RestClient(rc.RestSettings(url="ftp://x"), "t")


def test_a_token_is_redacted_from_any_message():
    tok = _jwt({"sun": "root"})
    assert tok not in rc.redact(f"server said: bad token {tok} here")
    assert "<token>" in rc.redact(f"x {tok}")


def test_the_refused_token_answer_names_slurms_words():
    said = sr._errors((REST / "diag-refused-token.json").read_bytes())
    assert "Unspecified error" in said and "request failed" in said


def test_read_back_rules():
    assert sr._job_problem("release", {"job_state": "PENDING", "priority": 0, "state_reason": "JobHeldUser"})
    assert sr._job_problem("release", {"job_state": "PENDING", "priority": 2013, "state_reason": "None"}) is None
    assert sr._job_problem("hold", {"job_state": "PENDING", "priority": 5, "state_reason": "Priority"})
    assert "already finished" in sr._job_problem("cancel", {"job_state": "COMPLETED", "priority": 0})
    assert sr.node_state_problem("drain", "IDLE") and sr.node_state_problem("drain", "IDLE+DRAIN") is None


def test_the_v0_0_38_executor_says_what_it_cannot_do_before_sending():
    from cockpit.models.actions import Params, Step
    from cockpit.core.actions import ACTIONS

    b = sr.SlurmRestBackend(rc.RestSettings(url="http://127.0.0.1:9"), client=object())
    b.api = "v0.0.38"
    ex = sr.RestExecutor(b)
    assert ex.supports(ACTIONS["release"]) and ex.supports(ACTIONS["cancel"])
    assert not ex.supports(ACTIONS["drain"]) and not ex.supports(ACTIONS["requeue"])
    res = asyncio.run(ex.execute(ACTIONS["drain"], Step("node01", ("scontrol", "update")), Params(reason="x")))
    assert res.status == "failed" and "v0.0.38 cannot drain" in res.detail
    b.api = "v0.0.42"
    assert ex.supports(ACTIONS["drain"])
