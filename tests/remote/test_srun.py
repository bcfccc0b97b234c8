"""The srun transport on the real test cluster (job steps, one task per node)."""

from __future__ import annotations

import pytest

from cockpit.runner import LocalRunner
from cockpit.remote.pool import SshPool
from cockpit.remote.runner import SshRunner
from cockpit.remote.srun import srun_argv, srun_fanout


def test_srun_argv_passes_the_probe_as_arguments_not_shell_text():
    argv = srun_argv(["node02", "node01"], ["echo", "$(id)", "a b"])
    assert argv[:4] == ["srun", "--nodelist=node[01-02]", "--nodes=2", "--ntasks-per-node=1"]
    assert "--label" in argv
    assert argv[-3:] == ["echo", "$(id)", "a b"]  # positional args of a fixed sh -c snippet


@pytest.mark.cluster
@pytest.mark.ssh
async def test_srun_fanout_splits_results_per_node(cluster_env, cluster_settings):
    nodes = cluster_env["COCKPIT_TEST_NODES"].split()[:3]
    runner = SshRunner("head", SshPool(cluster_settings))
    try:
        res = await srun_fanout(runner, nodes, ["sh", "-c", 'hostname; echo "$1" >&2; [ "$(hostname)" != node02 ]', "x", "a;b $(c)"],
                                timeout=60, extra=["--job-name=cockpit-srun-test"])
    finally:
        await runner.close()
    assert list(res) == nodes
    for n in nodes:
        assert res[n].stdout == f"{n}\n".encode(), res[n]
        assert res[n].stderr == b"a;b $(c)\n"
    assert res["node02"].returncode == 1 and res["node01"].returncode == 0


@pytest.mark.cluster
async def test_srun_fanout_local_runner(cluster_env):
    import os

    runner = LocalRunner(env=dict(os.environ, SLURM_CONF=cluster_env["SLURM_CONF"]))
    nodes = cluster_env["COCKPIT_TEST_NODES"].split()
    res = await srun_fanout(runner, nodes, ["hostname"], timeout=60, extra=["--job-name=cockpit-srun-test"])
    assert {n: r.stdout.strip().decode() for n, r in res.items()} == {n: n for n in nodes}
