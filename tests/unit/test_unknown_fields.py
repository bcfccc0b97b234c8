"""A field that matters (state, GPUs, reason) that could not be read is shown as
unknown, never as 0 or idle: in the TUI's rows, the headless tables and JSON.
The records are real ones (Slurm-web's 24.11 restd bodies) with one field damaged."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from cockpit.backends.slurm_json import parse_scontrol_nodes, parse_squeue
from cockpit.commands._tables import job_rows, node_rows
from cockpit.models.serialize import job_to_dict, node_to_dict
from cockpit.models.unread import count_partial, count_unread, is_unread, summary
from cockpit.tui.rows import job_row, node_row

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-json"
NODE = json.loads((DATA / "slurm-24.11_data_parser-v0.0.41_restd-nodes_slurmweb.json").read_text())
JOB = json.loads((DATA / "slurm-24.11_data_parser-v0.0.41_restd-job-gpus-multi-nodes_slurmweb.json").read_text())


def _nodes(key, junk):
    doc = copy.deepcopy(NODE)
    doc["nodes"][0][key] = junk
    warnings: list[str] = []
    return parse_scontrol_nodes(json.dumps(doc), warnings=warnings), warnings


def test_a_node_with_unreadable_gpus_shows_question_marks_not_zero():
    nodes, warnings = _nodes("gres", "gpu:h100:lots")
    n = nodes[0]
    assert n.unknown == {"gpus"} and len(nodes) == len(NODE["nodes"])
    assert node_row(n).cells[4] == "?" and node_rows([n], 0)[0][3] == "?"
    d = node_to_dict(n)
    assert (d["gpus"], d["gpu_total"], d["gpu_alloc"], d["unknown"]) == (None, None, None, ["gpus"])
    assert warnings == [f"scontrol show node --json: node {n.name} gpus not understood: "
                        "bad GRES count 'lots' in 'gpu:h100:lots' (shown as unknown)"]
    assert is_unread(warnings[0]) and summary(warnings) == "1 node with unknown fields"


def test_a_node_with_an_unreadable_state_is_never_idle_and_its_gpus_never_free():
    nodes, warnings = _nodes("state", 7)
    n = nodes[0]
    assert n.unknown == {"state"} and n.display_state == "unknown" and n.is_unavailable
    assert node_to_dict(n)["state"] is None and node_rows([n], 0)[0][1] == "unknown"
    assert "unknown" in node_row(n).cells[1]


def test_a_node_with_an_unreadable_reason_shows_a_question_mark():
    nodes, _ = _nodes("reason", {"text": "x"})
    n = nodes[0]
    assert n.unknown == {"reason"} and node_row(n).cells[7] == "?" and node_rows([n], 0)[0][6] == "?"
    assert node_to_dict(n)["reason"] is None


def test_a_job_with_unreadable_gpus_shows_a_question_mark():
    doc = copy.deepcopy(JOB)
    doc["jobs"][0]["gres_detail"] = [{"gpu": 4}, "gpu:1"]
    warnings: list[str] = []
    (job,) = parse_squeue(json.dumps(doc), warnings=warnings)
    assert job.unknown == {"gpus"} and job_row(job).cells[6] == "?" and job_rows([job])[0][6] == "?"
    d = job_to_dict(job)
    assert (d["gpus"], d["gpu_count"], d["unknown"]) == (None, None, ["gpus"])
    assert [w for w in warnings if is_unread(w)] == [f"squeue --json: job {job.job_id} gpus not understood: gres_detail entry is not a string: {{'gpu': 4}} (shown as unknown)"]


def test_the_counts_keep_left_out_and_partly_read_apart():
    errors = ["s: node a not understood: x (left out, the others are shown)",
              "s: node b gpus not understood: y (shown as unknown)",
              "s: node b reason not understood: z (shown as unknown)"]
    assert count_unread(errors) == {"node": 1} and count_partial(errors) == {"node": 1}
    assert summary(errors) == "1 node not understood; 1 node with unknown fields"


def test_a_grouped_sinfo_entry_with_unreadable_gpus_keeps_its_nodes_unknown():
    from cockpit.backends.slurm_json_nodes import parse_sinfo

    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "slurm-24.11" / "sinfo.json").read_text())
    grp = next(g for g in doc["sinfo"] if g["gres"]["total"])
    grp["gres"]["total"] = ["not", "text"]
    warnings: list[str] = []
    nodes, _ = parse_sinfo(json.dumps(doc), warnings=warnings)
    names = set(grp["nodes"]["nodes"])
    hit = [n for n in nodes if n.name in names]
    assert hit and all(n.unknown == {"gpus"} and n.gpu_cell == "?" for n in hit)
    assert any("gpus not understood" in w and w.endswith("(shown as unknown)") for w in warnings)
