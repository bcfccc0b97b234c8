"""A detail opened for cluster A shows A's facts after a switch to B (issue 22).

Besides Slurm's fields a job's detail shows what cockpit knows of the job: when its
output last changed, why the Pulse suspects it, why it is not in the queue. Those
are the cluster's own (cockpit/tui/jobfacts.py), never the Pulse of the cluster in
front: here cluster b has the same job ids as a, with other facts, so a detail that
asked the cluster in front would show b's facts under a's job id. The same holds for
what a detail acts through: an action asked from a's detail goes through a's gate.

Two fake clusters (tests/tui/fakes.py) whose job 101 writes to a real file each, read
by each cluster's own output watch (here, on this machine: no [general] host)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from cockpit.core.audit import read_audit
from cockpit.models import Job, record_replace
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.actions import ActionResults, ConfirmAction
from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen
from cockpit.tui.services import UnboundScreen
from tuiwait import screen_text, wait_for_text, wait_until

from .fakes import NOW, FakeBackend
from .test_fleet_tui import FAST, OtherBackend, settle, two_demos


class SameIds(OtherBackend):
    """Cluster b: cluster a's job ids under other job names, on its own nodes, and one newer job."""

    def __init__(self) -> None:
        super().__init__(shift=0)
        self.jobs = (*(record_replace(j, name="b-" + j.name) for j in self.jobs),
                     Job(9001, name="b-newest", user="dave", partition="debug", state="PENDING", reason="Priority"))


def two(tmp_path=None):
    """Clusters a and b; with ``tmp_path``, each one's job 101 writes to its own file there:
    a's last 20 minutes ago (a suspect: silent past [tui] silent_after), b's 30 s ago."""
    a, b = FakeBackend(), SameIds()
    if tmp_path is not None:
        for backend, age in ((a, 1200), (b, 30)):
            out = tmp_path / f"{backend.name}-101.out"
            out.write_text("step 1\n")
            os.utime(out, (NOW - age, NOW - age))
            backend.jobs = tuple(record_replace(j, stdout=str(out)) if j.job_id == 101 else j for j in backend.jobs)
    app = CockpitApp(a, replace(FAST, cluster="a"), clock=lambda: NOW, fleet=((b, replace(FAST, cluster="b")),))
    return app, a, b


def detail_text(app) -> str:
    return screen_text(app) if isinstance(app.screen, JobDetailScreen) else ""


async def switch_to_b(pilot, app) -> None:
    """:cluster b from the detail's own command line, then b's Pulse computed (what the
    detail read before the fix: the Pulse of the cluster in front)."""
    await pilot.press("colon", *"cluster b", "enter")
    b = app.fleet.links["b"]
    await wait_until(pilot, lambda: app.services is b and app.main.pulse.tracker is b.tracker
                     and app.main.pulse.latest is not None, "b in front, its Pulse computed")


async def a_polled(pilot, app, a) -> str:
    """a's next poll reaches the detail (renamed job 101 on a): its text then."""
    a.jobs = tuple(record_replace(j, name="llama-70b-r2") if j.job_id == 101 else j for j in a.jobs)
    app.fleet.links["a"].poller.refresh_now()  # the clock stands still: a polls when asked
    return await wait_for_text(pilot, "llama-70b-r2", "a's poll reaching a's detail")


async def test_a_job_detail_keeps_its_clusters_output_age_and_suspect_evidence_after_a_switch(tmp_path):
    app, a, _b = two(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        links = app.fleet.links
        await wait_until(pilot, lambda: links["a"].outputs == {101: NOW - 1200} and links["b"].outputs == {101: NOW - 30},
                         "each cluster's watch reading its job 101's file")
        await pilot.press("colon", *"job 101", "enter")
        detail = await wait_until(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, "a's job 101")
        assert detail.services is app.fleet.links["a"]
        text = await wait_for_text(pilot, "output silent 20m00s", "a's suspect evidence")
        assert "last output 20m00s ago" in text and "llama-70b" in text
        await switch_to_b(pilot, app)
        assert app.screen is detail
        text = await a_polled(pilot, app, a)
        assert "last output 20m00s ago" in text and "output silent 20m00s" in text  # a's facts ...
        assert "30s ago" not in text and "b-llama" not in text and "b-gpu01" not in text  # ... never b's
        assert detail.services.facts.output_mtime(101) == NOW - 1200
        assert app.fleet.links["b"].facts.output_mtime(101) == NOW - 30
        assert app.fleet.links["b"].facts.suspect_evidence(101) == ()


async def test_a_job_detail_gives_its_clusters_fate_of_a_job_id_after_a_switch():
    app, a, _b = two()
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await wait_until(pilot, lambda: app.main.pulse.latest is not None, "a's Pulse computed")
        await pilot.press("colon", *"job 5000", "enter")
        await wait_for_text(pilot, "job 5000: not known to Slurm: the newest job is 105", "a's word for job 5000")
        detail = app.screen
        await switch_to_b(pilot, app)
        link = app.fleet.links["a"]
        before = link.snapshot
        a.nodes = tuple(record_replace(n, reason="replaced PSU") if n.name == "gpu03" else n for n in a.nodes)
        link.poller.refresh_now()  # the clock stands still: a polls when asked
        # a's next snapshot in: it was handed to a's detail in the same handler
        await wait_until(pilot, lambda: link.snapshot is not before, "a's next poll")
        assert app.screen is detail
        text = screen_text(app)
        assert "the newest job is 105" in text and "not seen since" not in text
        assert app.fleet.links["b"].facts.job_fate(5000).startswith("not in the queue, and not seen")  # b's word


async def test_node_detail_opened_for_a_opens_as_jobs_on_a_after_a_switch():
    app, _a, _b = two()
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("colon", *"node gpu01", "enter")
        node = await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen) and app.screen, "gpu01")
        await wait_for_text(pilot, "job 101", "gpu01's job")
        await switch_to_b(pilot, app)
        assert app.screen is node
        await pilot.press("enter")  # the first link: job 101, a's
        job = await wait_until(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen, "job 101")
        assert job.services is app.fleet.links["a"]
        text = await wait_for_text(pilot, "llama-70b", "a's job 101")
        assert "b-llama" not in text and "b-gpu01" not in text


def test_a_bound_screen_without_services_is_refused_not_bound_to_the_cluster_in_front():
    with pytest.raises(TypeError):
        JobDetailScreen(101)  # type: ignore[call-arg]  # services are required
    with pytest.raises(UnboundScreen, match="JobDetailScreen was opened without its cluster's services"):
        JobDetailScreen(101, services=None)  # type: ignore[arg-type]


async def test_an_action_from_a_detail_opened_for_a_goes_through_as_gate_after_a_switch(tmp_path):
    """The same node name on both demo clusters: the drain from a's node detail, asked
    while b is in the main views, is a's (its audit line names a), never b's."""
    app = two_demos(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        assert any(n.name == "dgx006" for n in app.fleet.links["b"].snapshot.nodes)  # b has a dgx006 too
        await pilot.press("colon", *"node dgx006", "enter")
        node = await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen) and app.screen, "a's dgx006")
        await pilot.press("colon", *"cluster b", "enter")
        await wait_until(pilot, lambda: app.services.name == "b" and app.screen is node, "b in front, a's detail on top")
        app.acting.start("node", ("dgx006",), "drain", {"reason": "detail test"})  # what a, drain, reason ask
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmAction), "the confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: isinstance(app.screen, ActionResults), "the results")
        (rec,) = read_audit(tmp_path / "demo-audit.jsonl")
        assert (rec["action"], rec["target"], rec["cluster"]) == ("drain", "dgx006", "a")
