"""Headless commands as a user runs them: exit codes, one-line errors, no Textual."""

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


def cockpit(*args, env=None, timeout=60):
    base = dict(os.environ, COCKPIT_CONFIG="", XDG_CONFIG_HOME="/nonexistent-cockpit-test")
    base.pop("COCKPIT_CONFIG")
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "cockpit.cli", *args], capture_output=True, text=True, env=base, timeout=timeout, cwd=ROOT
    )


def _one_line_error(proc):
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines, "expected an error message"
    return lines


def test_snapshot_demo_json_is_simulated_and_complete():
    proc = cockpit("--demo", "snapshot", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["simulated"] is True and "simulated" in doc["source"].lower()
    assert doc["schema_version"] == 1
    assert len(doc["nodes"]) >= 32 and doc["jobs"]
    assert any(n["display_state"] == "drained" and n["reason"] for n in doc["nodes"])


def test_snapshot_filters(tmp_path):
    proc = cockpit("--demo", "snapshot", "--format", "json", "--state", "drained")
    doc = json.loads(proc.stdout)
    assert doc["nodes"] and all(n["display_state"] == "drained" for n in doc["nodes"])
    proc = cockpit("--demo", "snapshot", "--partition", "no-such-partition")
    assert proc.returncode == 2
    assert "unknown partition 'no-such-partition'" in _one_line_error(proc)[0]


def test_no_textual_on_headless_paths():
    code = (
        "import sys, runpy; sys.argv=['cockpit','--demo','snapshot','--format','json'];"
        "import cockpit.cli as c; rc=c.main(sys.argv[1:]);"
        "c.main(['--demo','check']);"
        "bad=[m for m in sys.modules if m == 'textual' or m.startswith('textual.')];"
        "print('TEXTUAL' if bad else 'CLEAN', file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.stderr.strip().splitlines()[-1] == "CLEAN", proc.stderr


def test_bad_config_is_one_line(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[general]\nreadonly = true\n")
    proc = cockpit("--config", str(cfg), "--demo", "snapshot")
    assert proc.returncode == 2
    assert _one_line_error(proc) == [f"cockpit: {cfg}: unknown key general.readonly "
                                     "(known: audit_log, backend, command_timeout, demo_audit_log, host, read_only, slurm_bin_dir)"]


def test_missing_slurm_commands(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[general]\nbackend = 'slurm-cli'\nslurm_bin_dir = '{empty}'\n")
    proc = cockpit("--config", str(cfg), "snapshot")
    assert proc.returncode == 3
    lines = _one_line_error(proc)
    assert len(lines) == 1 and "command not found" in lines[0] and str(empty) in lines[0]


def _recorded_dir():
    for name in ("slurm-24.11", "slurm-22.05"):
        d = DATA / name
        if (d / "squeue.json").is_file():
            return d
    pytest.skip("no recorded Slurm outputs under tests/data")


def test_replay_of_recorded_cluster(tmp_path):
    src = _recorded_dir()
    proc = cockpit("--replay", str(src), "snapshot", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert {n["name"] for n in doc["nodes"]} >= {"node01", "node02", "node03", "node04"}
    assert doc["topology"]["kind"] == "tree"


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong-type"])
def test_malformed_json_is_one_line(tmp_path, damage):
    src = _recorded_dir()
    dst = tmp_path / "rec"
    shutil.copytree(src, dst)
    path = dst / "squeue.json"
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00\xffnot json at all")
    else:
        doc = json.loads(raw)
        doc["jobs"] = "surprise"
        path.write_text(json.dumps(doc))
    proc = cockpit("--replay", str(dst), "snapshot", "--format", "json")
    assert proc.returncode != 0
    lines = _one_line_error(proc)
    assert any("squeue --json" in ln for ln in lines), lines


def test_unknown_state_is_named(tmp_path):
    src = _recorded_dir()
    dst = tmp_path / "rec"
    shutil.copytree(src, dst)
    path = dst / "squeue.json"
    doc = json.loads(path.read_bytes())
    if not doc.get("jobs"):
        pytest.skip("recording holds no jobs")
    st = doc["jobs"][0]["job_state"]
    doc["jobs"][0]["job_state"] = ["EXPLODING"] if isinstance(st, list) else "EXPLODING"
    path.write_text(json.dumps(doc))
    proc = cockpit("--replay", str(dst), "snapshot", "--format", "json")
    assert proc.returncode == 1
    assert "EXPLODING" in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["jobs"], "the rest of the data is still shown"


@pytest.mark.parametrize("argv", [
    ["snapshot", "--demo", "--format", "json"],
    ["--demo", "snapshot", "--format", "json"],
    ["snapshot", "--format", "json", "--demo"],
])
def test_global_flags_before_or_after_the_subcommand(argv):
    proc = cockpit(*argv)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["simulated"] is True and doc["source"].startswith("demo: simulated")


def test_replay_flag_after_the_subcommand():
    src = _recorded_dir()
    before = json.loads(cockpit("--replay", str(src), "snapshot", "--format", "json").stdout)
    after = json.loads(cockpit("snapshot", "--replay", str(src), "--format", "json").stdout)
    assert after["nodes"] == before["nodes"] and after["source"].startswith("replay of ")


def test_a_global_flag_after_a_nested_subcommand_is_honoured(tmp_path):
    # --read-only after `job cancel` refuses (exit 2) and --demo after it keeps Slurm untouched.
    proc = cockpit("job", "cancel", "48213", "--demo", "--read-only", "--yes",
                   env={"XDG_STATE_HOME": str(tmp_path)})
    assert proc.returncode == 2 and "read-only mode: refusing to cancel 48213" in proc.stderr
