"""Actions through pyslurm behind the gate, and pyslurm's failures, on the real cluster.

Actions: the headless commands with ``--backend pyslurm``, read back from Slurm
with squeue/scontrol (not through pyslurm), audited with the call pyslurm made.
Failures are injected, never waited for:

* controller down: the worker reads a copy of slurm.conf whose SlurmctldPort
  has no listener (loopback; the real slurmctld keeps running);
* permission refused: the worker drops to the cluster's unprivileged user
  after its imports (that user cannot read this venv's interpreter under /root);
* libslurm mismatch: the worker's LD_LIBRARY_PATH puts a library that is not
  libslurm first under the names pyslurm links, so pyslurm no longer loads, as
  after a Slurm upgrade that replaced libslurm under a running cockpit.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import clusterlib
from cockpit.backends.pyslurm_worker import PyslurmWorker
from cockpit.config import Config
from cockpit.core.actions import actions_for_backend, yes_policy
from cockpit.core.audit import read_audit
from cockpit.errors import BackendError
from test_pyslurm_cluster import ROOT, open_backend, require_pyslurm

pytestmark = pytest.mark.cluster
NODE = "node04"


def cockpit(cluster, tmp_path, *args, env=None, timeout=120):
    full = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME=str(tmp_path / "cfg"),
                XDG_STATE_HOME=str(tmp_path / "state"))
    full.update(env or {})
    full.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--backend", "pyslurm", *args],
                          capture_output=True, text=True, env=full, timeout=timeout, cwd=ROOT)


def squeue(job: str) -> tuple[str, str, str]:
    out = clusterlib.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T|%Q|%r"]).stdout.strip()
    state, prio, reason = out.split("|")
    return state, prio, reason


def _results(proc) -> list[dict]:
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    return json.loads(proc.stdout)["results"]


def test_job_actions_go_through_pyslurm_and_are_read_back(cluster, tmp_path):
    require_pyslurm(cluster)
    job = clusterlib.submit("sleep 300", job_name="cockpit-psact", hold=True)
    try:
        (res,) = _results(cockpit(cluster, tmp_path, "job", "release", job, "--yes", "--json"))
        assert res["ok"] and res["argv"] == ["pyslurm", f"Job({job}).release()"], res
        assert res["detail"].startswith("pyslurm ") and squeue(job)[1] != "0"
        (res,) = _results(cockpit(cluster, tmp_path, "job", "hold", job, "--yes", "--json"))
        assert res["ok"] and res["argv"] == ["pyslurm", f"Job({job}).hold()"], res
        assert squeue(job)[1] == "0"
        (res,) = _results(cockpit(cluster, tmp_path, "job", "timelimit", job, "--time", "15", "--yes", "--json"))
        assert res["ok"] and res["argv"][:2] == ["scontrol", "update"], res
        assert res["detail"].endswith("has no call for timelimit)"), res  # "(as a Slurm command: ...)"
        (res,) = _results(cockpit(cluster, tmp_path, "job", "cancel", job, "--yes", "--json"))
        assert res["ok"] and res["argv"] == ["pyslurm", f"Job({job}).cancel()"], res
        # released, the job may have started before it was held again: then it ends
        # through COMPLETING (CI on a busy machine read that once), so wait for the end
        assert squeue(job)[0] in ("CANCELLED", "COMPLETING")
        clusterlib.wait_for(lambda: squeue(job)[0] == "CANCELLED", timeout=60)
    finally:
        clusterlib.cancel(job)
    lines = [r for r in read_audit(tmp_path / "state" / "cockpit" / "audit.jsonl") if r.get("target") == job]
    assert [r["argv"][0] for r in lines] == ["pyslurm", "pyslurm", "scontrol", "pyslurm"]
    assert all(r["executor"].startswith("pyslurm ") for r in lines)


def test_node_drain_and_resume_through_pyslurm(cluster, tmp_path):
    require_pyslurm(cluster)
    reason = "cockpit pyslurm drain; $(id) [bold]x[/]"
    try:
        (res,) = _results(cockpit(cluster, tmp_path, "node", "drain", NODE, "--reason", reason, "--yes", "--json"))
        assert res["ok"] and res["argv"][0] == "pyslurm" and "DRAIN" in res["argv"][1], res
        node = clusterlib.scontrol_show("node", NODE)
        assert "DRAIN" in node["State"] and node["Reason"].startswith(reason)
    finally:
        (res,) = _results(cockpit(cluster, tmp_path, "node", "resume", NODE, "--yes", "--json"))
    assert res["ok"] and res["argv"][0] == "pyslurm", res
    assert "DRAIN" not in clusterlib.scontrol_show("node", NODE)["State"]


def _bad_conf(cluster, tmp_path) -> Path:
    """slurm.conf with SlurmctldPort moved to a loopback port nothing listens on."""
    text = Path(cluster["SLURM_CONF"]).read_text()
    conf = tmp_path / "slurm.conf"
    conf.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=6899", text))
    assert "SlurmctldPort=6899" in conf.read_text()
    return conf


async def test_controller_down_is_one_line(cluster, tmp_path):
    backend = await open_backend(cluster)
    try:
        await backend.fetch_jobs()
        backend.worker.env["SLURM_CONF"] = str(_bad_conf(cluster, tmp_path))
        backend.worker.kill()  # the next request starts a worker that reads the copy
        with pytest.raises(BackendError) as err:
            await backend.fetch_jobs()
        assert str(err.value).startswith("slurmctld does not answer (")
        assert "Unable to contact slurm controller" in str(err.value) and "\n" not in str(err.value)
        assert not backend.switched
    finally:
        await backend.close()


def test_controller_down_at_start_is_one_line_headless(cluster, tmp_path):
    require_pyslurm(cluster)
    proc = cockpit(cluster, tmp_path, "snapshot", env={"SLURM_CONF": str(_bad_conf(cluster, tmp_path))})
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "backend 'pyslurm' asked for but unusable" in lines[0] and "slurmctld does not answer" in lines[0]


def _as_user_python(tmp_path, user: str) -> str:
    """A 'python' for PyslurmWorker that imports everything as root, then runs the
    worker as ``user`` (whose RPCs slurmctld then judges)."""
    script = tmp_path / "worker_as_user.py"
    script.write_text(
        "import os, pwd, sys\n"
        "from cockpit.backends import pyslurm_worker\n"
        "from cockpit.backends.pyslurm_source import Source\n"
        "warm = Source(); warm.info(); list(warm.jobs())  # every import, as root\n"
        f"u = pwd.getpwnam({user!r})\n"
        "os.setgroups([]); os.setgid(u.pw_gid); os.setuid(u.pw_uid)\n"
        "pyslurm_worker.main()\n")
    wrapper = tmp_path / "python-as-user"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")  # ignores "-m MODULE"
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


async def test_permission_refusal_is_one_line(cluster, tmp_path):
    user = cluster["COCKPIT_TEST_UNPRIV_USER"]
    job = clusterlib.submit("sleep 300", job_name="cockpit-psperm", hold=True)  # root's job
    worker = PyslurmWorker(env={"SLURM_CONF": cluster["SLURM_CONF"]}, python=_as_user_python(tmp_path, user))
    backend = await open_backend(cluster, worker=worker)
    try:
        cfg = Config()
        actions = actions_for_backend(backend, cfg, read_only=False, confirm=yes_policy(True))
        actions.audit = None
        outcome = await actions.run("release", [job])
        (res,) = outcome.results
        assert not res.ok and res.argv == ("pyslurm", f"Job({job}).release()")
        # Slurm's own words: "Invalid user id" on 22.05 for another user's job, "Access/permission denied" elsewhere
        assert res.detail.startswith(f"permission refused by Slurm (Job({job}).release()): "), res
        assert "\n" not in res.detail
        assert squeue(job)[1] == "0"  # still held
    finally:
        await backend.close()
        clusterlib.cancel(job)


def _linked() -> set[str]:
    """The libslurm names pyslurm's extension modules need (readelf): libslurm.so.N for 22.5,
    libslurmfull.so for 24.11 (found through its RUNPATH, which LD_LIBRARY_PATH comes before)."""
    import importlib.util

    spec = importlib.util.find_spec("pyslurm")
    assert spec is not None and spec.submodule_search_locations
    so = next(Path(spec.submodule_search_locations[0]).glob("core/job/job*.so"))
    out = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"NEEDED\).*\[(libslurm[^\]]*)\]", out))


def _not_libslurm(tmp_path) -> Path:
    """A directory where the libslurm pyslurm links is another library (zlib)."""
    import ctypes.util

    lib = Path("/lib/x86_64-linux-gnu/libz.so.1")
    if not lib.exists():
        found = ctypes.util.find_library("z")
        assert found, "zlib not found"
        lib = Path("/lib") / found
    d = tmp_path / "not-libslurm"
    d.mkdir()
    for name in _linked():
        (d / name).symlink_to(lib)
    return d


async def test_libslurm_mismatch_at_run_time_switches_to_the_cli(cluster, tmp_path):
    # A pending job: 24.11's squeue --json lists only pending and running jobs (pyslurm and
    # 22.05's squeue also the finished ones slurmctld still keeps).
    job = int(clusterlib.submit("sleep 300", job_name="cockpit-psswitch", hold=True))
    backend = await open_backend(cluster)
    try:
        assert job in {j.job_id for j in await backend.fetch_jobs()}
        assert backend.description.startswith("pyslurm ")
        backend.worker.env["LD_LIBRARY_PATH"] = str(_not_libslurm(tmp_path))
        backend.worker.kill()  # as after an upgrade: the next worker loads the new libslurm
        jobs = await backend.fetch_jobs()
        assert job in {j.job_id for j in jobs}, (backend.switched, len(jobs))  # through the CLI now
        assert backend.switched.startswith("pyslurm ") and "does not load with this libslurm" in backend.switched
        assert "undefined symbol" in backend.switched and "\n" not in backend.switched
        assert backend.description.startswith("slurm-cli on localhost (switched from pyslurm: ")
        snap = await backend.snapshot()
        assert snap.source == backend.description and snap.nodes
        assert f"switched to the slurm-cli backend: {backend.switched}" in snap.errors
        assert type(backend.action_executor(Config())).__name__ == "SlurmExecutor"
    finally:
        await backend.close()
        clusterlib.cancel(job)


def test_libslurm_mismatch_at_start_is_one_line_headless(cluster, tmp_path):
    require_pyslurm(cluster)
    proc = cockpit(cluster, tmp_path, "snapshot", env={"LD_LIBRARY_PATH": str(_not_libslurm(tmp_path))})
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "does not load with this libslurm" in lines[0] and "undefined symbol" in lines[0]


def test_auto_falls_back_to_the_cli_when_libslurm_does_not_match(cluster, tmp_path):
    require_pyslurm(cluster)
    full = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME=str(tmp_path / "cfg"),
                LD_LIBRARY_PATH=str(_not_libslurm(tmp_path)))
    proc = subprocess.run([sys.executable, "-m", "cockpit.cli", "doctor", "--json"], capture_output=True,
                          text=True, env=full, timeout=120, cwd=ROOT)
    info = json.loads(proc.stdout)
    assert info["backend"] == "slurm-cli", proc.stderr
    assert "does not load with this libslurm" in info["backend_reason"]
    if "libslurmfull.so" not in _linked():  # Slurm's commands link libslurmfull.so: they still work
        assert proc.returncode == 0 and info["controller"].startswith("answering ("), info
    assert info["pyslurm"]["chosen"] is False and "undefined symbol" in info["pyslurm"]["why"]
