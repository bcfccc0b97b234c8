"""The pyslurm backend without Slurm: probe decisions, the mapping, the adapters,
the worker-side Source, the runtime switch and the executor's routing.

The pyslurm objects here are STAND-INS: SimpleNamespace objects with the
attribute names and value shapes of pyslurm's classes as its sources define them
(22.5.x, 24.11.x and 25.11.x branches: core/job/job.pyx, core/node.pyx,
core/partition.pyx, utils/cstr.pyx ``to_gres_dict``, utils/uint.pyx
``u32_parse``). The real pyslurm on the real cluster is tested in
tests/backends/test_pyslurm_cluster.py and the contract suite.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cockpit.backends import pyslurm_backend as pb
from cockpit.backends import pyslurm_compat as compat
from cockpit.backends import pyslurm_map as pm
from cockpit.backends.pyslurm_exec import PyslurmExecutor
from cockpit.backends.pyslurm_source import CHECK_EVERY, Source
from cockpit.backends.pyslurm_worker import Failed, ThreadWorker
from cockpit.backends.slurm_json_nodes import gpu_use_by_node
from cockpit.core.actions import build_custom_plan, build_plan
from cockpit.models import Job, Node
from cockpit.models.actions import Params, TargetResult
from cockpit.backends.base import Capabilities


def stand_in_job(**over):
    """Attributes of pyslurm.Job for a 2-node GPU job."""
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


LAYOUT = {  # get_resource_layout_per_node(): to_gres_dict("gpu:h100:2(IDX:0-1)") keeps the count as text
    "node01": {"cpu_ids": "0-1", "gres": {"gpu:h100": {"count": "2", "indexes": "0-1"}}, "memory": 1024},
    "node02": {"cpu_ids": "0-1", "gres": {"gpu:h100": {"count": "2", "indexes": "2,5"}}, "memory": 1024},
}


def stand_in_node(**over):
    """Attributes of pyslurm.Node."""
    base = dict(
        name="node01", state="MIXED+DRAIN", reason="Xid 79", reason_user="root",
        reason_time=1_760_000_100, total_cpus=16, allocated_cpus=4, real_memory=64_000,
        allocated_memory=2048, partitions=["gpu", "debug"], configured_gres={"gpu:h100": 8},
        allocated_gres={"gpu:h100": 2}, address="127.0.10.1", idle_cpus=12, effective_cpus=16,
        active_features=["h100"], available_features=["h100"], boot_time=1_759_000_000,
    )
    base.update(over)
    return SimpleNamespace(**base)


class FakeModule:
    """A pyslurm module stand-in: Jobs/Nodes/Partitions.load() and the controller's version."""

    def __init__(self, version="24.11.0", slurm="24.11.5", jobs=(), nodes=()):
        self.__version__ = version
        self.slurm = slurm
        self.jobs, self.nodes = list(jobs), list(nodes)
        self.loads = {"jobs": 0, "nodes": 0}
        mod = self

        class _Coll:
            def __init__(self, kind):
                self.kind = kind

            def load(self):
                mod.loads[self.kind] += 1
                items = getattr(mod, self.kind)
                key = "id" if self.kind == "jobs" else "name"
                return {getattr(o, key): o for o in items}

        self.Jobs, self.Nodes = _Coll("jobs"), _Coll("nodes")
        self.Partitions = SimpleNamespace(load=lambda: {"gpu": SimpleNamespace(
            name="gpu", nodes="node[01-02]", state="UP", is_default=True, max_time="UNLIMITED", total_cpus=32)})
        self.slurmctld = SimpleNamespace(Config=SimpleNamespace(load=lambda: SimpleNamespace(version=mod.slurm)))


def with_layout(job, layout):
    job.get_resource_layout_per_node = lambda: layout
    return job


# -- probe ------------------------------------------------------------------------
class FakeWorker:
    def __init__(self, answers):
        self.answers, self.closed = answers, False

    async def call(self, op, *args):
        value = self.answers[op]
        if isinstance(value, Exception):
            raise value
        return value

    async def close(self):
        self.closed = True


INFO = {"pyslurm": "22.5.3", "generation": "22.05", "actions": "cancel"}


async def test_probe_says_not_installed_here(monkeypatch):
    monkeypatch.setattr(pb, "installed_version", lambda: "")
    found = await pb.probe(None, remote=False)
    assert (found.usable, found.why) == (False, "pyslurm is not installed")


async def test_probe_refuses_remote_before_anything():
    found = await pb.probe(None, remote=True)
    assert not found.usable and "SSH" in found.why


async def test_probe_matches_the_controller_as_pyslurm_reads_it():
    w = FakeWorker({"info": INFO, "version": "22.05.8"})
    found = await pb.probe(worker=w)
    assert found.usable and found.worker is w and not w.closed
    assert (found.pyslurm, found.slurm, found.generation) == ("22.5.3", "22.05.8", "22.05")
    assert found.why.startswith("pyslurm 22.5.3 matches Slurm 22.05.8")


async def test_probe_refusals_name_the_cause_and_close_the_worker():
    w = FakeWorker({"info": INFO, "version": Failed("mismatch", "pyslurm 22.5.3 does not match Slurm 24.11.5")})
    found = await pb.probe(worker=w)
    assert not found.usable and w.closed and found.why == "pyslurm 22.5.3 does not match Slurm 24.11.5"
    found = await pb.probe(worker=FakeWorker({"info": INFO, "version": Failed("down", "slurmctld does not answer")}))
    assert not found.usable and "version is unknown (slurmctld does not answer)" in found.why
    found = await pb.probe(worker=FakeWorker({"info": Failed("unusable", "cockpit has no adapter for pyslurm 23.2.1")}))
    assert not found.usable and "no adapter for pyslurm 23.2.1" in found.why


def test_major_minor():
    assert pm.major_minor("25.11.2") == "25.11"
    assert pm.major_minor("22.5.3") == "22.05" == pm.major_minor("22.05.8")
    assert pm.major_minor("garbage") == ""


# -- mapping ----------------------------------------------------------------------
def test_running_job_maps_nodes_and_gpu_indexes():
    job = pm.job_from_pyslurm(stand_in_job(), LAYOUT)
    assert job.job_id == 4242 and job.name == "train-[bold]x[/bold]"
    assert job.state == "RUNNING" and job.reason == "" and not job.held
    assert job.nodes == ("node01", "node02") and job.node_count == 2
    assert job.gpus_per_node == 2 and job.gpu_type == "h100"
    assert {g.node: (g.count, g.indexes) for g in job.gpus} == {"node01": (2, (0, 1)), "node02": (2, (2, 5))}
    assert job.time_limit == 60 and job.start_time == 1_760_000_060
    assert job.exit_code == 0 and job.exit_signal is None


def test_pending_array_remainder_task_zero_and_holds():
    rem = pm.job_from_pyslurm(stand_in_job(
        state="PENDING", state_reason="JobArrayTaskLimit", allocated_nodes=None, num_nodes=1,
        array_id=4242, array_task_id=None, array_tasks_waiting="4-31", array_tasks_parallel=4,
        time_limit="UNLIMITED", start_time=None, end_time=None))
    assert rem.state == "PENDING" and rem.reason == "JobArrayTaskLimit"
    assert rem.nodes == () and rem.gpus == () and rem.time_limit is None
    assert rem.display_id == "4242_[4-31%4]"
    task0 = pm.job_from_pyslurm(stand_in_job(id=4243, array_id=4242, array_task_id=None))  # u32_parse(0)
    assert task0.display_id == "4242_0"
    held = pm.job_from_pyslurm(stand_in_job(state="PENDING", state_reason="JobHeldUser",
                                            allocated_nodes=None, priority=0))
    assert held.held
    requeued = pm.job_from_pyslurm(stand_in_job(state="REQUEUE_HOLD", state_reason="JobHeldAdmin",
                                                allocated_nodes=None))
    assert requeued.state == "PENDING" and "REQUEUED" in requeued.state_flags and requeued.held
    cancelled = pm.job_from_pyslurm(stand_in_job(state="CANCELLED", state_reason="JobHeldUser", priority=0))
    assert not cancelled.held  # as the CLI backend: only a pending job is held


def test_exit_code_pyslurm_cannot_decode_is_unknown():
    class Broken(SimpleNamespace):
        @property
        def exit_code(self):  # pyslurm 22.5's _get_exit_code on a uint32 above INT_MAX
            raise OverflowError("Python int too large to convert to C int")

    job = pm.job_from_pyslurm(Broken(**vars(stand_in_job(state="CANCELLED"))))
    assert job.exit_code is None and job.state == "CANCELLED"


def test_het_leader_offset_zero_survives_u32_parse():
    lead = pm.job_from_pyslurm(stand_in_job(heterogeneous_id=4242, heterogeneous_offset=None))
    comp = pm.job_from_pyslurm(stand_in_job(id=4243, heterogeneous_id=4242, heterogeneous_offset=1))
    assert (lead.display_id, comp.display_id) == ("4242+0", "4242+1")


def test_node_maps_state_reason_and_gpu_indexes_from_jobs():
    job = pm.job_from_pyslurm(stand_in_job(), LAYOUT)
    use = gpu_use_by_node([job])
    node = pm.node_from_pyslurm(stand_in_node(), use.get("node01"))
    assert node.state == "mixed" and "drain" in node.flags and node.display_state == "draining"
    assert (node.reason, node.reason_user, node.reason_time) == ("Xid 79", "root", 1_760_000_100)
    assert node.gpus[0].type == "h100" and node.gpus[0].count == 8
    assert node.gpus[0].alloc_indexes == (0, 1)
    assert node.partitions == ("gpu", "debug") and node.cpus == 16 and node.alloc_cpus == 4
    down = pm.node_from_pyslurm(stand_in_node(name="node03", state="DOWN+NOT_RESPONDING",
                                              configured_gres={}, allocated_cpus=0))
    assert down.state == "down" and "not_responding" in down.flags and down.gpus == ()


def test_partition_maps_unlimited_and_hostlist():
    part = pm.partition_from_pyslurm(SimpleNamespace(
        name="gpu", nodes="node[01-04]", state="UP", is_default=True, max_time="UNLIMITED", total_cpus=64))
    assert part.nodes == ("node01", "node02", "node03", "node04")
    assert part.max_time is None and part.is_default and part.total_cpus == 64


# -- adapters ---------------------------------------------------------------------
def test_adapter_is_chosen_by_generation():
    assert type(compat.adapter_for(SimpleNamespace(__version__="22.5.3"))) is compat.Adapter2205
    assert type(compat.adapter_for(SimpleNamespace(__version__="24.11.0"))) is compat.Adapter2411
    assert type(compat.adapter_for(SimpleNamespace(__version__="25.11.2"))) is compat.Adapter
    with pytest.raises(compat.PyslurmFailure, match="no adapter for pyslurm 23.2.1") as err:
        compat.adapter_for(SimpleNamespace(__version__="23.2.1"))
    assert err.value.cause == "unusable"


def test_22_5_reads_the_version_from_the_old_api_and_derives_mixed():
    mod = SimpleNamespace(__version__="22.5.3", config=lambda: SimpleNamespace(get=lambda: {"version": "22.05.8"}))
    a = compat.adapter_for(mod)
    assert a.controller_version() == "22.05.8"
    assert a.node_state(stand_in_node(state="ALLOCATED+DRAIN", idle_cpus=12)) == "MIXED+DRAIN"
    assert a.node_state(stand_in_node(state="ALLOCATED", idle_cpus=0)) == "ALLOCATED"
    assert compat.adapter_for(SimpleNamespace(__version__="24.11.0")).node_state(
        stand_in_node(state="ALLOCATED", idle_cpus=12)) == "ALLOCATED"  # 24.11 says MIXED itself


def test_errors_are_classified_by_errno_and_words():
    def rpc(errno, msg):
        return SimpleNamespace(errno=errno, msg=msg)

    assert compat.classify(rpc(1800, "Unable to contact slurm controller (connect failure)"), "jobs").cause == "down"
    f = compat.classify(rpc(2002, "Access/permission denied"), "Job(42).hold()")
    assert f.cause == "denied" and f.message == "permission refused by Slurm (Job(42).hold()): Access/permission denied"
    assert compat.classify(rpc(1005, "Protocol version has changed, re-link your code"), "jobs").cause == "mismatch"
    assert compat.classify(rpc(2017, "Invalid job id specified"), "job 9").cause == "gone"
    assert compat.classify(RuntimeError("boom"), "nodes").message == "nodes: boom"
    old_api = compat.classify(ValueError("Unable to contact slurm controller (connect failure)", 1800), "config")
    assert old_api.message == "slurmctld does not answer (config): Unable to contact slurm controller (connect failure)"


# -- the Source (what the worker runs) ---------------------------------------------
def _fake(**kw):
    jobs = [with_layout(stand_in_job(), LAYOUT),
            with_layout(stand_in_job(id=7, state="PENDING", allocated_nodes=None), {})]
    nodes = [stand_in_node(), stand_in_node(name="node02", reason=None, state="MIXED")]
    return FakeModule(jobs=jobs, nodes=nodes, **kw)


def test_source_sends_only_what_changed():
    mod, now = _fake(), [0.0]
    src = Source(mod, clock=lambda: now[0])
    first = list(src.jobs())
    assert first[0].reset and {j.job_id for j in first[0].upserts} == {7, 4242}
    assert first[-1].done and first[-1].total == 2
    now[0] += 5
    again = list(src.jobs())
    assert len(again) == 1 and again[0].done and not again[0].upserts and not again[0].removed
    mod.jobs[1].state_reason = "Priority"
    mod.jobs.pop(0)
    now[0] += 5
    step = list(src.jobs())
    assert [j.job_id for d in step for j in d.upserts] == [7] and step[-1].removed == (4242,)


def test_nodes_take_gpu_indexes_from_jobs_and_share_one_jobs_load():
    mod, now = _fake(), [100.0]
    src = Source(mod, clock=lambda: now[0])
    nodes = {n.name: n for d in src.nodes() for n in d.upserts}
    assert nodes["node01"].gpus[0].alloc_indexes == (0, 1) and nodes["node02"].gpus[0].alloc_indexes == (2, 5)
    list(src.jobs())  # the poller's jobs request of the same round
    assert mod.loads == {"jobs": 1, "nodes": 1}
    now[0] += 5
    list(src.nodes())
    assert mod.loads == {"jobs": 2, "nodes": 2}


def test_source_finds_a_slurm_upgrade_at_run_time():
    mod, now = _fake(), [0.0]
    src = Source(mod, clock=lambda: now[0])
    list(src.jobs())
    mod.slurm = "25.05.1"  # slurmctld upgraded under a running cockpit
    now[0] += CHECK_EVERY / 2
    list(src.jobs())  # not asked again yet
    now[0] += CHECK_EVERY
    with pytest.raises(compat.PyslurmFailure, match="pyslurm 24.11.0 does not match Slurm 25.05.1") as err:
        list(src.jobs())
    assert err.value.cause == "mismatch"


# -- the backend: a mismatch at run time switches to the CLI backend ----------------
class FakeCli:
    description = "slurm-cli via local"
    warnings: list = []

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    async def version(self):
        return "25.05.1"

    async def stream_jobs(self):
        yield (Job(job_id=1, name="from-cli"),), True

    async def stream_nodes(self):
        yield (Node(name="node01", state="idle"),), True

    async def fetch_partitions(self):
        return ()

    async def fetch_topology(self):
        from cockpit.models import Topology
        return Topology()

    def action_executor(self, config):
        return "cli-executor"

    async def close(self):
        pass


async def test_mismatch_at_run_time_switches_to_the_cli_with_a_notice():
    mod, now = _fake(), [0.0]
    probed = pb.Probe(True, "ok", "24.11.0", "24.11", "24.11.5")
    backend = pb.PyslurmBackend(cli=FakeCli(), worker=ThreadWorker(Source(mod, clock=lambda: now[0])), probed=probed)
    assert {j.job_id for j in await backend.fetch_jobs()} == {7, 4242}
    assert backend.description == "pyslurm 24.11.0 on localhost"
    mod.slurm = "25.05.1"
    now[0] += CHECK_EVERY
    snap = await backend.snapshot()
    assert [j.name for j in snap.jobs] == ["from-cli"] and snap.slurm_version == "25.05.1"
    assert backend.switched and "does not match Slurm 25.05.1" in backend.description
    assert backend.description.startswith("slurm-cli on localhost (switched from pyslurm:")
    assert any(e.startswith("switched to the slurm-cli backend: pyslurm 24.11.0 does not match") for e in snap.errors)
    assert backend.action_executor(None) == "cli-executor"


async def test_other_failures_are_one_line_backend_errors():
    from cockpit.errors import BackendError

    mod = _fake()

    def refuse():
        raise type("RPCError", (Exception,), {"errno": 1800})("Unable to contact slurm controller (connect failure)")

    mod.Jobs.load = refuse
    probed = pb.Probe(True, "ok", "24.11.0", "24.11", "24.11.5")
    backend = pb.PyslurmBackend(cli=FakeCli(), worker=ThreadWorker(Source(mod)), probed=probed)
    with pytest.raises(BackendError, match=r"^slurmctld does not answer \(jobs\): Unable to contact"):
        await backend.fetch_jobs()
    assert not backend.switched


# -- the executor: pyslurm where it has the call, the Slurm command elsewhere --------
class RecordingWorker:
    def __init__(self):
        self.calls = []

    async def call(self, op, *args):
        self.calls.append((op, *args))
        return "done", f"pyslurm 22.5.3: Job({args[1]}).cancel()", f"Job({args[1]}).cancel()"


class RecordingCli:
    description = "slurm via local"

    def __init__(self):
        self.steps = []

    async def execute(self, spec, step, params):
        self.steps.append(step.argv)
        return TargetResult(step.target, step.argv, "done", "")


async def test_executor_routes_each_step_and_says_which_way():
    worker, cli = RecordingWorker(), RecordingCli()
    ex = PyslurmExecutor(worker, cli, "22.5.3", "22.05")
    assert ex.description.startswith("pyslurm 22.5.3 (cancel, signal, hold")
    plan = build_plan("cancel", ["4242", "4243_1"])
    first, second = [await ex.execute(plan.spec, s, plan.params) for s in plan.steps]
    assert first.argv == ("pyslurm", "Job(4242).cancel()") and first.ok
    assert worker.calls == [("act", "cancel", "4242", {})]
    assert second.argv == ("scancel", "--verbose", "--", "4243_1")
    assert second.detail == "(as a Slurm command: pyslurm takes plain job ids, not 4243_1)"
    plan = build_plan("timelimit", ["4242"], Params(time_limit="10"))
    res = await ex.execute(plan.spec, plan.steps[0], plan.params)
    assert res.argv[0] == "scontrol" and "pyslurm 22.5.3 has no call for timelimit" in res.detail
    plan = build_custom_plan("cancel", "Cancel via plugin", "4242", [["scancel", "4242"]])
    res = await ex.execute(plan.spec, plan.steps[0], plan.params)
    assert res.argv == ("scancel", "4242") and "not one of pyslurm's calls" in res.detail
    assert len(worker.calls) == 1


def test_module_imports_without_pyslurm():
    import sys

    assert "pyslurm" not in sys.modules or sys.modules["pyslurm"] is None
    assert pb.PyslurmBackend().name == "pyslurm"


def test_a_field_pyslurm_gave_that_cannot_be_read_is_unknown_and_the_record_stays():
    """As the JSON readers do (#21): a job whose GPU layout has a damaged index list, or a
    node whose GRES count is no number, stays with that field named unknown and a warning;
    without a warnings list the old behaviour holds (the damage raises)."""
    from cockpit.errors import ParseError

    damaged = {"node01": {"gres": {"gpu:h100": {"count": "2", "indexes": "0-x"}}}}
    warnings: list[str] = []
    job = pm.job_from_pyslurm(stand_in_job(), damaged, warnings)
    assert job.job_id == 4242 and job.state == "RUNNING"
    assert job.unknown == frozenset({"gpus"}) and job.gpus == ()
    assert len(warnings) == 1 and "job 4242" in warnings[0] and "gpus" in warnings[0]
    with pytest.raises(ParseError):
        pm.job_from_pyslurm(stand_in_job(), damaged)

    class Count:  # a count that is neither a number nor text of digits
        def __index__(self):
            raise TypeError("not a count")

        def __int__(self):
            raise TypeError("not a count")

    warnings = []
    node = pm.node_from_pyslurm(stand_in_node(configured_gres={"gpu:h100": Count()}), None, warnings)
    assert node.name == "node01" and node.state != "unknown" and node.reason == "Xid 79"
    assert node.unknown == frozenset({"gpus"}) and node.gpus == ()
    assert len(warnings) == 1 and "node01" in warnings[0]
    assert pm.node_from_pyslurm(stand_in_node(), None, []).unknown == frozenset()
