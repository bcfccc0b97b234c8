"""What the fleet Pulse shows, from every cluster's snapshot (no Textual).

The same suspects and drained/down nodes as each cluster's own Pulse
(cockpit/tui/pulsedata.py, cockpit/tui/suspects.py), in two tables with the
cluster named first; row keys are ``(cluster, job id)`` and ``(cluster, node)``.
Cluster names are cluster strings: cleaned, shown as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit.models import ClusterSnapshot
from cockpit.text import clean
from cockpit.tui.rows import Column, Row, TableData, build_table
from cockpit.tui.suspects import BAD_NODE_SCHEMA, SUSPECT_SCHEMA, UsualTimes, bad_node_row, find_suspects, suspect_row

CLUSTER = Column("CLUSTER", 7, 0, pin=True)
FLEET_SUSPECT_COLUMNS = (CLUSTER, *(replace(c, field=c.field + 1) for c in SUSPECT_SCHEMA.columns))
FLEET_NODE_COLUMNS = (CLUSTER, *(replace(c, field=c.field + 1) for c in BAD_NODE_SCHEMA.columns))


@dataclass(frozen=True)
class ClusterInput:
    """One cluster's part: its snapshot and what its own Pulse reads beside it."""

    name: str
    snapshot: ClusterSnapshot | None
    usual: UsualTimes | None = None
    outputs: Mapping[int, float] = field(default_factory=dict)
    telemetry: Mapping[tuple[str, int], Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class FleetData:
    suspects: TableData
    bad_nodes: TableData
    counts: Mapping[str, tuple[int, int, int]]  # cluster -> (nodes, drained/down, suspects)


def is_bad(node: Any) -> bool:
    """A node the Pulse lists: drained, down, or not responding."""
    return node.is_unavailable or "not_responding" in node.flags


def _tagged(cluster: str, row: Row) -> Row:
    return Row((cluster, row.key), (clean(cluster, 40), *row.cells), (cluster, *row.values), row.style, row.extra)


def compute_fleet(inputs: Sequence[ClusterInput], now: float, *, silent_after: float) -> FleetData:
    """Every cluster's suspects (most suspicious first, across clusters) and drained/down
    nodes (newest first); a cluster without a snapshot yet adds nothing."""
    suspects, bad, counts = [], [], {}
    for c in inputs:
        snap = c.snapshot
        if snap is None:
            continue
        running = [j for j in snap.jobs if j.state == "RUNNING"]
        found = find_suspects(running, now, last_output=c.outputs, telemetry=c.telemetry, usual=c.usual,
                              silent_after=silent_after)
        nodes = [n for n in snap.nodes if is_bad(n)]
        suspects += [(s.rank, c.name, s) for s in found]
        bad += [(n.reason_time or 0, c.name, n) for n in nodes]
        counts[c.name] = (len(snap.nodes), len(nodes), len(found))
    suspects.sort(key=lambda t: (-t[0], t[1], t[2].job.job_id))
    bad.sort(key=lambda t: (-t[0], t[1], t[2].name))
    return FleetData(
        suspects=build_table([_tagged(name, suspect_row(s)) for _r, name, s in suspects], None, None, False),
        bad_nodes=build_table([_tagged(name, bad_node_row(n)) for _t, name, n in bad], None, None, False),
        counts=counts,
    )
