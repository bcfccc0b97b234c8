"""The Nodes view and node detail on nodes read from recordings of shards and MIG slices
(tests/data/slurm-gres/SOURCES.md): the FRIDA site's sinfo table and Cloudac7's
``Gres=gpu:a100:2,gpu:1g.10gb:14`` node, through the same reader as a real fetch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cockpit.backends.slurm_json_nodes import node_from_record
from cockpit.backends.slurm_textcap import read_capture
from cockpit.models import Partition
from tuiwait import screen_text, wait_for_text, wait_until

from .fakes import FakeBackend
from .test_pilot import make_app, settle

GRES = Path(__file__).resolve().parents[1] / "data" / "slurm-gres"


def _recorded_nodes():
    text = (GRES / "frida-ulfri-docs-slurm-gres-shard-2024-01-EXCERPT.txt").read_text().split("\n", 1)[1]
    rows = {r["NODELIST"]: r for r in read_capture(text).rows}  # the dev rows repeat ana: one record
    recs = [{"name": n, "state": "idle", "cpus": r["CPUS(A/I/O/T)"].split("/")[3], "partitions": ["frida"],
             "gres": r["GRES"], "gres_used": r["GRES_USED"]} for n, r in rows.items()]
    conf = (GRES / "cloudac7-blog-slurm-mig-conf-EXCERPT.txt").read_text()
    gres = re.search(r"\bGres=(\S+)", conf).group(1)
    # in use: one whole A100 and two slices (Slurm's indexes: the slices come after the two A100s)
    recs.append({"name": "c51-g002", "state": "mixed", "cpus": 64, "partitions": ["frida"], "gres": gres,
                 "gres_used": "gpu:a100:1(IDX:0),gpu:1g.10gb:2(IDX:2-3)"})
    return tuple(node_from_record(r, "recorded", []) for r in recs)


class RecordedGres(FakeBackend):
    """The fake cluster's jobs, with nodes read from the shard and MIG recordings."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes = _recorded_nodes()
        self.jobs = ()
        self.partitions = (Partition("frida", tuple(n.name for n in self.nodes), is_default=True),)


def _row(text: str, node: str) -> str:
    return next(ln for ln in text.splitlines() if re.search(rf"\b{re.escape(node)}\b", ln))


@pytest.mark.parametrize("size", [(80, 24), (160, 40)], ids=["80x24", "160x40"])
async def test_nodes_view_shows_shards_and_slices_beside_the_gpus(size):
    app = make_app(RecordedGres())
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        text = await wait_for_text(pilot, "SHARED/MIG", "the SHARED/MIG column")
        assert re.search(r"0/8\s+\+0/640 shard", _row(text, "ana"))
        assert re.search(r"1/2\s+\+2/14 1g\.10gb", _row(text, "c51-g002"))
        # a node without shards or slices has the cell empty: its GPUs, then its partition
        assert re.search(r"0/8\s+frida", _row(text, "axa"))
        table = app.main.active_table()
        assert "SHARED/MIG" in [table.columns[p.index].label for p in table.column_layout.placed]


async def test_a_cluster_without_shards_or_mig_has_no_such_column():
    app = make_app(FakeBackend())
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        text = await wait_for_text(pilot, "gpu01")
        assert "SHARED/MIG" not in text
        table = app.main.active_table()
        shared = [c.label for c in table.columns].index("SHARED/MIG")
        assert shared not in [p.index for p in table.column_layout.placed]


async def test_the_column_chooser_knows_the_shared_column():
    from cockpit.tui.screens.tablecmds import ColumnsScreen

    app = make_app(RecordedGres())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "C")
        chooser = await wait_until(pilot, lambda: isinstance(app.screen, ColumnsScreen) and app.screen, "chooser")
        assert "SHARED/MIG" in chooser.labels


async def test_node_detail_lists_each_gpu_type_the_shards_and_the_slices():
    app = make_app(RecordedGres())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("colon", *"node c51-g002", "enter")
        text = await wait_for_text(pilot, "MIG 1g.10gb")
        assert re.search(r"GPUs\s+1/2 allocated \(whole GPUs\)", text)
        assert re.search(r"GPU type a100\s+1/2 in use", text)
        assert re.search(r"MIG 1g\.10gb\s+2/14 slices in use", text)
        assert "GPU 1 a100" in text and "GPU 2 " not in text  # rows for the two whole GPUs only
        await pilot.press("escape")
        await pilot.press("colon", *"node ana", "enter")
        text = await wait_for_text(pilot, "shards")
        assert re.search(r"shards\s+0/640 in use \(shard:A100_80GB\)", text)
        assert re.search(r"GPU type A100_80GB\s+0/8 in use", text)
        assert "MIG" not in text
