"""One node record that could not be read: the header counts it, ``!`` names it,
and every other node is in the nodes view. Through the real replay backend, over
Slurm-web's recorded 24.05 restd listing with one node damaged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cockpit.backends.replay import ReplayBackend
from cockpit.config import Config, Refresh
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.problems import ProblemsScreen
from tuiwait import wait_for_text, wait_until

SITE = Path(__file__).resolve().parents[1] / "data" / "slurm-site"
FAST = Config(refresh=Refresh(nodes=0.1, jobs=0.1, partitions=0.1, topology=0.1))


def _recording(tmp_path: Path, damage: tuple[str, str] | None) -> Path:
    doc = json.loads((SITE / "slurm-24.05.3_data_parser-v0.0.41_restd-nodes-100_slurmweb.json").read_text())
    if damage:
        doc["nodes"][50][damage[0]] = damage[1]  # cn051, the drained one
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "scontrol-nodes.json").write_text(json.dumps(doc))
    shutil.copy(SITE / "slurm-24.05.3_data_parser-v0.0.41_restd-jobs_slurmweb.json", rec / "squeue.json")
    shutil.copy(SITE / "slurm-24.05.3_data_parser-v0.0.41_restd-partitions_slurmweb.json", rec / "partitions.json")
    return rec


async def test_the_header_counts_the_node_left_out_and_bang_names_it(tmp_path):
    # a CPU count that is not a number: the record is left out (CPUs are not a field shown as unknown)
    app = CockpitApp(ReplayBackend(str(_recording(tmp_path, damage=("cpus", "many")))), FAST)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: app.snapshot is not None and len(app.snapshot.nodes) == 99, "99 nodes")
        await wait_for_text(pilot, "1 node not understood")
        assert "cn051" not in {n.name for n in app.snapshot.nodes}
        await pilot.press("exclamation_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, ProblemsScreen), "the problems screen")
        text = await wait_for_text(pilot, "cn051")
        assert "not understood" in text and "'many'" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ProblemsScreen), "back")


async def test_a_node_whose_gpus_cannot_be_read_stays_with_them_unknown(tmp_path):
    app = CockpitApp(ReplayBackend(str(_recording(tmp_path, damage=("gres", "gpu:(null):x(IDX:0-7)")))), FAST)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: app.snapshot is not None and len(app.snapshot.nodes) == 100, "100 nodes")
        await wait_for_text(pilot, "1 node with unknown fields")
        assert app.snapshot.node("cn051").unknown == {"gpus"} and app.snapshot.node("cn051").gpu_cell == "?"
        await pilot.press("exclamation_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, ProblemsScreen), "the problems screen")
        text = await wait_for_text(pilot, "cn051")
        assert "gpus not understood" in text and "shown as unknown" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ProblemsScreen), "back")


async def test_nothing_is_counted_when_every_node_was_read(tmp_path):
    app = CockpitApp(ReplayBackend(str(_recording(tmp_path, damage=None))), FAST)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: app.snapshot is not None and len(app.snapshot.nodes) == 100, "100 nodes")
        text = await wait_for_text(pilot, "replay of")
        assert "not understood" not in text
        await pilot.press("exclamation_mark")
        await wait_for_text(pilot, "Every record of the last fetch was read")
