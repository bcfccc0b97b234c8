"""Partitions and topology are read every interval but rarely change; at 10k nodes
expanding their hostlists costs ~80 ms of the UI thread, so an unchanged output
is not parsed again (and the same objects come back)."""

from __future__ import annotations

from pathlib import Path

from cockpit.runner import LocalRunner
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.backends.slurm_text import parse_scontrol_partitions, parse_topology

DATA = Path(__file__).resolve().parents[1] / "data"


def _backend(tmp_path: Path) -> tuple[SlurmCliBackend, Path, Path]:
    parts, topo = tmp_path / "partitions.txt", tmp_path / "topology.txt"
    parts.write_bytes((DATA / "slurm-22.05/scontrol-show-partition.txt").read_bytes())
    topo.write_bytes((DATA / "slurm-22.05/topology.txt").read_bytes())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(f'#!/bin/sh\ncase "$2" in partition) exec cat {parts};; *) exec cat {topo};; esac\n')
    (bin_dir / "scontrol").chmod(0o755)
    return SlurmCliBackend(LocalRunner(), bin_dir=str(bin_dir)), parts, topo


async def test_unchanged_text_outputs_are_not_parsed_again(tmp_path, monkeypatch):
    backend, parts, topo = _backend(tmp_path)
    calls = []
    import cockpit.backends.slurm_text as slurm_text

    for name in ("parse_scontrol_partitions", "parse_topology"):
        orig = getattr(slurm_text, name)
        monkeypatch.setattr(slurm_text, name, lambda text, _o=orig, _n=name, **kw: calls.append(_n) or _o(text, **kw))
    first_p, first_t = await backend.fetch_partitions(), await backend.fetch_topology()
    assert first_p == parse_scontrol_partitions(parts.read_text()) and first_t == parse_topology(topo.read_text())
    assert await backend.fetch_partitions() is first_p and await backend.fetch_topology() is first_t
    assert calls == ["parse_scontrol_partitions", "parse_topology"]
    parts.write_text(parts.read_text().replace("MaxTime=UNLIMITED", "MaxTime=02:00:00", 1))  # a real change is read
    again = await backend.fetch_partitions()
    assert again != first_p and again == parse_scontrol_partitions(parts.read_text())
    assert calls[-1] == "parse_scontrol_partitions"
