"""One contract, every backend: the same assertions over each available backend.

- demo: always (frozen clock, so its fetches are exactly comparable);
- slurm-cli: on the real test cluster (tests/cluster/up); skips when it is down;
- pyslurm: on the real test cluster where it imports AND matches the cluster's Slurm (tests/run
  builds it from ../shared/vendor/pyslurm); else a skip that says why. The CLI backend's
  cluster checks run on pyslurm in tests/backends/test_pyslurm_cluster.py.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.models import ClusterSnapshot

FROZEN = 1_760_000_000.0


def _cluster_env(request) -> dict[str, str]:
    """The test cluster's environment, or a skip naming what is missing."""
    try:
        cluster = request.getfixturevalue("cluster")  # skips by itself when the cluster is down
    except pytest.FixtureLookupError:
        pytest.skip("no `cluster` fixture (tests/conftest.py + tests/clusterlib.py) to reach the real cluster")
    return dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"])


def _cli_backend(request):
    from cockpit.runner import LocalRunner
    from cockpit.backends.slurm_cli import SlurmCliBackend

    return SlurmCliBackend(LocalRunner(env=_cluster_env(request)), timeout=20)


async def _pyslurm_backend(request):
    env = _cluster_env(request)
    if importlib.util.find_spec("pyslurm") is None:
        vendor = Path(__file__).resolve().parents[3] / "shared" / "vendor" / "pyslurm"
        where = f"{vendor} is missing" if not vendor.is_dir() else f"from {vendor}"
        pytest.skip(f"pyslurm is not installed in this venv (tests/run builds it {where})")
    from cockpit.backends import pyslurm_backend
    from cockpit.backends.pyslurm_worker import PyslurmWorker

    cli = _cli_backend(request)
    found = await pyslurm_backend.probe(cli, worker=PyslurmWorker(env={"SLURM_CONF": env["SLURM_CONF"]}))
    if not found.usable:
        pytest.skip(f"pyslurm unusable here: {found.why}")
    return pyslurm_backend.PyslurmBackend(cli=cli, probed=found)


@pytest.fixture(params=["demo", pytest.param("slurm-cli", marks=pytest.mark.cluster),
                        pytest.param("pyslurm", marks=pytest.mark.cluster)])
async def backend(request):
    if request.param == "demo":
        b = DemoBackend(clock=lambda: FROZEN)
    elif request.param == "slurm-cli":
        b = _cli_backend(request)
    else:
        b = await _pyslurm_backend(request)
    yield b
    await b.close()


@pytest.fixture
async def snap(backend) -> ClusterSnapshot:
    return await backend.snapshot()


def _deterministic(backend) -> bool:
    return backend.name == "demo"


async def test_version_is_known(backend):
    version = await backend.version()
    assert version and version[0].isdigit(), version


async def test_snapshot_has_nodes_and_names_its_source(backend, snap):
    assert snap.nodes
    assert snap.source and snap.fetched_at > 0
    assert snap.slurm_version
    assert snap.simulated == (backend.name == "demo")


async def test_node_partitions_exist(snap):
    parts = {p.name for p in snap.partitions}
    for node in snap.nodes:
        assert set(node.partitions) <= parts, (node.name, node.partitions, parts)
    for part in snap.partitions:
        assert set(part.nodes) <= {n.name for n in snap.nodes}, part


async def test_job_nodes_exist_and_gpus_sit_on_them(snap):
    names = {n.name for n in snap.nodes}
    for job in snap.jobs:
        assert set(job.nodes) <= names, (job.job_id, job.nodes)
        for g in job.gpus:
            assert g.node in job.nodes, (job.job_id, g)
            assert len(g.indexes) <= g.count, (job.job_id, g)


async def test_gpu_allocation_never_exceeds_total(snap):
    for node in snap.nodes:
        for group in node.gpus:
            assert group.alloc_count <= group.count, (node.name, group)
            assert all(0 <= i < group.count for i in group.alloc_indexes), (node.name, group)


async def test_topology_places_every_node(snap):
    topo = snap.topology
    if topo.kind == "none":
        pytest.skip("this cluster has no topology plugin")
    for node in snap.nodes:
        assert topo.leaf_of(node.name) is not None, node.name


async def test_fetches_agree_with_snapshot(backend, snap):
    nodes = await backend.fetch_nodes()
    parts = await backend.fetch_partitions()
    jobs = await backend.fetch_jobs()
    topo = await backend.fetch_topology()
    assert [n.name for n in nodes] == [n.name for n in snap.nodes]
    assert {n.name: n.gpu_total for n in nodes} == {n.name: n.gpu_total for n in snap.nodes}
    assert parts == snap.partitions
    assert topo == snap.topology
    if _deterministic(backend):
        assert nodes == snap.nodes and jobs == snap.jobs
        return
    # A live cluster moves between two calls: compare what cannot change for a job.
    before = {j.job_id: (j.name, j.user, j.partition) for j in snap.jobs}
    for job in jobs:
        if job.job_id in before:
            assert before[job.job_id] == (job.name, job.user, job.partition), job.job_id
