"""Partitions from ``scontrol show partition`` text, for Slurm 22.05 whose
``sinfo --json`` lists nodes only and whose scontrol has no ``--json``."""

from __future__ import annotations

import re

from cockpit.backends.slurm_text import parse_scontrol_kv
from cockpit.errors import ParseError, UsageError
from cockpit.hostlist import expand
from cockpit.models import Partition

_TIME = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


def slurm_minutes(value: str, source: str = "scontrol show partition") -> int | None:
    """``UNLIMITED`` -> None, ``1-02:03:00`` -> 1563, ``01:00:00`` -> 60, ``30`` -> 30.

    Raises ParseError for anything else."""
    v = value.strip()
    if v.upper() in ("UNLIMITED", "INFINITE", "NONE", ""):
        return None
    if v.isdigit():
        return int(v)
    m = _TIME.match(v)
    if not m:
        raise ParseError(source, f"bad time {value!r}")
    days, hours, mins, secs = (int(x) if x else 0 for x in m.groups())
    if m.group(2) is None:  # MM:SS
        hours, mins, secs = 0, int(m.group(3)), int(m.group(4))
    return days * 1440 + hours * 60 + mins + (1 if secs else 0)


def parse_partitions_text(text: str, source: str = "scontrol show partition") -> tuple[Partition, ...]:
    """One Partition per record; raises ParseError naming the bad field."""
    out = []
    for rec in parse_scontrol_kv(text, source):
        name = rec.get("PartitionName")
        if not name:
            raise ParseError(source, "record without PartitionName")
        try:
            nodes = expand(rec.get("Nodes"))
        except UsageError as exc:
            raise ParseError(source, f"partition {name}: {exc}") from None
        cpus = rec.get("TotalCPUs", "0")
        if not cpus.isdigit():
            raise ParseError(source, f"partition {name}: bad TotalCPUs {cpus!r}")
        out.append(
            Partition(
                name=name,
                nodes=nodes,
                state=rec.get("State", "UP").upper(),
                is_default=rec.get("Default", "NO").upper() == "YES",
                max_time=slurm_minutes(rec.get("MaxTime", "UNLIMITED"), source),
                total_cpus=int(cpus),
            )
        )
    return tuple(out)
