"""Several clusters in one TUI (issue 22): ``:cluster NAME`` and ``c`` switch what the
main views show, screens stay on the cluster they were opened for, one cluster's
outage is a stale banner for that cluster alone, the fleet Pulse lists every
cluster's suspects and drained nodes with the cluster named, and an action goes
through the gate of the cluster in front (its audit line names it)."""

from __future__ import annotations

from dataclasses import replace

from cockpit.backends.demo import DemoBackend
from cockpit.config import Config, General, Refresh
from cockpit.core.audit import read_audit
from cockpit.tui.app import CockpitApp
from cockpit.tui.commands import completions
from cockpit.tui.screens.detail import NodeDetailScreen
from cockpit.tui.screens.fleet import FleetScreen
from tuiwait import screen_text, wait_for_text, wait_until
from cockpit.models import record_replace

from .fakes import NOW, FakeBackend

FAST = Config(refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1, topology=0.1))
ODD = "lab[red]2"  # a cluster name is a cluster string: shown as text, never as markup


class OtherBackend(FakeBackend):
    """A second cluster: the same shapes under other node names and job ids (``shift``
    added to each; 0 keeps cluster a's ids)."""

    name = "other"

    def __init__(self, shift: int = 900) -> None:
        super().__init__()
        self.nodes = tuple(record_replace(n, name="b-" + n.name) for n in self.nodes)
        self.partitions = tuple(replace(p, nodes=tuple("b-" + x for x in p.nodes)) for p in self.partitions)
        self.jobs = tuple(record_replace(j, job_id=j.job_id + shift, nodes=tuple("b-" + x for x in j.nodes),
                                         gpus=tuple(record_replace(g, node="b-" + g.node) for g in j.gpus))
                          for j in self.jobs)


def two_clusters(config: Config = FAST, other: str = "b", clock=lambda: NOW):
    a, b = FakeBackend(), OtherBackend()
    app = CockpitApp(a, replace(config, cluster="a"), clock=clock,
                     fleet=((b, replace(config, cluster=other)),), unopened={"c": "slurmrestd did not answer"})
    return app, a, b


async def settle(pilot, app) -> None:
    """Both clusters' first snapshots are in (each poller is a worker that never ends)."""
    await wait_until(pilot, lambda: all(link.snapshot is not None for link in app.fleet.links.values()),
                     "every cluster's first snapshot")
    await pilot.pause()


def nodes_shown(app) -> set[str]:
    table = app.main.views["nodes"].table
    return {str(k) for k in table.data.order} if table.data is not None else set()


async def test_colon_cluster_switches_the_views_and_the_header_names_it():
    app, _a, _b = two_clusters()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await wait_until(pilot, lambda: "gpu03" in nodes_shown(app), "cluster a's nodes")
        assert "⎈ a" in screen_text(app)
        assert completions(app, "cluster ") == ["cluster a", "cluster b"]  # Tab completes the names
        await pilot.press("colon", *"cluster b", "enter")
        await wait_until(pilot, lambda: "b-gpu03" in nodes_shown(app), "cluster b's nodes")
        assert "gpu03" not in nodes_shown(app)
        assert app.current_view() == "nodes" and app.services.name == "b"
        await wait_for_text(pilot, "⎈ b")
        await pilot.press("colon", *"cluster nosuch", "enter")
        await wait_until(pilot, lambda: any("unknown cluster 'nosuch'" in str(n.message) for n in app._notifications),
                         "the unknown cluster named")
        assert app.services.name == "b"


async def test_a_screen_opened_for_a_keeps_showing_a_after_a_switch():
    app, a, b = two_clusters()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("colon", *"node gpu03", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen), "gpu03's detail")
        detail = app.screen
        assert detail.services.name == "a"
        await pilot.press("colon", *"cluster b", "enter")  # from the detail's own command line
        await wait_until(pilot, lambda: app.services.name == "b", "the switch to b")
        assert app.screen is detail and detail.services.name == "a"
        # a's next poll reaches it; b's polls never do
        a.nodes = tuple(record_replace(n, reason="replaced PSU") if n.name == "gpu03" else n for n in a.nodes)
        polls = b.calls["nodes"]
        app.fleet.links["a"].poller.refresh_now()
        app.fleet.links["b"].poller.refresh_now()
        await wait_for_text(pilot, "replaced PSU")
        await wait_until(pilot, lambda: b.calls["nodes"] > polls, "a poll of b")
        await pilot.pause()
        assert "b-gpu" not in screen_text(app)
        await pilot.press("escape")  # back on the main views: cluster b's
        await pilot.press("2")
        await wait_until(pilot, lambda: "b-gpu03" in nodes_shown(app), "cluster b's nodes")


async def test_one_clusters_outage_is_a_banner_for_it_alone():
    now = [float(NOW)]
    app, a, b = two_clusters(clock=lambda: now[0], other=ODD)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        b.fail = True
        app.fleet.links[ODD].poller.refresh_now()
        await wait_until(pilot, lambda: app.fleet.links[ODD].poll_status().stale, "b's fetch to fail")
        await wait_for_text(pilot, f"stale: {ODD}")  # the main header (on a) names the other cluster
        assert not app.main.banner.has_class("-stale")  # a's own banner stays down
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet Pulse")
        text = await wait_for_text(pilot, f"STALE DATA of cluster {ODD}")
        assert "STALE DATA of cluster a" not in text
        assert "Unable to contact slurm controller" in text
        banners = app.screen.pulse.banners
        assert [bn.has_class("-stale") for bn in banners] == [False, True]
        # a keeps polling and its row stays fresh while b is stale
        polls = a.calls["nodes"]
        app.fleet.links["a"].poller.refresh_now()
        await wait_until(pilot, lambda: a.calls["nodes"] > polls, "a poll of a")
        assert not app.fleet.links["a"].poll_status().stale
        rows = app.screen.pulse.clusters.data.rows
        assert rows["a"].values[1] == "ok" and rows[ODD].values[1] == "STALE"
        assert rows["c"].values[1] == "NOT OPENED" and "slurmrestd did not answer" in rows["c"].cells[-1]


async def test_the_fleet_pulse_lists_every_clusters_drained_nodes_named_and_enter_switches():
    app, _a, _b = two_clusters(other=ODD)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet Pulse")
        pulse = app.screen.pulse
        await wait_until(pilot, lambda: pulse.bad.data is not None and pulse.bad.data.order, "drained nodes")
        keys = set(pulse.bad.data.order)
        assert {("a", "gpu03"), ("a", "gpu04"), (ODD, "b-gpu03"), (ODD, "b-gpu04")} <= keys
        text = await wait_for_text(pilot, "b-gpu03")
        assert ODD in text  # literally, brackets and all
        key = (ODD, "b-gpu03")
        pulse.bad.focus()
        pulse.bad.select_key(key)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen), "b-gpu03's detail")
        assert app.screen.key == "b-gpu03" and app.screen.services.name == ODD
        assert app.services.name == ODD


def two_demos(tmp_path) -> CockpitApp:
    """Demo clusters a and b (the same node names), their audit logs under ``tmp_path``."""
    cfg = Config(general=General(demo_audit_log=str(tmp_path / "demo-audit.jsonl"),
                                 audit_log=str(tmp_path / "audit.jsonl")), refresh=FAST.refresh)
    a, b = DemoBackend(seed=7), DemoBackend(seed=8)
    app = CockpitApp(a, replace(cfg, cluster="a"), fleet=((b, replace(cfg, cluster="b")),))
    return app


async def test_an_action_goes_through_the_gate_of_the_cluster_in_front(tmp_path):
    app = two_demos(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("colon", *"cluster b", "enter")
        await wait_until(pilot, lambda: app.services.name == "b", "the switch to b")
        from cockpit.core.actions import yes_policy

        gate = app.gate()
        assert gate is app.fleet.links["b"].gate() and gate is not app.fleet.links["a"].gate()
        gate.confirm = yes_policy(True)
        out = await gate.run("drain", ["dgx006"], reason="fleet test")
        assert out.ok
        (rec,) = read_audit(tmp_path / "demo-audit.jsonl")
        assert (rec["action"], rec["target"], rec["cluster"]) == ("drain", "dgx006", "b")
