"""The demo backend: deterministic, internally consistent, alive over time,
and with the operator's bad-day cases in place."""

from __future__ import annotations

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.errors import CommandFailed, UsageError
from cockpit.models import ClusterSnapshot

T0 = 1_760_000_000.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def check_invariants(snap: ClusterSnapshot) -> None:
    nodes = {n.name: n for n in snap.nodes}
    parts = {p.name for p in snap.partitions}
    holders: dict[tuple[str, int], int] = {}
    for n in snap.nodes:
        assert n.gpu_alloc <= n.gpu_total, n
        assert n.alloc_cpus <= n.cpus, n
        assert set(n.partitions) <= parts, n
    for j in snap.jobs:
        if j.state == "RUNNING":
            assert j.nodes and len(j.nodes) == j.node_count, j
            for g in j.gpus:
                assert g.node in j.nodes, (j, g)
                node = nodes[g.node]
                assert len(g.indexes) == g.count == j.gpus_per_node, (j, g)
                for idx in g.indexes:
                    assert 0 <= idx < node.gpu_total, (j, g)
                    assert idx in node.gpus[0].alloc_indexes, (j, g, node)
                    assert (g.node, idx) not in holders, f"GPU {g.node}:{idx} held twice"
                    holders[(g.node, idx)] = j.job_id
        if j.state == "PENDING":
            assert j.reason, j
            assert not j.nodes and not j.gpus, j
    # Every allocated GPU index on a node belongs to exactly one running job.
    alloc = {(n.name, i) for n in snap.nodes for i in n.gpus[0].alloc_indexes}
    assert alloc == set(holders)
    for n in snap.nodes:
        if "drain" in n.flags or n.state == "down":
            assert n.reason and n.reason_user and n.reason_time, n


async def snap_at(backend: DemoBackend, clock: Clock, offset: float) -> ClusterSnapshot:
    clock.now = T0 + offset
    return await backend.snapshot()


async def test_frozen_clock_is_deterministic():
    a = await DemoBackend(clock=Clock()).snapshot()
    b = await DemoBackend(clock=Clock()).snapshot()
    assert a == b
    assert a.simulated and "simulated" in a.source
    other = await DemoBackend(seed=8, clock=Clock()).snapshot()
    assert other.jobs != a.jobs


async def test_history_does_not_depend_on_how_often_it_is_polled():
    ca, cb = Clock(), Clock()
    a, b = DemoBackend(clock=ca), DemoBackend(clock=cb)
    for step in range(0, 3600, 45):
        await snap_at(a, ca, step)
    assert await snap_at(a, ca, 3600) == await snap_at(b, cb, 3600)


@pytest.mark.parametrize("offset", [0, 600, 2 * 3600, 30 * 3600])
async def test_invariants_hold_over_time(offset):
    clock = Clock()
    backend = DemoBackend(clock=clock)
    check_invariants(await snap_at(backend, clock, offset))


async def test_scenario_has_the_bad_day_cases():
    backend = DemoBackend(clock=Clock())
    snap = await backend.snapshot()
    # eight whole GPUs a node, but the down node, two of whose GPUs are MIG slices; one node has shards
    assert len(snap.nodes) == 64 and all(n.gpu_total == 8 for n in snap.nodes if n.name != backend.down_node)
    mig = snap.node(backend.down_node)
    assert (mig.gpu_total, [(g.type, g.count, g.alloc_count) for g in mig.mig]) == (6, [("1g.10gb", 14, 0)])
    assert [(n.name, n.shared("shard")) for n in snap.nodes if n.sharing] == [("dgx064", (64, 0))]
    assert sum(1 for n in snap.nodes if n.mig) == 1
    assert {p.name for p in snap.partitions} == {"train", "debug", "interactive"}
    hung = snap.job(backend.hung_job_id)
    assert hung.name == "llama-70b-pretrain" and hung.state == "RUNNING"
    assert T0 - hung.start_time > 86_400 and backend.hung_since > hung.start_time
    xid = snap.node(backend.xid_node)
    assert xid.display_state == "drained" and "Xid 79" in xid.reason
    assert snap.node(backend.down_node).display_state == "down"
    assert any(n.display_state == "draining" for n in snap.nodes)
    reasons = {j.reason.split(",")[0] for j in snap.jobs if j.state == "PENDING"}
    assert {"Resources", "Priority", "QOSMaxGPUPerUser", "ReqNodeNotAvail", "Dependency"} <= reasons
    assert any(j.held and j.reason == "JobHeldUser" for j in snap.jobs)
    array = [j for j in snap.jobs if j.array_job_id == backend.array_job_id]
    assert sum(j.state == "RUNNING" for j in array) == 4
    assert any(j.array_task_string == "4-31%4" and j.state == "PENDING" for j in array)
    het = [j for j in snap.jobs if j.het_job_id == backend.het_job_id]
    assert sorted(j.het_job_offset for j in het) == [0, 1]
    names = {j.name for j in snap.jobs}
    assert "[red]eval[/red]" in names and any(ord(c) > 0xFFFF for n in names for c in n)


async def test_topology_is_a_tree_with_every_node_under_a_leaf():
    backend = DemoBackend(clock=Clock())
    snap = await backend.snapshot()
    assert snap.topology.kind == "tree"
    for n in snap.nodes:
        assert snap.topology.path(n.name)[-1] == "spine"
    leaves = [s for s in snap.topology.switches if s.nodes]
    assert all(8 <= len(s.nodes) <= 16 for s in leaves)


async def test_time_makes_jobs_finish_and_new_ones_start():
    clock = Clock()
    backend = DemoBackend(clock=clock)
    before = await backend.snapshot()
    running0 = {j.job_id for j in before.jobs if j.state == "RUNNING"}
    max_id0 = max(j.job_id for j in before.jobs)
    after = await snap_at(backend, clock, 2 * 3600)
    running1 = {j.job_id for j in after.jobs if j.state == "RUNNING"}
    assert running0 - running1, "no job finished in two hours"
    assert any(i > max_id0 for i in running1), "no newly submitted job started"
    assert after.fetched_at == T0 + 2 * 3600


async def test_cancel_frees_the_hung_jobs_gpus():
    clock = Clock()
    backend = DemoBackend(clock=clock)
    hung = (await backend.snapshot()).job(backend.hung_job_id)
    await backend.cancel_job(backend.hung_job_id)
    snap = await backend.snapshot()
    assert snap.job(backend.hung_job_id).state == "CANCELLED"
    check_invariants(snap)
    for g in hung.gpus:
        held = snap.node(g.node).gpus[0].alloc_indexes
        assert all(j.job_id != hung.job_id for j in snap.jobs if j.state == "RUNNING" and g.node in j.nodes)
        assert len(held) <= 8
    with pytest.raises(CommandFailed, match="already completing or completed"):
        await backend.cancel_job(backend.hung_job_id)


async def test_drain_and_resume_change_node_state():
    clock = Clock()
    backend = DemoBackend(clock=clock, operator="tester")
    await backend.drain_node("dgx050", "bad fan")
    node = (await backend.snapshot()).node("dgx050")
    assert "drain" in node.flags and node.reason == "bad fan"
    assert node.reason_user == "tester" and node.reason_time == int(T0)
    await backend.resume_node(backend.xid_node)
    snap = await backend.snapshot()
    assert not snap.node(backend.xid_node).is_unavailable
    # The job that asked for that node specifically is no longer blocked by it.
    burn = next(j for j in snap.jobs if j.name == f"gpu-burn-{backend.xid_node}")
    assert not burn.reason.startswith("ReqNodeNotAvail")
    check_invariants(snap)


async def test_hold_release_requeue():
    clock = Clock()
    backend = DemoBackend(clock=clock)
    snap = await backend.snapshot()
    pending = next(j for j in snap.jobs if j.state == "PENDING" and not j.held and j.reason == "Priority")
    await backend.hold_job(pending.job_id)
    assert (await backend.snapshot()).job(pending.job_id).reason == "JobHeldAdmin"
    await backend.release_job(pending.job_id)
    assert not (await backend.snapshot()).job(pending.job_id).held
    running = next(j for j in snap.jobs if j.state == "RUNNING" and j.array_job_id is None and j.het_job_id is None)
    await backend.requeue_job(running.job_id)
    job = (await backend.snapshot()).job(running.job_id)
    assert job.state == "PENDING" and "REQUEUED" in job.state_flags and not job.nodes
    with pytest.raises(CommandFailed, match="pending execution"):
        await backend.requeue_job(running.job_id)
    check_invariants(await snap_at(backend, clock, 300))


async def test_unknown_ids_fail_like_slurm():
    backend = DemoBackend(clock=Clock())
    with pytest.raises(CommandFailed, match="Invalid job id specified"):
        await backend.cancel_job(999)
    with pytest.raises(CommandFailed, match="Invalid job id specified"):
        await backend.hold_job("not-a-job")
    with pytest.raises(CommandFailed, match="Invalid node name specified"):
        await backend.drain_node("nosuchnode", "x")
    with pytest.raises(CommandFailed, match="must specify a reason"):
        await backend.drain_node("dgx001", " ")
    with pytest.raises(CommandFailed, match="Invalid node state"):
        await backend.resume_node("dgx001")


async def test_array_task_ids_address_tasks():
    backend = DemoBackend(clock=Clock())
    await backend.cancel_job(f"{backend.array_job_id}_0")
    snap = await backend.snapshot()
    task0 = next(j for j in snap.jobs if j.array_job_id == backend.array_job_id and j.array_task_id == 0)
    assert task0.state == "CANCELLED"
    await backend.cancel_job(backend.array_job_id)  # the array's id cancels the whole array
    snap = await backend.snapshot()
    assert all(j.state == "CANCELLED" for j in snap.jobs if j.array_job_id == backend.array_job_id)


def test_bad_size_is_a_usage_error():
    with pytest.raises(UsageError, match="at least"):
        DemoBackend(nodes=4, clock=Clock())


async def test_scale_gives_many_jobs_and_keeps_invariants():
    backend = DemoBackend.scale(jobs=3000, nodes=256, clock=Clock())
    snap = await backend.snapshot()
    assert len(snap.nodes) == 256 and len(snap.jobs) >= 3000
    check_invariants(snap)


async def test_undrain_and_requeue_hold():
    backend = DemoBackend(clock=Clock())
    snap = await backend.snapshot()
    victim = next(j for j in snap.jobs if j.state == "RUNNING" and j.array_job_id is None and j.het_job_id is None)
    await backend.undrain_node(backend.xid_node)
    assert "drain" not in (await backend.snapshot()).node(backend.xid_node).flags
    with pytest.raises(CommandFailed, match="Invalid node state"):
        await backend.undrain_node(backend.xid_node)
    await backend.requeue_hold_job(victim.job_id)
    snap = await backend.snapshot()
    job = snap.job(victim.job_id)
    assert job.state == "PENDING" and job.held and job.reason == "JobHeldAdmin" and not job.gpus
    check_invariants(snap)


async def test_demo_down_timelimit_top_nice():
    """The demo answers every action the TUI offers, in Slurm's words when refused."""
    from cockpit.errors import CommandFailed

    demo = DemoBackend(clock=lambda: 1_750_000_000.0)
    snap = await demo.snapshot()
    running = next(j for j in snap.jobs if j.state == "RUNNING" and j.node_count == 1 and j.array_job_id is None)
    node = running.nodes[0]
    await demo.set_time_limit(running.job_id, "1-00:00:00")
    assert next(j for j in await demo.fetch_jobs() if j.job_id == running.job_id).time_limit == 1440
    with pytest.raises(CommandFailed, match="Invalid TimeLimit"):
        await demo.set_time_limit(running.job_id, "soon")
    await demo.set_node_down(node, "PSU failure")
    after = await demo.snapshot()
    assert next(n for n in after.nodes if n.name == node).state == "down"
    assert next(j for j in after.jobs if j.job_id == running.job_id).state == "NODE_FAIL"
    pending = next(j for j in after.jobs if j.state == "PENDING" and not j.held)
    await demo.top_job(pending.job_id)
    await demo.nice_job(pending.job_id, 100)
    with pytest.raises(CommandFailed, match="no longer pending"):
        await demo.top_job(running.job_id)


async def test_requeue_excluding_a_node_keeps_the_job_off_it():
    """The hung-job runbook's requeuehold, ExcNodeList, release: in Slurm's order and words."""
    clock = Clock()
    backend = DemoBackend(clock=clock)
    job_id = backend.hung_job_id
    with pytest.raises(CommandFailed, match="no longer pending"):
        await backend.set_excluded_nodes(job_id, backend.straggler_node)
    await backend.requeue_hold_job(job_id)
    with pytest.raises(CommandFailed, match="Invalid node name"):
        await backend.set_excluded_nodes(job_id, "nope01")
    await backend.set_excluded_nodes(job_id, "dgx[001-006]")
    assert await backend.job_excluded_nodes(job_id) == "dgx[001-006]"
    await backend.release_job(job_id)
    for step in range(1, 40):
        snap = await snap_at(backend, clock, step * 60)
        job = snap.job(job_id)
        assert not set(job.nodes) & {f"dgx{i:03d}" for i in range(1, 7)}
    assert await backend.job_state(job_id) == (job.state, job.reason)
    assert await backend.job_state(1) == ("GONE", "") and await backend.fetch_job("1_2") is None


async def test_reboot_drains_then_brings_the_node_back_once_idle():
    clock = Clock()
    backend = DemoBackend(clock=clock)
    node = backend.xid_node
    await backend.reboot_node(node, "Xid 79: GPU fallen off the bus")
    snap = await backend.snapshot()
    assert {"drain", "reboot_requested"} <= set(snap.node(node).flags)
    with pytest.raises(CommandFailed, match="nextstate"):
        await backend.reboot_node(node, "x", nextstate="later")
    snap = await snap_at(backend, clock, 181)
    back = snap.node(node)
    assert not back.flags and back.reason is None and back.boot_time == int(T0) + 180
    check_invariants(snap)


async def test_submitted_jobs_run_by_looks_not_by_time():
    clock = Clock()
    backend = DemoBackend(clock=clock)
    script = "#!/bin/bash\n#SBATCH --job-name=hello\n#SBATCH -N 2 -p debug\n#SBATCH -o out/%x-%j.log\nsrun hostname\n"
    job_id = await backend.submit_batch(script)
    job = await backend.fetch_job(job_id)
    assert job.state == "RUNNING" and len(job.nodes) == 2 and job.partition == "debug"
    assert job.stdout == f"/home/operator/out/hello-{job_id}.log"
    clock.now += 3600  # time alone moves nothing
    assert (await backend.fetch_job(job_id)).state == "RUNNING"
    assert [await backend.job_state(job_id) for _ in range(3)] == [("RUNNING", ""), ("COMPLETED", ""), ("COMPLETED", "")]
    out = backend.probe_runner(None).answer("", ["cat", "--", job.stdout])
    assert out.ok and "SIMULATED" in out.text()
    check_invariants(await backend.snapshot())
