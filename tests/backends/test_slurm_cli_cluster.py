"""The CLI backend against the real Slurm test cluster (tests/cluster/up).

These are the foundation's acceptance checks: what Slurm really says about
GPUs, drains, pending/held/requeued jobs and the topology must come out of
the data layer unchanged, on whichever Slurm version this machine runs.
"""

from __future__ import annotations

import os
import time

import pytest

from cockpit.runner import LocalRunner
from cockpit.backends.slurm_cli import SlurmCliBackend
import clusterlib

pytestmark = pytest.mark.cluster


@pytest.fixture
def backend(cluster):
    env = dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"])
    return SlurmCliBackend(LocalRunner(env=env), timeout=20)


async def _job(backend, job_id, predicate=lambda j: True, timeout=90.0):  # Slurm schedules slower when loaded
    deadline = time.monotonic() + timeout
    while True:
        jobs = {j.job_id: j for j in await backend.fetch_jobs()}
        job = jobs.get(int(job_id))
        if job is not None and predicate(job):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} never matched; last seen: {job}")
        time.sleep(0.3)


async def test_version_matches_installed_slurm(backend, cluster):
    version = await backend.version()
    assert version.split(".")[:2] == cluster["COCKPIT_TEST_SLURM_VERSION"].split(".")[:2]


async def test_two_node_gpu_job_has_nodes_and_indexes(backend):
    # Site profile: on the nodes with whole GPUs of one kind (node01 untyped 8, node04 h100:4).
    where = {"nodelist": "node01,node04"} if clusterlib.profile() == "site" else {}
    job_id = clusterlib.submit("sleep 120", nodes=2, gres=clusterlib.gpu_gres(2), partition="gpu",
                               job_name="cockpit-t-gpu2", **where)
    try:
        job = await _job(backend, job_id, lambda j: j.state == "RUNNING" and j.gpus)
        assert job.name == "cockpit-t-gpu2"
        assert job.node_count == 2 and len(job.nodes) == 2
        per_node = {g.node: g for g in job.gpus}
        assert set(per_node) == set(job.nodes)
        for g in per_node.values():
            assert g.count == 2 and len(g.indexes) == 2
            assert g.type == clusterlib.gpu_type() or clusterlib.profile() == "site"
        # The snapshot's nodes see the same GPUs as allocated. (Slurm 22.05 counts an untyped
        # GPU's use without indexes, GresUsed=gpu:2: the CLI backend's snapshot takes them from
        # the jobs; fetch_nodes alone can only say how many.)
        nodes = {n.name: n for n in (await backend.snapshot()).nodes}
        for name, g in per_node.items():
            held = {i for grp in nodes[name].gpus for i in grp.alloc_indexes}
            assert set(g.indexes) <= held
            assert nodes[name].gpu_total == clusterlib.gpus_of(name)
    finally:
        clusterlib.cancel(job_id)


async def test_drained_node_shows_reason_user_and_time(backend):
    reason = "cockpit test: Xid 79 fallen off the bus"
    before = int(time.time()) - 5
    clusterlib.run(["scontrol", "update", "NodeName=node04", "State=DRAIN", f"Reason={reason}"])
    try:
        nodes = {n.name: n for n in await backend.fetch_nodes()}
        n = nodes["node04"]
        assert "drain" in n.flags and n.display_state in ("drained", "draining")
        assert n.reason == reason
        assert n.reason_user == "root"
        assert n.reason_time is not None and n.reason_time >= before
    finally:
        clusterlib.run(["scontrol", "update", "NodeName=node04", "State=RESUME"])


async def test_pending_held_and_requeued_jobs(backend):
    # Not before an hour from now: pends with reason BeginTime on every version.
    big = clusterlib.submit("sleep 60", job_name="cockpit-t-big", begin="now+1hour")
    held = clusterlib.submit("sleep 60", job_name="cockpit-t-held", hold=True)
    runner = clusterlib.submit("sleep 120", job_name="cockpit-t-requeue", requeue=True)
    try:
        job = await _job(backend, big, lambda j: j.state == "PENDING" and j.reason)
        assert job.reason == "BeginTime" and not job.nodes
        job = await _job(backend, held, lambda j: j.held)
        assert job.state == "PENDING" and job.reason in ("JobHeldUser", "JobHeldAdmin")
        await _job(backend, runner, lambda j: j.state == "RUNNING")
        clusterlib.run(["scontrol", "requeue", str(runner)])
        job = await _job(backend, runner, lambda j: j.state == "PENDING")
        assert job.state == "PENDING"  # back in the queue, not lost or completed (24.11 keeps its old nodes)
    finally:
        for j in (big, held, runner):
            clusterlib.cancel(j)


async def test_topology_leafs(backend):
    topo = await backend.fetch_topology()
    assert topo.kind == "tree"
    assert topo.leaf_of("node01") == "leaf1" and topo.leaf_of("node02") == "leaf1"
    assert topo.leaf_of("node03") == "leaf2"
    assert topo.path("node04") == ("leaf2", "spine")


async def test_partitions(backend):
    parts = {p.name: p for p in await backend.fetch_partitions()}
    assert parts["gpu"].is_default and len(parts["gpu"].nodes) == 4
    assert parts["debug"].nodes == clusterlib.partition_nodes("debug")


async def test_snapshot_is_complete(backend):
    snap = await backend.snapshot()
    assert not snap.errors, snap.errors
    assert {n.name for n in snap.nodes} >= {"node01", "node02", "node03", "node04"}
    assert snap.slurm_version
