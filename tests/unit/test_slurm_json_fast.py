"""The msgspec fast path and the json path give the same jobs (or the same error)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.backends import slurm_json, slurm_json_fast
from cockpit.backends.slurm_json import parse_squeue
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-json"
JOB_FILES = sorted(f for f in DATA.glob("*.json") if "job" in f.name or "squeue" in f.name)

needs_msgspec = pytest.mark.skipif(not slurm_json_fast.available(),
                                   reason="msgspec is not installed: only the json path exists")


def _slow(monkeypatch, data):
    monkeypatch.setattr(slurm_json, "decode_jobs", lambda _data: None)
    try:
        return parse_squeue(data)
    finally:
        monkeypatch.undo()


@needs_msgspec
@pytest.mark.parametrize("path", JOB_FILES, ids=lambda p: p.name)
def test_fast_and_json_paths_agree_on_fixtures(path, monkeypatch):
    data = path.read_bytes()
    assert slurm_json_fast.decode_jobs(data) is not None  # really took the fast path
    assert parse_squeue(data) == _slow(monkeypatch, data)


@needs_msgspec
@pytest.mark.parametrize("data", [
    b'{"jobs": [1]}', b'{"jobs": null, "errors": ["boom"]}', b"[]", b'{"jobs": [{"job_id": NaN}]}',
    b'{"jobs": [{"job_id": 123456789012345678901234567890}]}', b"\xff",
])
def test_fast_path_falls_back_to_the_json_errors(data, monkeypatch):
    try:
        fast = parse_squeue(data)
    except ParseError as exc:
        fast = str(exc)
    try:
        slow = _slow(monkeypatch, data)
    except ParseError as exc:
        slow = str(exc)
    assert fast == slow
