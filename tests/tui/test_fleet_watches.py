"""Every cluster's own watches in one TUI (issue 22): GPU telemetry, the output watch, the
controller's health line and the flapping marks are node kinds of each cluster's own
poller, kept on its link and shown only while that cluster is in front.

Two fake clusters under different node names (tests/tui/fakes.py): each answers sdiag
with the recorded 22.05 sdiag.txt (cluster b's agent queue raised, the one line changed,
as test_pulse_controller does) and nvidia-smi with the recorded H100 captures
(tests/data/nvidia-smi). Two demo clusters show a cluster not in front getting its
suspects' output-silent and idle-GPU evidence, and its own flapping marks."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from cockpit.backends.demo import DemoBackend
from cockpit.backends.slurm_sdiag import parse_sdiag_text
from cockpit.config import Config, General, Refresh
from cockpit.errors import CockpitError
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.fleet import FleetScreen
from cockpit.tui.telemetry import KIND as TELEMETRY
from tuiwait import screen_text, wait_for_text, wait_until

from .fakes import NOW, FakeBackend, FakeProbes, result
from .test_fleet_tui import OtherBackend, settle
from .test_telemetry_tui import HEADER, IDLE, LOAD, as_gpu, gpu_row

SDIAG = (Path(__file__).resolve().parents[1] / "data" / "slurm-22.05" / "sdiag.txt").read_text()
QUEUE = "Agent queue size:     0"
assert QUEUE in SDIAG
B_LINE = "controller CRIT: agent queue (RPCs waiting to go out to nodes): 20000"
CFG = Config(general=General(host="login-fake"),
             refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1, topology=0.1, telemetry=1.0))
# the recorded readings: cluster a's gpu01 has GPU 0 idle and GPU 1 loaded; b's b-gpu01 both loaded
LOADED = ["100", "24", "59", "632", "0", "none"]  # util %, mem %, °C, W, ECC, throttle
IDLED = ["0", "0", "41", "70", "0", "none"]


class Sdiag:
    """A cluster whose slurmctld answers sdiag (``sdiag`` is its text) and whose nodes
    answer nvidia-smi (``gpus``: node -> the recorded rows) through its probe runner."""

    sdiag = SDIAG
    gpus: dict[str, list[str]] = {}

    async def fetch_sched_stats(self):
        return parse_sdiag_text(self.sdiag)

    def probe_runner(self, config):
        self.probes = FakeProbes(self.answer)
        return self.probes

    def answer(self, node: str, argv: list[str]):
        if argv[0] != "nvidia-smi":  # the output watch's stat: nothing answers it here
            return CockpitError(f"{node}: not answered in this test")
        return result(argv, "\n".join([HEADER, *self.gpus.get(node, [])]) + "\n")


class A(Sdiag, FakeBackend):
    gpus = {"gpu01": [as_gpu(IDLE, 0), as_gpu(LOAD, 1)]}


class B(Sdiag, OtherBackend):
    sdiag = SDIAG.replace(QUEUE, "Agent queue size:     20000")
    gpus = {"b-gpu01": [as_gpu(LOAD, 0), as_gpu(LOAD, 1)]}


def two(config: Config = CFG):
    a, b = A(), B()
    app = CockpitApp(a, replace(config, cluster="a"), clock=lambda: NOW, fleet=((b, replace(config, cluster="b")),))
    return app, a, b


def controller_line(app) -> str | None:
    w = app.main.pulse.controller
    return str(w.render()).strip() if w.display else None


def smi_nodes(backend) -> set[str]:
    """The nodes asked for their GPUs through this cluster's probe runner."""
    return {node for node, argv in backend.probes.calls if argv[0] == "nvidia-smi"}


async def switch(pilot, app, name: str) -> None:
    await pilot.press("colon", *f"cluster {name}", "enter")
    await wait_until(pilot, lambda: app.services.name == name, f"the switch to {name}")


async def test_b_s_controller_line_shows_while_b_is_in_front_and_never_on_a():
    app, _a, b = two()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        la, lb = app.fleet.links["a"], app.fleet.links["b"]
        assert la.controller_watch is not lb.controller_watch  # each cluster's own, on its own poller
        assert "controller" in la.poller.node_kinds and "controller" in lb.poller.node_kinds
        await wait_until(pilot, lambda: lb.controller_line, "b's sdiag read")
        await wait_until(pilot, lambda: la.poller.node_status("controller").last_ok is not None, "a's sdiag read")
        assert lb.controller_line == B_LINE and la.controller_line is None
        await pilot.pause(0)
        assert controller_line(app) is None  # a in front: a's healthy controller, no line
        # the fleet Pulse names the cluster whose controller is unhealthy
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet Pulse")
        text = await wait_for_text(pilot, f"cluster b: {B_LINE}")
        assert "cluster a:" not in text
        await pilot.press("escape")
        await switch(pilot, app, "b")
        assert controller_line(app) == B_LINE  # at the switch, not at b's next read (30 s away)
        await switch(pilot, app, "a")
        assert controller_line(app) is None
        # a new read of b's slurmctld changes b's line, and nothing on a's Pulse
        b.sdiag = SDIAG.replace(QUEUE, "Agent queue size:     30000")
        lb.poller.ask("controller")
        await wait_until(pilot, lambda: lb.controller_line and lb.controller_line.endswith("30000"), "b's next read")
        await pilot.pause(0)
        assert controller_line(app) is None
        await switch(pilot, app, "b")
        assert controller_line(app).endswith("30000")


async def test_each_clusters_gpu_telemetry_is_its_own_and_b_s_polls_never_reach_a_s_views():
    app, a, b = two()
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot, app)
        la, lb = app.fleet.links["a"], app.fleet.links["b"]
        assert la.live_telemetry is not lb.live_telemetry and TELEMETRY in lb.poller.node_kinds
        await switch(pilot, app, "b")
        await pilot.press("3")
        text = await wait_for_text(pilot, lambda t: gpu_row(t, "b-gpu01", 0)[-6:] == LOADED, "b's readings")
        assert app.telemetry is lb.telemetry and all(node.startswith("b-") for node, _ in lb.telemetry)
        assert not any(node.startswith("b-") for node, _ in la.telemetry)
        assert gpu_row(text, "gpu01", 0) == []  # a's node is not b's
        assert smi_nodes(b) and all(n.startswith("b-") for n in smi_nodes(b)) and not smi_nodes(a)
        # back to a: a's readings and a's panel, at once; then a's own poll of its rows
        await switch(pilot, app, "a")
        gpus = app.main.views["gpus"]
        assert gpus.telemetry is la.telemetry
        assert lb.live_telemetry.panel.display is False
        text = await wait_for_text(pilot, lambda t: gpu_row(t, "gpu01", 0)[-6:] == IDLED
                                   and gpu_row(t, "gpu01", 1)[-6:] == LOADED, "a's readings")
        assert "b-gpu01" not in text and la.live_telemetry.panel.display is True
        assert smi_nodes(a) and not any(n.startswith("b-") for n in smi_nodes(a))  # each through its own runner
        assert all(n.startswith("b-") for n in smi_nodes(b))
        # b polls while a is in front: its readings change on its link, a's views stay a's
        shown = dict(la.telemetry)
        b.gpus = {"b-gpu01": [as_gpu(IDLE, 0), as_gpu(IDLE, 1)]}
        polls = lb.live_telemetry.polls
        lb.live_telemetry.ask({"b-gpu01"})
        await wait_until(pilot, lambda: lb.live_telemetry.polls > polls and lb.telemetry.get(("b-gpu01", 0), {})
                         .get("util") == 0.0, "b's next reading")
        await pilot.pause(0)
        assert gpus.telemetry is la.telemetry and la.telemetry == shown
        assert app.main.pulse.telemetry is la.telemetry
        assert "b-gpu01" not in screen_text(app)


async def test_a_cluster_not_in_front_gets_its_suspects_evidence_and_its_own_flapping_marks(tmp_path):
    frozen = lambda: 1_750_000_000.0  # noqa: E731
    cfg = Config(general=General(audit_log=str(tmp_path / "audit.jsonl")))
    a, b = DemoBackend(seed=7, clock=frozen), DemoBackend(seed=8, clock=frozen)
    # b reads no node history: a's flapping node must never be marked on b's Nodes view
    off = replace(cfg, cluster="b", refresh=replace(cfg.refresh, flapping=0))
    app = CockpitApp(a, replace(cfg, cluster="a"), clock=frozen, fleet=((b, off),))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        la, lb = app.fleet.links["a"], app.fleet.links["b"]
        assert la.output_watch is not lb.output_watch and lb.output_watch is not None
        # b is never in front: its own watches find its hung job's silent output and idle GPUs
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet Pulse")
        pulse = app.screen.pulse
        key = ("b", b.hung_job_id)

        def b_evidence() -> str:
            rows = pulse.suspects.data.rows if pulse.suspects.data is not None else {}
            return rows[key].values[6] if key in rows else ""

        evidence = await wait_until(pilot, lambda: "output silent" in b_evidence() and "% use" in b_evidence()
                                    and b_evidence(), "b's hung job with its own evidence")
        assert "GPU(s) at 0% use" in evidence
        hung = next(j for j in lb.snapshot.jobs if j.job_id == b.hung_job_id)
        assert b.hung_job_id in lb.outputs and set(hung.nodes) & {node for node, _ in lb.telemetry}
        await pilot.press("escape")
        # flapping: a's node is marked on a's Nodes view, and not once b is in front
        nodes = app.main.views["nodes"]
        await wait_until(pilot, lambda: a.xid_node in nodes.flapping, "a's flapping node")
        assert la.flapping and not lb.flapping and lb.flapping_watch.why_not == "off ([refresh] flapping = 0)"
        await switch(pilot, app, "b")
        assert nodes.flapping == frozenset()
        assert app.main.pulse.outputs is lb.outputs and app.main.pulse.telemetry is lb.telemetry
        await switch(pilot, app, "a")
        assert nodes.flapping == la.flapping and a.xid_node in nodes.flapping


async def test_a_node_detail_of_b_gets_b_s_readings_after_a_switch_to_a():
    from cockpit.tui.screens.detail import NodeDetailScreen

    app, a, b = two()
    async with app.run_test(size=(150, 40)) as pilot:
        await settle(pilot, app)
        await switch(pilot, app, "b")
        await pilot.press("colon", *"node b-gpu01", "enter")
        detail = await wait_until(pilot, lambda: isinstance(app.screen, NodeDetailScreen) and app.screen,
                                  "b-gpu01's detail")
        await wait_for_text(pilot, "100% util", "b's readings in b's node detail")
        await pilot.press("colon", *"cluster a", "enter")  # from the detail's own command line
        await wait_until(pilot, lambda: app.services.name == "a", "the switch to a")
        assert app.screen is detail and detail.services.name == "b"
        lb = app.fleet.links["b"]
        b.gpus = {"b-gpu01": [as_gpu(IDLE, 0), as_gpu(LOAD, 1)]}
        lb.poller.ask(TELEMETRY)  # b's next read: its detail's node, b in the background
        text = await wait_for_text(pilot, lambda t: re.search(r"(?<!\d)0% util", t), "b's next reading in b's detail")
        assert lb.telemetry[("b-gpu01", 0)]["util"] == 0.0 and "b-gpu01" in text
        assert not any(n.startswith("b-") for n in smi_nodes(a))
