"""Partitions from real ``scontrol show partition`` text (recorded on Slurm 22.05)."""

from pathlib import Path

import pytest

from cockpit.backends.slurm_text import duration_minutes as slurm_minutes
from cockpit.backends.slurm_text import parse_scontrol_partitions as parse_partitions_text
from cockpit.errors import ParseError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm-22.05" / "scontrol-show-partition.txt"


def test_recorded_partitions():
    parts = {p.name: p for p in parse_partitions_text(DATA.read_text())}
    assert parts["gpu"].is_default and parts["gpu"].max_time is None and parts["gpu"].total_cpus == 64
    assert parts["gpu"].nodes == ("node01", "node02", "node03", "node04")
    assert not parts["debug"].is_default and parts["debug"].max_time == 60
    assert parts["debug"].nodes == ("node01", "node02") and parts["debug"].state == "UP"


@pytest.mark.parametrize(("text", "minutes"), [("UNLIMITED", None), ("01:00:00", 60), ("1-02:03:00", 1563),
                                               ("30", 30), ("05:30", 5), ("2-00:00:00", 2880)])
def test_slurm_minutes(text, minutes):
    assert slurm_minutes(text) == minutes


@pytest.mark.parametrize("bad", ["PartitionName=x\n   TotalCPUs=lots\n", "Nodes=node[01-\n", "PartitionName=y MaxTime=soon\n"])
def test_bad_partition_text(bad):
    with pytest.raises(ParseError):
        parse_partitions_text(bad)


def test_2411_partition_json_lacks_default_flag_but_text_has_it():
    """Why the CLI backend reads partitions as text on every version."""
    import json

    root = DATA.parents[1] / "slurm-24.11"
    doc = json.loads((root / "scontrol-show-partition.json").read_text())
    assert "DEFAULT" not in json.dumps(doc) and '"default"' not in json.dumps(doc).lower()
    parts = {p.name: p for p in parse_partitions_text((root / "scontrol-show-partition.txt").read_text())}
    assert parts["gpu"].is_default and not parts["debug"].is_default
