"""The demo grows the accounting data a newcomer needs to see the views: a
flapping node, a job held by the QOS GPU limit, a maintenance reservation, a
history and a utilisation report whose figures add up."""

from __future__ import annotations

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.core.accounting import history, job_query, require_accounting, scheduling_of
from cockpit.core.nodehistory import node_history
from cockpit.core.utilization import utilization
from cockpit.core.whypending import why_pending

NOW = 1_750_000_000.0


@pytest.fixture
def demo():
    return DemoBackend(clock=lambda: NOW)


async def test_the_xid_node_flaps(demo):
    acct = await require_accounting(demo)
    h = await node_history(acct, demo.xid_node, int(NOW) - 14 * 86400, NOW)
    assert h.flapping and h.xids[79] >= 2 and h.counts["drain"] >= 2
    assert h.summary.startswith("drained ") and " in 14 d, " in h.summary and "Xid 79" in h.summary


async def test_a_job_held_by_the_qos_gpu_limit_is_explained(demo):
    snap = await demo.snapshot()
    held = next(j for j in snap.jobs if j.reason == "QOSMaxGPUPerUser")
    w = await why_pending(demo, str(held.job_id), NOW)
    (lim,) = [f for f in w.limits if f.blocks]
    assert (lim.limit.key, lim.limit.tres, lim.limit.limit) == ("MaxTRESPU", "gres/gpu", 64)
    assert lim.limit.used is not None and w.summary.startswith("held back by a limit: QOS normal")


async def test_a_maintenance_reservation(demo):
    res = (await (await scheduling_of(demo)).reservations()).items
    assert any(r.is_maintenance and r.start > NOW for r in res)


async def test_history_and_utilization_add_up(demo):
    acct = await require_accounting(demo)
    h = await history(acct, job_query(int(NOW) - 86400), NOW)
    assert h.jobs and {j.state for j in h.jobs} >= {"COMPLETED", "FAILED"}
    assert all(j.end_time <= NOW for j in h.jobs)
    snap = await demo.snapshot()
    u = await utilization(acct, snap, int(NOW) - 7 * 86400, NOW, tracked=acct.tracked_tres)
    for row in u.rows + u.trend:
        if row.capacity is not None:
            assert row.allocated <= row.capacity + 1e-6, row
    assert u.rows[0].idle_in_alloc is not None and "gres/gpuutil" in u.sources["idle_in_alloc"]
