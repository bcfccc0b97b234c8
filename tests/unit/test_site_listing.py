"""A production-sized node listing in replay: every node, state, reason and GPU
count read; one damaged node record costs that node only (exit 1, named).

The base recording is real: Slurm-web's slurmrestd 24.05.3 bodies (100 nodes of
a cluster whose partitions configure ~1,000, tests/data/slurm-site/SOURCES.md).
No public listing of ~1,000 nodes in a JSON dialect cockpit replays was found,
so the 1,000-node file here is BUILT, by repeating that real file's records ten
times with the nodes renamed (``cn001`` -> ``cn001-r3``). Nothing else in the
records is changed; the build is labelled as such in every name below.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "tests" / "data" / "slurm-site"
NODES = SITE / "slurm-24.05.3_data_parser-v0.0.41_restd-nodes-100_slurmweb.json"
JOBS = SITE / "slurm-24.05.3_data_parser-v0.0.41_restd-jobs_slurmweb.json"
PARTS = SITE / "slurm-24.05.3_data_parser-v0.0.41_restd-partitions_slurmweb.json"
UNTYPED = SITE / "slurm-25.11_data_parser-v0.0.41_restd-nodes-untyped-gpus_slurmweb.json"

# What an operator reads off each recorded state list, written out by hand (not
# cockpit's mapping): Slurm's IDLE+DRAIN is "drained", and so on.
DISPLAY = {("ALLOCATED",): "allocated", ("IDLE",): "idle", ("IDLE", "DRAIN"): "drained",
           ("DOWN",): "down", ("MIXED",): "mixed", ("IDLE", "COMPLETING"): "idle"}


def _cockpit(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent-cockpit-test")
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def built_listing(copies: int) -> dict:
    """BUILT, not recorded: the real 100-node body with its records repeated
    ``copies`` times, each copy's nodes renamed ``-r<k>``."""
    doc = json.loads(NODES.read_text())
    records = doc["nodes"]
    doc["nodes"] = []
    for k in range(copies):
        for rec in records:
            twin = copy.deepcopy(rec)
            twin["name"] = twin["hostname"] = f"{rec['name']}-r{k}"
            doc["nodes"].append(twin)
    return doc


def _recording(tmp_path: Path, nodes_doc: dict) -> Path:
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "scontrol-nodes.json").write_text(json.dumps(nodes_doc))
    (rec / "squeue.json").write_bytes(JOBS.read_bytes())
    (rec / "partitions.json").write_bytes(PARTS.read_bytes())
    return rec


def _expected(nodes_doc: dict) -> dict[str, tuple[str, str | None, int]]:
    out = {}
    for n in nodes_doc["nodes"]:
        gres = n["gres"]
        gpus = sum(int(item.split("(")[0].rsplit(":", 1)[1]) for item in gres.split(",")) if gres else 0
        out[n["name"]] = (DISPLAY[tuple(n["state"])], n["reason"] or None, gpus)
    return out


def _snapshot(rec: Path) -> tuple[subprocess.CompletedProcess, dict]:
    proc = _cockpit("--replay", str(rec), "snapshot", "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads(proc.stdout)


def _seen(doc: dict) -> dict[str, tuple[str, str | None, int]]:
    return {n["name"]: (n["display_state"], n["reason"], n["gpu_total"]) for n in doc["nodes"]}


def test_the_real_24_05_listing_reads_completely(tmp_path):
    nodes_doc = json.loads(NODES.read_text())
    proc, doc = _snapshot(_recording(tmp_path, nodes_doc))
    assert proc.returncode == 0, proc.stderr
    assert doc["errors"] == [] and doc["slurm_version"] == "24.05.3"
    assert _seen(doc) == _expected(nodes_doc)
    # hand-checked in the file: 79 allocated, 19 idle, cn051 drained, cn084 down
    states = [n["display_state"] for n in doc["nodes"]]
    assert (states.count("allocated"), states.count("idle")) == (79, 19)
    assert _seen(doc)["cn051"][:2] == ("drained", "ECC memory error")
    assert _seen(doc)["cn084"][:2] == ("down", "CPU dead")
    assert {p["name"] for p in doc["partitions"]} == {"batch", "debug", "interactive", "ia"}


def test_a_built_1000_node_listing_reads_completely(tmp_path):
    nodes_doc = built_listing(10)
    proc, doc = _snapshot(_recording(tmp_path, nodes_doc))
    assert proc.returncode == 0, proc.stderr
    assert len(doc["nodes"]) == 1000
    assert _seen(doc) == _expected(nodes_doc)


def test_one_damaged_node_of_1000_costs_that_node_only(tmp_path):
    nodes_doc = built_listing(10)
    victim = nodes_doc["nodes"][617]
    victim["cpus"] = "many"  # not a field an operator judges by: the record is left out
    proc, doc = _snapshot(_recording(tmp_path, nodes_doc))
    assert proc.returncode == 1
    expected = _expected({"nodes": [n for n in nodes_doc["nodes"] if n is not victim]})
    assert _seen(doc) == expected and len(expected) == 999
    named = [e for e in doc["errors"] if f"node {victim['name']} not understood" in e]
    assert len(named) == 1 and len(doc["errors"]) == 1, doc["errors"]
    assert victim["name"] in proc.stderr


# The fields that matter, damaged in one real record each: the node stays in the
# view with that field null (never 0 GPUs, never idle), the others are read.
@pytest.mark.parametrize("key, junk, field, nulls", [
    ("gres", "gpu:(null):x(IDX:0-7)", "gpus", ("gpus", "gpu_total", "gpu_alloc")),  # a count that is not a number
    ("state", {"not": "a state"}, "state", ("state", "display_state")),
    ("reason", ["not", "a", "reason"], "reason", ("reason", "reason_user", "reason_time")),
])
def test_a_node_whose_one_important_field_is_damaged_stays_with_it_unknown(tmp_path, key, junk, field, nulls):
    nodes_doc = built_listing(10)
    expected = _expected(nodes_doc)
    victim = nodes_doc["nodes"][617]
    victim[key] = junk
    proc, doc = _snapshot(_recording(tmp_path, nodes_doc))
    assert proc.returncode == 1
    seen = {n["name"]: n for n in doc["nodes"]}
    assert len(seen) == 1000
    shown = seen[victim["name"]]
    assert shown["unknown"] == [field] and all(shown[k] is None for k in nulls), shown
    others = {k: v for k, v in _seen(doc).items() if k != victim["name"]}
    assert others == {k: v for k, v in expected.items() if k != victim["name"]}
    assert all(n["unknown"] == [] for n in doc["nodes"] if n is not shown)
    assert doc["errors"] == [f"scontrol show node --json: node {victim['name']} {field} not understood: "
                             + doc["errors"][0].split(" not understood: ", 1)[1]]
    assert doc["errors"][0].endswith("(shown as unknown)")
    # the headless table shows it as unknown too, never 0/0 or idle
    table = _cockpit("--replay", str(tmp_path / "rec"), "snapshot", "--table", "nodes", "--format", "tsv")
    lines = [line.split("\t") for line in table.stdout.splitlines()]
    row = dict(zip(lines[0], next(r for r in lines if r[0] == victim["name"])))
    assert table.returncode == 1
    column, cell = {"state": ("STATE", "unknown"), "gpus": ("GPU", "?"), "reason": ("REASON", "?")}[field]
    assert row[column] == cell, row


def test_untyped_gpus_are_counted_with_their_use(tmp_path):
    # Slurm-web's 25.11 restd body: gpu3/gpu4 are untyped (gres gpu:4, gres_used gpu:0)
    nodes_doc = json.loads(UNTYPED.read_text())
    proc, doc = _snapshot(_recording(tmp_path, nodes_doc))
    seen = {n["name"]: n for n in doc["nodes"]}
    assert seen["gpu3"]["gpus"] == [{"type": None, "count": 4, "alloc_indexes": [], "alloc_count": 0}]
    assert seen["gpu1"]["gpus"][0]["type"] == "h100" and seen["gpu1"]["gpu_total"] == 4
    assert (seen["cn2"]["display_state"], seen["cn2"]["reason"]) == ("drained", "ECC memory error")
    assert not [e for e in doc["errors"] if "not understood" in e]
