"""The tables of ``cockpit snapshot``: nodes, jobs, topology. Cluster strings are data:
sanitised text, never markup (see :mod:`cockpit.commands._columns` for the fitting)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from cockpit.commands._columns import Column, delimited, output_width, text_lines
from cockpit.hostlist import collapse
from cockpit.models.cluster import UNKNOWN_CELL, or_unknown
from cockpit.text import sanitize

TABLES = ("nodes", "jobs", "topology")

# Keys stay whole; the long lists give way first (GPU indexes, then partitions, reasons).
NODE_COLUMNS = (Column("NODE"), Column("STATE"), Column("CPU"), Column("GPU"), Column("GPU IDX", 1),
                Column("PARTITIONS", 2, 10), Column("REASON", 3, 12), Column("BY"), Column("AGE"))
JOB_COLUMNS = (Column("JOBID"), Column("NAME", 3, 8), Column("USER"), Column("PARTITION"),
               Column("STATE"), Column("NODES"), Column("GPUS", 1), Column("REASON", 2, 8))
# Shards, MPS and MIG slices beside the GPUs (``+4/16 shard +0/7 1g.10gb``): a column only
# where some node has them, so a plain cluster's table (and its tsv/csv) is as it was.
# At a width it does not fit even cut, it is left out (the JSON and a pipe keep it).
GRES_COLUMN = Column("SHARED/MIG", 4, 10, drop=True)
TOPO_COLUMNS = (Column("SWITCH/BLOCK"), Column("LEVEL"), Column("NODES", 1, 12), Column("CHILDREN", 2, 10))


def ago(epoch: int | None, now: float) -> str:
    if not epoch:
        return ""
    secs = max(0, int(now - epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def index_ranges(indexes: Sequence[int]) -> str:
    """``0-3,6``: eight indexes as ``0-7`` (it was ``0,1,2,3,4,5,6,7``, 15 columns a node)."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(set(indexes)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def node_columns(nodes) -> tuple[Column, ...]:
    return NODE_COLUMNS + ((GRES_COLUMN,) if any(n.gres_extra for n in nodes) else ())


def node_rows(nodes, now: float) -> list[tuple]:
    extra = any(n.gres_extra for n in nodes)
    rows = []
    for n in nodes:
        idx = ";".join(index_ranges(g.alloc_indexes) for g in n.gpus if g.alloc_indexes)
        rows.append((n.name, n.display_state, f"{n.alloc_cpus}/{n.cpus}", n.gpu_cell, idx,
                     ",".join(n.partitions), or_unknown(n, "reason", n.reason or ""), n.reason_user or "",
                     ago(n.reason_time, now) if n.reason else "") + ((n.gres_extra,) if extra else ()))
    return rows


def job_gpus(job) -> str:
    """``0-7`` (``0-7 x4`` on four nodes) when every node holds the same indexes, else
    ``node01:0-3 node02:4-7``: the NODES column already names the nodes."""
    if "gpus" in job.unknown:
        return UNKNOWN_CELL
    if not job.gpus:
        return f"{job.gpus_per_node}/node" if job.gpus_per_node else ""
    each = {index_ranges(g.indexes) or str(g.count) for g in job.gpus}
    if len(each) == 1:
        return each.pop() + (f" x{len(job.gpus)}" if len(job.gpus) > 1 else "")
    return " ".join(f"{g.node}:{index_ranges(g.indexes) or g.count}" for g in job.gpus)


def job_rows(jobs) -> list[tuple]:
    return [(j.display_id, j.name, j.user, j.partition, j.state, collapse(j.nodes), job_gpus(j),
             or_unknown(j, "reason", j.reason if j.state == "PENDING" else "")) for j in jobs]


def topo_rows(topology) -> list[tuple]:
    rows = [(s.name, str(s.level), collapse(s.nodes), ",".join(s.switches)) for s in topology.switches]
    return rows + [(b.name, "", collapse(b.nodes), "") for b in topology.blocks]


def snapshot_tables(snap, now: float) -> list[tuple[str, tuple[Column, ...], list[tuple]]]:
    """(name, columns, rows) of each table the snapshot has."""
    out = [("nodes", node_columns(snap.nodes), node_rows(snap.nodes, now)), ("jobs", JOB_COLUMNS, job_rows(snap.jobs))]
    if snap.topology.kind != "none":
        out.append(("topology", TOPO_COLUMNS, topo_rows(snap.topology)))
    return out


def print_snapshot(snap, fmt: str = "table", only: str | None = None, stream=None) -> None:
    """Print the tables: ``table`` fitted to the terminal (whole in a pipe), or
    ``tsv``/``csv`` (every cell whole, one header row a table, a blank line between)."""
    stream = stream or sys.stdout
    tables = [t for t in snapshot_tables(snap, time.time()) if only in (None, t[0])]
    if fmt in ("tsv", "csv"):
        stream.write("\n".join(delimited(cols, rows, fmt) for _, cols, rows in tables))
        return
    label = " (SIMULATED)" if snap.simulated else ""
    stream.write(f"{sanitize(snap.source)}{label} - Slurm {snap.slurm_version or '?'}\n")
    width = output_width(stream)
    for name, cols, rows in tables:
        kind = f"{snap.topology.kind}, " if name == "topology" else ""
        stream.write(f"\n{name.capitalize()} ({kind}{len(rows)})\n")
        stream.write("".join(line + "\n" for line in text_lines(cols, rows, width)))
