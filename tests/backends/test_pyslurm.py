"""The pyslurm backend: probe decisions and the pyslurm -> models mapping.

pyslurm 25.11 needs exactly Slurm 25.11, which is not available here, so the
mapping is tested on STAND-INS: SimpleNamespace objects carrying the attribute
names and value shapes of pyslurm 25.11.2's real classes, read from its
sources (pyslurm/core/node.pyx, core/job/job.pyx, core/partition.pyx,
utils/cstr.pyx ``to_gres_dict``, utils/uint.pyx ``u32_parse``). They are not
recorded output of a real pyslurm.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace


from cockpit.backends import pyslurm_backend as pb
from cockpit.errors import CommandFailed


class FakeCli:
    def __init__(self, version="25.11.2", error=None):
        self._version, self._error = version, error

    async def version(self):
        if self._error:
            raise self._error
        return self._version


def stand_in_job(**over):
    """Attributes of pyslurm.Job (core/job/job.pyx) for a 2-node GPU job."""
    base = dict(
        id=4242, name="train-[bold]x[/bold]", user_name="alice", account="nlp", partition="gpu",
        state="RUNNING", state_reason="None", allocated_nodes="node[01-02]", num_nodes=2,
        gres_per_node={"gres/gpu:h100": 2},  # to_gres_dict("gres/gpu:h100:2")
        array_id=None, array_task_id=None, array_tasks_waiting=None, array_tasks_parallel=None,
        heterogeneous_id=None, heterogeneous_offset=None,
        submit_time=1_760_000_000, start_time=1_760_000_060, end_time=1_760_003_660,
        time_limit=60, command="/home/alice/run.sh", working_directory="/home/alice",
        standard_output="/home/alice/slurm-4242.out", standard_error="/home/alice/slurm-4242.out",
        exit_code=0, exit_code_signal=0, cpus=4, priority=4294901,
    )
    base.update(over)
    return SimpleNamespace(**base)


LAYOUT = {  # Job.get_resource_layout_per_node(): gres via to_gres_dict("gpu:h100:2(IDX:0-1)")
    "node01": {"cpu_ids": "0-1", "gres": {"gpu:h100": {"count": 2, "indexes": "0-1"}}, "memory": 1024},
    "node02": {"cpu_ids": "0-1", "gres": {"gpu:h100": {"count": 2, "indexes": "2,5"}}, "memory": 1024},
}


def stand_in_node(**over):
    """Attributes of pyslurm.Node (core/node.pyx)."""
    base = dict(
        name="node01", state="MIXED+DRAIN", reason="Xid 79", reason_user="root",
        reason_time=1_760_000_100, total_cpus=16, allocated_cpus=4, real_memory=64_000,
        allocated_memory=2048, partitions=["gpu", "debug"], configured_gres={"gpu:h100": 8},
        allocated_gres={"gpu:h100": 2, "gpu": 2}, address="127.0.10.1",
        active_features=["h100"], available_features=["h100"], boot_time=1_759_000_000,
    )
    base.update(over)
    return SimpleNamespace(**base)


async def test_probe_says_not_installed_here(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyslurm", None)  # makes `import pyslurm` raise ImportError
    assert await pb.probe(FakeCli(), remote=False) == (False, "pyslurm is not installed")


async def test_probe_refuses_remote_before_importing():
    usable, why = await pb.probe(FakeCli(), remote=True)
    assert not usable and "SSH" in why


async def test_probe_compares_major_minor(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyslurm", SimpleNamespace(__version__="25.11.2"))
    assert await pb.probe(FakeCli("22.05.8"), remote=False) == (
        False, "pyslurm 25.11.2 does not match Slurm 22.05.8")
    usable, why = await pb.probe(FakeCli("25.11.0"), remote=False)
    assert usable and why == "pyslurm 25.11.2 matches Slurm 25.11.0"
    usable, why = await pb.probe(FakeCli(error=CommandFailed(["sinfo"], 1, "boom")), remote=False)
    assert not usable and "version is unknown" in why


def test_major_minor():
    assert pb.major_minor("25.11.2") == "25.11"
    assert pb.major_minor("24.5.1") == "24.05"
    assert pb.major_minor("garbage") == ""


def test_running_job_maps_nodes_and_gpu_indexes():
    job = pb.job_from_pyslurm(stand_in_job(), LAYOUT)
    assert job.job_id == 4242 and job.name == "train-[bold]x[/bold]"
    assert job.state == "RUNNING" and job.reason == "" and not job.held
    assert job.nodes == ("node01", "node02") and job.node_count == 2
    assert job.gpus_per_node == 2 and job.gpu_type == "h100"
    assert {g.node: g.indexes for g in job.gpus} == {"node01": (0, 1), "node02": (2, 5)}
    assert job.time_limit == 60 and job.start_time == 1_760_000_060
    assert job.exit_code == 0 and job.exit_signal is None


def test_pending_array_remainder_and_holds():
    rem = pb.job_from_pyslurm(stand_in_job(
        state="PENDING", state_reason="JobArrayTaskLimit", allocated_nodes=None, num_nodes=1,
        array_id=4242, array_task_id=None, array_tasks_waiting="4-31", array_tasks_parallel=4,
        time_limit="UNLIMITED", start_time=None, end_time=None))
    assert rem.state == "PENDING" and rem.reason == "JobArrayTaskLimit"
    assert rem.nodes == () and rem.gpus == () and rem.time_limit is None
    assert rem.display_id == "4242_[4-31%4]"
    held = pb.job_from_pyslurm(stand_in_job(state="PENDING", state_reason="JobHeldUser",
                                            allocated_nodes=None, priority=0))
    assert held.held
    requeued = pb.job_from_pyslurm(stand_in_job(state="REQUEUE_HOLD", state_reason="JobHeldAdmin",
                                                allocated_nodes=None))
    assert requeued.state == "PENDING" and "REQUEUED" in requeued.state_flags and requeued.held


def test_het_leader_offset_zero_survives_u32_parse():
    # u32_parse(0, noval=0) gives None for the leader's offset 0.
    lead = pb.job_from_pyslurm(stand_in_job(heterogeneous_id=4242, heterogeneous_offset=None))
    comp = pb.job_from_pyslurm(stand_in_job(id=4243, heterogeneous_id=4242, heterogeneous_offset=1))
    assert (lead.display_id, comp.display_id) == ("4242+0", "4242+1")


def test_node_maps_state_reason_and_gpu_indexes_from_jobs():
    job = pb.job_from_pyslurm(stand_in_job(), LAYOUT)
    use = pb.gpu_use_by_node([job])
    node = pb.node_from_pyslurm(stand_in_node(), use.get("node01"))
    assert node.state == "mixed" and "drain" in node.flags and node.display_state == "draining"
    assert (node.reason, node.reason_user, node.reason_time) == ("Xid 79", "root", 1_760_000_100)
    assert node.gpus[0].type == "h100" and node.gpus[0].count == 8
    assert node.gpus[0].alloc_indexes == (0, 1)
    assert node.partitions == ("gpu", "debug") and node.cpus == 16 and node.alloc_cpus == 4
    down = pb.node_from_pyslurm(stand_in_node(name="node03", state="DOWN+NOT_RESPONDING",
                                              configured_gres={}, allocated_cpus=0))
    assert down.state == "down" and "not_responding" in down.flags and down.gpus == ()


def test_partition_maps_unlimited_and_hostlist():
    part = pb.partition_from_pyslurm(SimpleNamespace(
        name="gpu", nodes="node[01-04]", state="UP", is_default=True, max_time="UNLIMITED",
        total_cpus=64))
    assert part.nodes == ("node01", "node02", "node03", "node04")
    assert part.max_time is None and part.is_default and part.total_cpus == 64


def test_module_imports_without_pyslurm():
    assert "pyslurm" not in sys.modules or sys.modules["pyslurm"] is None
    assert pb.PyslurmBackend().name == "pyslurm"
