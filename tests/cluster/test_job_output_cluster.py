"""``cockpit job tail`` finds a job's output on the real test cluster, whatever its
Slurm version reports (issue 16, item 8).

Slurm 22.05's ``squeue --json`` gives ``standard_output`` "" (or "/dev/null" on some
builds) for ``sbatch`` without ``-o``, and the unexpanded pattern for ``-o %x-%j.out``;
newer versions may give the expanded path. The tests assert what the operator
sees (the job's own line, the file named on stderr), never the intermediate
field, so they hold on 22.05 here and on 24.11 in the Debian 13 chroot run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from clusterlib import cancel, run, wait_for

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def cockpit(cluster, *args, backend: str = "slurm-cli"):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"], XDG_CONFIG_HOME="/nonexistent-cockpit-test",
               XDG_STATE_HOME=str(Path(os.environ.get("TMPDIR", "/tmp")) / "cockpit-job-output-state"))
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--backend", backend, *args],
                          capture_output=True, text=True, env=env, timeout=90, cwd=ROOT)


def sbatch(*flags: str, wrap: str, workdir: Path) -> str:
    """sbatch exactly as an operator types it: no -o unless given."""
    res = run(["sbatch", "--parsable", f"--chdir={workdir}", "--time=5", *flags, f"--wrap={wrap}"])
    return res.stdout.strip().split(";", 1)[0]


def wait_file(path: Path, text: str) -> None:
    wait_for(lambda: path.exists() and text in path.read_text(), timeout=60)


@pytest.fixture
def workdir(tmp_path):
    tmp_path.chmod(0o777)
    return tmp_path


@pytest.mark.parametrize("backend", ["slurm-cli", "auto"])
def test_default_output_path_is_followed(cluster, workdir, backend):
    tag = f"hello-default-{uuid.uuid4().hex[:6]}"
    job = sbatch(wrap=f"echo {tag}; sleep 60", workdir=workdir)
    try:
        wait_file(workdir / f"slurm-{job}.out", tag)
        proc = cockpit(cluster, "job", "tail", job, backend=backend)
        assert proc.returncode == 0, proc.stderr
        assert tag in proc.stdout
        assert f"slurm-{job}.out" in proc.stderr
    finally:
        cancel(job)


def test_pattern_output_path_is_expanded(cluster, workdir):
    tag = f"hello-pattern-{uuid.uuid4().hex[:6]}"
    # Still running when it is tailed: 24.11's squeue --json lists no finished job.
    job = sbatch("--job-name=patt", "--output=%x-%j.out", wrap=f"echo {tag}; sleep 60", workdir=workdir)
    try:
        wait_file(workdir / f"patt-{job}.out", tag)
        proc = cockpit(cluster, "job", "tail", job)
        assert proc.returncode == 0, proc.stderr
        assert tag in proc.stdout and f"patt-{job}.out" in proc.stderr
    finally:
        cancel(job)


@pytest.mark.parametrize("flags", [("--output=%x-%A_%a.out",), ()], ids=["pattern", "default"])
def test_array_task_output(cluster, workdir, flags):
    tag = f"hello-array-{uuid.uuid4().hex[:6]}"
    job = sbatch("--job-name=arr", "--array=0-1", *flags, wrap=f"echo {tag}-$SLURM_ARRAY_TASK_ID; sleep 60",
                 workdir=workdir)
    name = f"arr-{job}_1.out" if flags else f"slurm-{job}_1.out"
    try:
        wait_file(workdir / name, f"{tag}-1")
        proc = cockpit(cluster, "job", "tail", f"{job}_1")
        assert proc.returncode == 0, proc.stderr
        assert f"{tag}-1" in proc.stdout and name in proc.stderr
    finally:
        cancel(job)


def test_pending_job_has_no_output_yet(cluster, workdir):
    job = sbatch("--begin=now+3600", wrap="true", workdir=workdir)
    try:
        proc = cockpit(cluster, "job", "tail", job)
        assert proc.returncode != 0
        assert "pending: no output yet" in proc.stderr
        assert "No such file" not in proc.stderr
    finally:
        cancel(job)


def test_a_hostile_job_name_cannot_redirect_the_tail(cluster, workdir):
    """scontrol's one-line output carries the name verbatim: "StdOut=/etc/shadow" in it
    is text, and only the default path or /dev/null is believed."""
    from cockpit.backends.slurm_cli import SlurmCliBackend
    from cockpit.core.joblog import default_output, find_job, trusted_output
    from cockpit.runner import LocalRunner

    tag = f"hello-hostile-{uuid.uuid4().hex[:6]}"
    hostile = "x StdIn=/dev/null StdOut=/etc/shadow StdErr=/etc/shadow"
    job = sbatch(f"--job-name={hostile}", f"--comment={hostile}", wrap=f"echo {tag}; sleep 60", workdir=workdir)
    try:
        wait_file(workdir / f"slurm-{job}.out", tag)

        async def check():
            backend = SlurmCliBackend(LocalRunner(env=dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"])))
            try:
                found = await find_job(backend, job)
                fields = await backend.job_output_paths(job)
            finally:
                await backend.close()
            assert "/etc/shadow" in fields["StdOut"]  # the name's text is there ...
            assert trusted_output(found, fields["StdOut"]) == default_output(found)  # ... and not believed

        asyncio.run(check())
        proc = cockpit(cluster, "job", "tail", job)
        assert proc.returncode == 0, proc.stderr
        assert tag in proc.stdout and "shadow" not in proc.stderr
    finally:
        cancel(job)


def test_output_to_dev_null_says_so(cluster, workdir):
    job = sbatch("--job-name=x StdOut=/etc/shadow", "--output=/dev/null", wrap="sleep 60", workdir=workdir)
    try:
        wait_for(lambda: "RUNNING" in run(["squeue", "-h", "-j", job, "-o", "%T"]).stdout, timeout=60)
        proc = cockpit(cluster, "job", "tail", job)
        assert proc.returncode != 0
        assert "/dev/null" in proc.stderr and "root:" not in proc.stdout
    finally:
        cancel(job)


@pytest.mark.parametrize("flags", [(), ("--output=%x-%j.out",)], ids=["default", "pattern"])
def test_hung_job_runbook_judges_progress_on_the_real_output_file(cluster, workdir, flags):
    """The runbook's progress probe asks Slurm where the job writes (22.05's squeue says
    /dev/null for a job without -o; scontrol names slurm-ID.out): the file is found and
    judged, not reported as 'no readable stdout/stderr'."""
    tag = f"hello-rb-{uuid.uuid4().hex[:6]}"
    job = sbatch("--job-name=rbout", *flags, wrap=f"echo {tag}; sleep 120", workdir=workdir)
    name = f"rbout-{job}.out" if flags else f"slurm-{job}.out"
    try:
        wait_file(workdir / name, tag)
        proc = cockpit(cluster, "runbook", "run", "hung-job", "--job", job, "--stale-after", "3600", "--json")
        rep = json.loads(proc.stdout)
        (progress,) = [s for s in rep["steps"] if s["id"] == "progress"]
        codes = [f["rule"] for f in progress["findings"]]
        assert codes == ["progress.ok"], progress
        assert any(name in line for line in progress["evidence"]), progress
    finally:
        cancel(job)
