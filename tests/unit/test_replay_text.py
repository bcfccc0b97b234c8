"""``--replay`` of a folder of saved Slurm text: ``scontrol -d show node`` and
``scontrol -d show job`` text of the test clusters (22.05, 24.11, 26.05), recorded at
the same moment as their JSON (tests/data/slurm-*/README.md), replays as the same
snapshot as the JSON does; squeue's table (public recordings, tests/data/slurm-text/
SOURCES.md) gives its jobs; a damaged record costs that record, or that field."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _cockpit(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent-cockpit-test", TZ="UTC")
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def _snap(folder: Path) -> tuple[int, dict]:
    proc = _cockpit("--replay", str(folder), "snapshot", "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _text_folder(tmp_path: Path, version: str, *names: str) -> Path:
    out = tmp_path / "text"
    out.mkdir()
    for n in names:
        shutil.copy(DATA / f"slurm-{version}" / n, out / n)
    return out


def _json_folder(tmp_path: Path, version: str) -> Path:
    # the JSON of the same moment: scontrol show node --json where recorded (24.11+), else 22.05's per-node sinfo
    src, out = DATA / f"slurm-{version}", tmp_path / "json"
    out.mkdir()
    node_json = src / "scontrol-show-node.json"
    shutil.copy(node_json if node_json.is_file() else src / "sinfo.json",
                out / ("scontrol-nodes.json" if node_json.is_file() else "sinfo.json"))
    # scontrol show job --json lists the finished jobs that squeue no longer shows, as the text does
    job_json = src / "scontrol-show-job.json"
    shutil.copy(job_json if job_json.is_file() else src / "squeue.json", out / "squeue.json")
    shutil.copy(src / "version.txt", out / "version.txt")
    return out


def _one_task(display_id: str) -> str:
    # the last pending task of an array: 26.05's JSON calls it the remainder "4" (2_[4]), 22.05's and
    # 24.11's task 4 (4_4); scontrol's text is ArrayTaskId=4 in all three, read as the task
    return display_id.replace("_[", "_").rstrip("]") if display_id.endswith("]") and \
        display_id.split("_[")[-1][:-1].isdecimal() else display_id


NODE_KEYS = ("display_state", "flags", "reason", "reason_user", "cpus", "alloc_cpus", "memory_mb",
             "alloc_memory_mb", "partitions", "gpus", "gpu_total", "gpu_alloc", "address")
JOB_KEYS = ("display_id", "state", "user", "partition", "nodes", "node_count", "gpus", "gpu_count", "time_limit")


@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_saved_scontrol_text_replays_as_the_json_of_the_same_moment(tmp_path, version):
    text = _text_folder(tmp_path, version, "scontrol-d-show-node.txt", "scontrol-d-show-job.txt")
    rc, got = _snap(text)
    assert rc == 0, got["errors"]
    rc_json, want = _snap(_json_folder(tmp_path, version))
    assert got["slurm_version"] == want["slurm_version"] and want["slurm_version"].startswith(version)
    nodes = {n["name"]: {k: n[k] for k in NODE_KEYS} for n in got["nodes"]}
    assert nodes == {n["name"]: {k: n[k] for k in NODE_KEYS} for n in want["nodes"]}
    jobs = {j["job_id"]: {k: j[k] for k in JOB_KEYS} for j in got["jobs"]}
    assert jobs == {j["job_id"]: {k: _one_task(j[k]) if k == "display_id" else j[k] for k in JOB_KEYS}
                    for j in want["jobs"]}
    assert len(nodes) == 4 and jobs


@pytest.mark.parametrize("name", ["squeue-rancavil-slurm-19.05.txt", "squeue-sched-control-two-trays.txt",
                                  "cluster-22.05-squeue.txt"])
def test_squeue_tables_replay_their_jobs(tmp_path, name):
    folder = tmp_path / "rec"
    folder.mkdir()
    shutil.copy(DATA / "slurm-text" / name, folder / "squeue.txt")
    rc, got = _snap(folder)
    rows = [ln.split() for ln in (folder / "squeue.txt").read_text().splitlines()[1:] if ln.strip()]
    # read by hand off the recording: JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)
    assert [(str(j["job_id"]), j["user"], j["state"][:1]) for j in got["jobs"]] == \
        [(r[0], r[3], {"R": "R", "PD": "P", "CG": "C"}[r[4]]) for r in rows]
    pending = [j["reason"] for j in got["jobs"] if j["state"] == "PENDING"]
    assert pending == [ln.rsplit("(", 1)[1].rstrip(")").strip() for ln in
                       (folder / "squeue.txt").read_text().splitlines()[1:] if ln.rstrip().endswith(")")]
    assert rc == 1  # no nodes were saved: that part of the snapshot is missing, said in errors
    assert any(e.startswith("nodes:") for e in got["errors"])


def test_a_damaged_node_record_in_saved_text_costs_that_field_or_that_node(tmp_path):
    text = _text_folder(tmp_path, "24.11", "scontrol-d-show-node.txt")
    src = (text / "scontrol-d-show-node.txt").read_text()
    src = src.replace("Gres=gpu:h100:8", "Gres=gpu:h100:lots", 1)  # node01's GPUs
    src = src.replace("CPUTot=16", "CPUTot=sixteen", 2).replace("CPUTot=sixteen", "CPUTot=16", 1)  # node02's CPUs
    (text / "scontrol-d-show-node.txt").write_text(src)
    rc, got = _snap(text)
    seen = {n["name"]: n for n in got["nodes"]}
    assert rc == 1 and set(seen) == {"node01", "node03", "node04"}
    assert seen["node01"]["unknown"] == ["gpus"] and seen["node01"]["gpu_total"] is None
    assert any("node node01 gpus not understood" in e for e in got["errors"])
    assert any("node node02 not understood" in e and "cpus" in e for e in got["errors"])


def test_a_node_record_with_a_line_that_is_not_key_value_costs_that_node(tmp_path):
    # one line of node02's record damaged (no '=' left in it): node02 is named, the others replay
    text = _text_folder(tmp_path, "24.11", "scontrol-d-show-node.txt")
    src = (text / "scontrol-d-show-node.txt").read_text()
    head, rest = src.split("NodeName=node02", 1)
    line = next(ln for ln in rest.splitlines()[1:] if ln.strip().startswith("CPUAlloc="))
    rest = rest.replace(line, "   " + line.strip().replace("=", " "), 1)
    (text / "scontrol-d-show-node.txt").write_text(head + "NodeName=node02" + rest)
    rc, got = _snap(text)
    assert rc == 1 and {n["name"] for n in got["nodes"]} == {"node01", "node03", "node04"}
    assert any("node node02 not understood: line is not Key=Value" in e for e in got["errors"])


def test_a_folder_of_text_that_is_not_slurm_is_refused_saying_so(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    proc = _cockpit("--replay", str(tmp_path), "snapshot")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "no saved scontrol show node|job|partition or squeue text" in proc.stderr


def _text_only(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "sinfo"
    folder.mkdir()
    for n in names:
        shutil.copy(DATA / "slurm-text" / n, folder / n)
    return folder


# (file, {node: (display_state, partitions, reason)}) read by hand off each recording
SINFO = [
    ("cluster-22.05-sinfo-N-l.txt", {"node01": ("mixed", ["debug", "gpu"], None),
                                     "node02": ("mixed", ["debug", "gpu"], None),
                                     "node03": ("mixed", ["gpu"], None),
                                     "node04": ("drained", ["gpu"], "rec: Kill task faile")}),  # sinfo cuts it at 20
    ("sinfo-hpc02-test-mix.txt", {"hpc02-test": ("mixed", ["general"], None),
                                  "hpc03-test": ("idle", ["general"], None),
                                  "hpc04-test": ("idle", ["general"], None)}),
    ("sinfo-galaxy-gat2016.txt", {"localhost": ("idle", ["debug"], None)}),
]


@pytest.mark.parametrize("name, want", SINFO)
def test_saved_sinfo_replays_its_nodes_with_their_gpus_unknown(tmp_path, name, want):
    rc, got = _snap(_text_only(tmp_path, name))
    assert {n["name"]: (n["display_state"], n["partitions"], n["reason"]) for n in got["nodes"]} == want
    # no GRES column: the GPUs are not known, never 0 (null, and said in errors: exit 1)
    assert all(n["unknown"] == ["gpus"] and n["gpu_total"] is None for n in got["nodes"])
    assert rc == 1 and sum("gpus not understood" in e for e in got["errors"]) == len(want)


def test_sinfo_with_gres_but_not_its_use_and_sinfo_r_reasons(tmp_path):
    rc, got = _snap(_text_only(tmp_path, "cluster-22.05-sinfo-o.txt", "cluster-22.05-sinfo-R.txt"))
    seen = {n["name"]: n for n in got["nodes"]}
    assert set(seen) == {"node01", "node02", "node03", "node04"}
    assert seen["node04"]["display_state"] == "drained"
    assert (seen["node04"]["reason"], seen["node04"]["reason_user"]) == ("rec: Kill task faile", "root")
    # gpu:h100:8 printed, but not how many are in use: unknown, never "0 of 8 in use"
    assert all(n["unknown"] == ["gpus"] for n in seen.values())
    assert any("no GRES_USED column" in e for e in got["errors"])
