"""A job's output read on the node that writes it, over the test cluster's sshd.

Every file here is on this machine's filesystem too, so to prove that lines
really came over SSH the tests either force the node (``where="node"``,
``--from-node``) and check the reported source, or run cockpit in a mount
namespace of its own where the output directory is hidden under an empty
tmpfs: there the file does not exist locally, and only the node (whose sshd
lives in the machine's mount namespace) can read it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from clusterlib import cancel, run, submit, wait_for
from cockpit.runner import LocalRunner
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.core.joblog import JobLogError, find_job, open_job_output

pytestmark = [pytest.mark.cluster, pytest.mark.ssh]
COCKPIT = [sys.executable, "-m", "cockpit.cli"] if not shutil.which("cockpit", path=os.path.dirname(sys.executable)) \
    else [os.path.join(os.path.dirname(sys.executable), "cockpit")]


def _wait_lines(path: Path, count: int) -> None:
    def enough() -> bool:
        return path.is_file() and path.read_text().count("\n") >= count

    wait_for(enough, timeout=60)


async def _job(cluster_env, job_id: str):
    backend = SlurmCliBackend(LocalRunner(env=dict(os.environ, SLURM_CONF=cluster_env["SLURM_CONF"])))
    try:
        return await find_job(backend, job_id)
    finally:
        await backend.close()


@pytest.fixture
def outdir(tmp_path_factory):
    # every character a shell would act on: the path reaches the node only as one quoted argument
    d = Path(tmp_path_factory.mktemp("joblog")) / "out dir 'q' $(touch PWNED) ;x"
    d.mkdir()
    return d


async def test_tail_then_follow_on_the_batch_node_is_exact(cluster_env, cluster_settings, outdir):
    out = outdir / "steady.txt"
    script = 'for i in $(seq 1 60); do echo "line $i on $(hostname)"; sleep 0.1; done; sleep 60'
    job_id = submit(script, job_name="cockpit-ssh-joblog-exact", nodes=2, nodelist="node[03-04]",
                    partition="gpu", output=str(out))
    try:
        _wait_lines(out, 5)
        job = await _job(cluster_env, job_id)
        assert job.nodes[0] == "node03"
        reader = open_job_output(job, where="node", settings=cluster_settings)
        try:
            assert reader.source == f"node03:{out}"  # the batch host: the job's first node
            seen = await reader.tail(3, partial=False)
            async for line in reader.follow(interval=0.2):
                seen.append(line)
                if line.startswith("line 60 "):
                    break
        finally:
            await reader.close()
    finally:
        cancel(job_id, wait=False)
    numbers = [int(s.split()[1]) for s in seen]
    # tail's last lines, then every later line once, in order: nothing lost or repeated at the hand-over
    assert numbers == list(range(numbers[0], 61)) and len(numbers) >= 3
    assert all(s.endswith("on node03") for s in seen)
    assert not (outdir / "PWNED").exists() and not Path("/root/PWNED").exists()


async def test_tail_on_a_node_reports_a_missing_file_with_its_source(cluster_env, cluster_settings, outdir):
    job_id = submit("sleep 60", job_name="cockpit-ssh-joblog-missing", nodelist="node02", partition="gpu",
                    output=str(outdir / "gone.txt"))
    try:
        wait_for(lambda: (outdir / "gone.txt").exists(), timeout=60)
        job = await _job(cluster_env, job_id)
        (outdir / "gone.txt").unlink()
        reader = open_job_output(job, where="node", settings=cluster_settings)
        try:
            with pytest.raises(JobLogError) as err:
                await reader.tail(5)
        finally:
            await reader.close()
    finally:
        cancel(job_id, wait=False)
    assert f"node02:{outdir}/gone.txt" in str(err.value) and "No such file" in str(err.value)


def _hidden_cockpit(hide: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    """cockpit in a private mount namespace where ``hide`` is an empty tmpfs."""
    snippet = 'mount -t tmpfs tmpfs "$1" && shift && exec "$@"'
    argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", snippet, "sh", str(hide),
            *COCKPIT, "--config", str(config), *args]
    return run(argv, check=False, timeout=120)


def test_job_tail_reads_over_ssh_what_is_not_readable_here(cluster, cluster_env, tmp_path_factory):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to hide the output directory from cockpit only")
    hidden = Path(tmp_path_factory.mktemp("hidden"))
    out = hidden / "out.txt"
    config = Path(tmp_path_factory.mktemp("cfg")) / "cockpit.toml"
    config.write_text(f'[ssh]\nconfig_file = "{cluster_env["COCKPIT_TEST_SSH_CONFIG"]}"\nconnect_timeout = 10.0\n')
    marker = f"cockpit-hidden-{uuid.uuid4().hex[:8]}"
    job_id = submit(f'echo "{marker} on $(hostname)"; sleep 60', job_name="cockpit-ssh-joblog-hidden",
                    nodes=2, nodelist="node[01-02]", partition="gpu", output=str(out))
    try:
        _wait_lines(out, 1)
        res = _hidden_cockpit(hidden, config, "job", "tail", job_id, "-n", "5")
        local = _hidden_cockpit(hidden, config, "job", "tail", job_id, "--local")
    finally:
        cancel(job_id, wait=False)
    if "cannot change root filesystem propagation" in res.stderr:
        pytest.skip("no private mount namespace here (a chroot whose / is not a mount point)")
    assert res.returncode == 0, res.stderr
    assert f"{marker} on node01" in res.stdout
    assert f"node01:{out} (over SSH)" in res.stderr
    # the same reader kept local sees nothing: the lines above can only have come from the node
    assert local.returncode == 1 and "No such file" in local.stderr


def test_job_procs_headless_lists_each_nodes_processes(cluster, cluster_env, tmp_path):
    import json

    config = tmp_path / "cockpit.toml"
    config.write_text(f'[ssh]\nconfig_file = "{cluster_env["COCKPIT_TEST_SSH_CONFIG"]}"\nconnect_timeout = 10.0\n')
    job_id = submit("srun sleep 93", job_name="cockpit-ssh-jobprocs-cli", nodes=2, nodelist="node[02-03]",
                    partition="gpu")
    try:
        def both_sleeping():
            res = run([*COCKPIT, "--config", str(config), "job", "procs", job_id, "--json"], check=False, timeout=90)
            data = json.loads(res.stdout) if res.stdout.strip() else {}
            nodes = data.get("nodes", {})
            ok = all(any(_step_sleep(p) for p in nodes.get(n, [])) for n in ("node02", "node03"))
            return (res, data) if ok else None

        res, data = wait_for(both_sleeping, timeout=60, interval=1.0)
        table = run([*COCKPIT, "--config", str(config), "job", "procs", job_id], check=False, timeout=90)
    finally:
        cancel(job_id, wait=False)
    assert res.returncode == 0 and data["errors"] == {} and data["job_id"] == int(job_id)
    for node in ("node02", "node03"):
        sleeper = next(p for p in data["nodes"][node] if _step_sleep(p))
        assert sleeper["state"].startswith("S") and sleeper["node"] == node and sleeper["gpu_index"] is None
    assert any(line.startswith("node03") and line.endswith("sleep 93") for line in table.stdout.splitlines())
    # the batch script (and srun) run on the first node only
    assert any(p["step"] == "batch" for p in data["nodes"]["node02"])
    assert not any(p["step"] == "batch" for p in data["nodes"]["node03"])


def _step_sleep(p: dict) -> bool:
    """The job step's own task (srun's sleep), not the srun client in the batch step."""
    return p["step"] == "0" and p["command"].endswith("sleep 93")


async def test_tui_follow_through_host_head_reads_on_the_node(cluster, cluster_env, tmp_path, monkeypatch):
    """`cockpit --host head`: Slurm on the login node, the job's output followed on its node."""
    from cockpit.cli import build_parser
    from cockpit.core.session import open_session
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.screens.actions import JobLogScreen

    out = tmp_path / "ticks.txt"
    job_id = submit('for i in $(seq 1 400); do echo "tick $i on $(hostname)"; sleep 0.3; done',
                    job_name="cockpit-ssh-joblog-tui", nodelist="node04", partition="gpu", output=str(out))
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f'[ssh]\nconfig_file = "{cluster_env["COCKPIT_TEST_SSH_CONFIG"]}"\nconnect_timeout = 10.0\n'
                   f'command_timeout = 30.0\n[refresh]\nnodes = 1.0\njobs = 1.0\n[tui]\ntelemetry = false\n')
    monkeypatch.delenv("SLURM_CONF", raising=False)  # Slurm only through head
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    session = await open_session(build_parser().parse_args(["--config", str(cfg), "--host", "head"]))

    def text(app) -> str:
        return "\n".join(strip.text for strip in app.screen._compositor.render_strips())

    async def wait(pilot, cond, what):
        for _ in range(600):
            if cond():
                return
            await pilot.pause(0.1)
        raise AssertionError(what)

    try:
        app = CockpitApp(session.backend, session.config, read_only=True)
        async with app.run_test(size=(140, 40)) as pilot:
            def running():
                j = app.snapshot.job(int(job_id)) if app.snapshot else None
                return j is not None and j.state == "RUNNING"

            await wait(pilot, running, f"job {job_id} running")
            await pilot.press("5")
            await pilot.pause(0.3)
            assert app.main.active_table().select_key(int(job_id))
            await pilot.press("f")
            await wait(pilot, lambda: isinstance(app.screen, JobLogScreen), "the follow view")
            screen = app.screen
            assert screen.source == f"node04:{out}"
            await wait(pilot, lambda: "over SSH (following)" in text(app) and "on node04" in text(app), "lines")
            first = max(int(line.split()[1]) for line in text(app).splitlines() if line.startswith("tick "))
            # a line the job writes after the view opened arrives through the follow poll
            await wait(pilot, lambda: f"tick {first + 3} on node04" in text(app), "a later line")
            await pilot.press("escape")
    finally:
        await session.close()
        cancel(job_id, wait=False)
