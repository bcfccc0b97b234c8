"""docs/snapshot-json.md documents every field cockpit snapshot prints."""

from __future__ import annotations

import re
from pathlib import Path

from cockpit.backends.demo import DemoBackend
from cockpit.models.serialize import snapshot_to_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "snapshot-json.md"


def _documented() -> set[str]:
    # Top-level fields head a table row; nested ones (gpus[].indexes ...) are
    # named in backticks in the row that describes their parent.
    names = set()
    for row in re.findall(r"^\|.*\|$", DOC.read_text(), re.M):
        names.update(re.findall(r"`([a-z_]+)`", row))
    return names


def _keys(obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _keys(v, out)
    return out


async def test_every_printed_field_is_documented():
    snap = await DemoBackend(clock=lambda: 1_750_000_000.0).snapshot()
    keys = _keys(snapshot_to_dict(snap), set())
    missing = keys - _documented()
    assert not missing, f"undocumented in {DOC.name}: {sorted(missing)}"
    assert {"gpus", "alloc_indexes", "display_state", "gpu_count"} <= keys
