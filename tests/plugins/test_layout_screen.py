"""The layout picture: snapshots at 80x24 and 200x60 with 64 and 512 GPUs, preview toggle."""

from __future__ import annotations

import pytest
from textual.app import App

from cockpit.models import Switch, Topology
from cockpit_layout.alloc import fabric_from_topology, planned_nodes
from cockpit_layout.check import to_result
from cockpit_layout.picture import draw
from cockpit_layout.rules import Plan, analyze
from cockpit_layout.screen import LayoutGrid, LayoutScreen
from cockpit_layout.spec import LayoutSpec


def result_for(nnodes: int, per_leaf: int = 8, **spec):
    """A deterministic plan: nnodes x 8 GPUs, per_leaf nodes per leaf switch under one spine."""
    names = [f"node{i:02d}" for i in range(1, nnodes + 1)]
    nleaves = -(-nnodes // per_leaf)
    leaves = [Switch(f"leaf{j + 1}", 0, tuple(names[j * per_leaf:(j + 1) * per_leaf])) for j in range(nleaves)]
    topo = Topology("tree", switches=(*leaves, Switch("spine", 1, (), tuple(s.name for s in leaves))))
    plan = Plan(tuple(planned_nodes(names, 8)), LayoutSpec(**spec), fabric_from_topology(topo))
    return to_result(analyze(plan), plan, False).to_dict()


class LayoutTestApp(App):
    def __init__(self, result):
        super().__init__()
        self.result = result

    def on_mount(self) -> None:
        self.push_screen(LayoutScreen(self.result))


# 64 GPUs: 8 nodes, 4 per leaf, TP 4, PP 4 (stages 2 and 3 sit under leaf2: a pipeline hop
# crosses the spine, so a finding and a fix show).
# 512 GPUs: TP 8, PP 8 over 64 nodes under 8 leaves.
CASES = {64: dict(per_leaf=4, tp=4, pp=4), 512: dict(tp=8, pp=8)}


@pytest.mark.parametrize("gpus", [64, 512])
@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
def test_layout_snapshot(snap_compare, gpus, size):
    assert snap_compare(LayoutTestApp(result_for(gpus // 8, **CASES[gpus])), terminal_size=size)


def test_layout_snapshot_preview_of_the_fix(snap_compare):
    app = LayoutTestApp(result_for(16, tp=8, pp=2))
    assert snap_compare(app, press=["p"], terminal_size=(120, 30))


async def test_preview_toggle_switches_the_drawn_layout():
    res = result_for(16, tp=8, pp=2)
    app = LayoutTestApp(res)
    async with app.run_test(size=(100, 30)) as pilot:
        grid = app.screen.query_one(LayoutGrid)
        assert grid.current()["order"] == "tp-cp-ep-dp-pp"
        await pilot.press("p")
        assert grid.preview and grid.current()["order"] == "tp-cp-ep-pp-dp"


def test_grouped_rows_keep_every_node_visible_in_24_lines():
    res = result_for(64, tp=8, pp=8)
    text = draw(res["data"]["layout"], res["data"]["topology"], 60, 22).plain
    lines = text.splitlines()
    assert len(lines) <= 22
    assert "node[01-08]" in text and "node[57-64]" in text  # all 64 nodes folded, none dropped
