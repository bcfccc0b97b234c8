"""The slurmrestd backend against the test cluster's real slurmrestd (JWT, 127.0.0.1):
the snapshot agrees with the CLI backend, a release goes through the gate (confirmed,
audited, read back), a bad token is one line and exit 3, and the token is never shown."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from clusterlib import cancel, stop_process, submit, wait_for

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
BAD = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJjb2NrcGl0LXVzZXIifQ.c2lnbmF0dXJl"  # right shape, wrong signature


@pytest.fixture
def rest(cluster):
    if "SLURMRESTD_URL" not in cluster:
        pytest.skip("the test cluster's env.sh names no slurmrestd (SLURMRESTD_URL)")
    return cluster


def cockpit(cluster, *args, env_extra=None, drop=(), timeout=60, home=None):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME="/nonexistent-cockpit-test",
               SLURMRESTD_URL=cluster["SLURMRESTD_URL"], SLURM_JWT=cluster["COCKPIT_TEST_SLURM_JWT"])
    if home is not None:
        env["XDG_STATE_HOME"] = str(home)
    env.pop("COCKPIT_CONFIG", None)
    env.update(env_extra or {})
    for k in drop:
        env.pop(k, None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def _snap(cluster, backend):
    proc = cockpit(cluster, "--backend", backend, "snapshot", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_snapshot_through_slurmrestd_equals_the_cli_backends(rest):
    job = submit("sleep 300", hold=True, job_name="rest-contract")
    try:
        for _ in range(5):  # a live cluster moves: compare a quiet moment
            cli, via = _snap(rest, "slurm-cli"), _snap(rest, "slurmrestd")
            nodes = [[(n["name"], n["state"], n["gpus"]) for n in s["nodes"]] for s in (cli, via)]
            jobs = [sorted((j["job_id"], j["state"]) for j in s["jobs"]) for s in (cli, via)]
            if nodes[0] == nodes[1] and jobs[0] == jobs[1]:
                break
        assert nodes[0] == nodes[1] and jobs[0] == jobs[1]
        assert int(job) in {j for j, _ in jobs[1]}
        assert via["source"].startswith("slurmrestd v0.0.") and rest["SLURMRESTD_URL"] in via["source"]
        assert cli["source"].startswith("slurm-cli")
    finally:
        cancel(job)


def test_a_release_through_slurmrestd_is_confirmed_audited_and_read_back(rest, tmp_path):
    job = submit("sleep 300", hold=True, job_name="rest-release", uid=rest["COCKPIT_TEST_UNPRIV_USER"])
    try:
        # without --yes: the exact request is shown and nothing is sent
        asked = cockpit(rest, "--backend", "slurmrestd", "job", "release", job, home=tmp_path)
        assert asked.returncode == 2 and job in asked.stdout + asked.stderr
        assert _held(job)
        done = cockpit(rest, "--backend", "slurmrestd", "job", "release", job, "--yes", home=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "read back" in done.stdout and not _held(job)
        lines = [json.loads(x) for x in (tmp_path / "cockpit" / "audit.jsonl").read_text().splitlines()]
        ran = [x for x in lines if x["result"] == "done"]
        assert len(ran) == 1 and ran[0]["target"] == job
        method, path = ran[0]["argv"][1:3]
        assert ran[0]["argv"][0] == "slurmrestd" and method == "POST" and path.endswith(f"/job/{job}")
        assert "as cockpit-user" in ran[0]["executor"]  # who Slurm saw act: the token's user
        text = (tmp_path / "cockpit" / "audit.jsonl").read_text() + done.stdout + done.stderr
        assert rest["COCKPIT_TEST_SLURM_JWT"] not in text  # the token is a secret: never audited or printed
    finally:
        cancel(job)


def _held(job: str) -> bool:
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%Q %r"], capture_output=True, text=True).stdout.split()
    return bool(out) and (out[0] == "0" or "Held" in out[-1])


@pytest.mark.parametrize("token, why", [(BAD, "not accepted"),
                                        ("eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJ4IiwiZXhwIjoxMDB9.c2ln", "expired")])
def test_a_bad_token_is_one_line_and_exit_3(rest, token, why):
    proc = cockpit(rest, "--backend", "slurmrestd", "snapshot", env_extra={"SLURM_JWT": token})
    assert proc.returncode == 3, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and why in proc.stderr
    assert token not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr


def test_no_token_and_a_loose_token_file(rest, tmp_path):
    none = cockpit(rest, "--backend", "slurmrestd", "snapshot", drop=("SLURM_JWT",))
    assert none.returncode == 3 and "needs a token" in none.stderr
    tok = tmp_path / "jwt"
    tok.write_text(f"SLURM_JWT={rest['COCKPIT_TEST_SLURM_JWT']}\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[rest]\ntoken_file = "{tok}"\n')
    os.chmod(tok, 0o644)
    loose = cockpit(rest, "--config", str(cfg), "--backend", "slurmrestd", "snapshot", drop=("SLURM_JWT",))
    assert loose.returncode == 2 and "readable by others" in loose.stderr
    os.chmod(tok, 0o600)
    ok = cockpit(rest, "--config", str(cfg), "--backend", "slurmrestd", "snapshot", "--format", "json",
                 drop=("SLURM_JWT",))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["nodes"]


def test_slurmrestd_on_a_unix_socket(rest):
    """A second slurmrestd of our own on a unix socket (started and stopped by PID). Its
    folder is outside pytest's (0700, root's): slurmrestd works on the socket as its
    unprivileged user (cockpit-rest; nobody before env.sh named it)."""
    sock_dir = Path(tempfile.mkdtemp(prefix="cockpit-rest-"))
    os.chmod(sock_dir, 0o777)
    sock = sock_dir / "slurmrestd.sock"
    plugins = "openapi/v0.0.38" if rest["COCKPIT_TEST_SLURM_VERSION"].startswith("22.") else "openapi/slurmctld"
    proc = subprocess.Popen([shutil.which("slurmrestd") or "/usr/sbin/slurmrestd", "-f", rest["SLURM_CONF"],
                             "-a", "rest_auth/jwt", "-s", plugins, "-u", rest.get("COCKPIT_TEST_REST_DAEMON_USER", "nobody"),
                             f"unix:{sock}"],
                            env=dict(os.environ, SLURM_JWT="daemon", SLURM_CONF=rest["SLURM_CONF"]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        wait_for(lambda: sock.exists() or proc.poll() is not None, timeout=30)
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-500:]
        snap = cockpit(rest, "--backend", "slurmrestd", "snapshot", "--format", "json",
                       env_extra={"SLURMRESTD_URL": f"unix:{sock}"})
        assert snap.returncode == 0, snap.stderr
        doc = json.loads(snap.stdout)
        assert doc["source"].endswith(f"unix:{sock}") and {n["name"] for n in doc["nodes"]} == set(
            rest["COCKPIT_TEST_NODES"].split())
    finally:
        stop_process(proc)
        shutil.rmtree(sock_dir, ignore_errors=True)


def _fleet_config(tmp_path, rest, extra=""):
    cfg = tmp_path / "fleet.toml"
    cfg.write_text('[clusters.cli]\nbackend = "slurm-cli"\n\n'
                   f'[clusters.rest]\nbackend = "slurmrestd"\nrest_url = "{rest["SLURMRESTD_URL"]}"\n' + extra)
    return cfg


def test_cluster_all_gives_one_snapshot_per_cluster_keyed_by_name(rest, tmp_path):
    cfg = _fleet_config(tmp_path, rest)
    proc = cockpit(rest, "--config", str(cfg), "--cluster", "all", "snapshot", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["clusters"]
    assert set(got) == {"cli", "rest"}
    assert got["cli"]["source"].startswith("slurm-cli") and got["rest"]["source"].startswith("slurmrestd")
    names = set(rest["COCKPIT_TEST_NODES"].split())
    assert {n["name"] for n in got["cli"]["nodes"]} == names == {n["name"] for n in got["rest"]["nodes"]}


def test_one_unreachable_cluster_costs_that_cluster_only(rest, tmp_path):
    cfg = _fleet_config(tmp_path, rest, '\n[clusters.gone]\nbackend = "slurmrestd"\nrest_url = "http://127.0.0.1:6899"\n')
    proc = cockpit(rest, "--config", str(cfg), "--cluster", "all", "snapshot", "--format", "json")
    assert proc.returncode == 3
    got = json.loads(proc.stdout)["clusters"]
    assert "cannot reach slurmrestd" in got["gone"]["error"] and got["cli"]["nodes"] and got["rest"]["nodes"]
    assert "cluster gone:" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_audit_lines_name_the_cluster(rest, tmp_path):
    cfg = _fleet_config(tmp_path, rest)
    job = submit("sleep 300", hold=True, job_name="rest-audit", uid=rest["COCKPIT_TEST_UNPRIV_USER"])
    try:
        done = cockpit(rest, "--config", str(cfg), "--cluster", "rest", "job", "release", job, "--yes", home=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = [json.loads(x) for x in (tmp_path / "cockpit" / "audit.jsonl").read_text().splitlines()]
        assert lines and all(x["cluster"] == "rest" for x in lines)
    finally:
        cancel(job)
