"""Rich tables for headless output. Cluster strings go in as Text, never markup."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cockpit.core.text import sanitize, truncate
from cockpit.hostlist import collapse


def _t(value, width: int = 40) -> Text:
    return Text(truncate(sanitize(value), width))


def _ago(epoch: int | None, now: float) -> str:
    if not epoch:
        return ""
    secs = max(0, int(now - epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _gpu_idx(indexes) -> str:
    return ",".join(str(i) for i in indexes)


def _tight(table: Table) -> Table:
    # One line per row: an operator scans rows, wrapped cells break the scan.
    for col in table.columns:
        col.no_wrap = True
        col.overflow = "ellipsis"
    return table


def print_snapshot(snap, console: Console | None = None) -> None:
    console = console or Console(highlight=False, soft_wrap=False)
    now = time.time()
    label = " (SIMULATED)" if snap.simulated else ""
    console.print(Text(f"{sanitize(snap.source)}{label} - Slurm {snap.slurm_version or '?'}"))
    nodes = Table("NODE", "STATE", "CPU", "GPU", "GPU IDX", "PARTITIONS", "REASON", "BY", "AGE", title="Nodes")
    for n in snap.nodes:
        idx = ";".join(_gpu_idx(g.alloc_indexes) for g in n.gpus if g.alloc_indexes)
        nodes.add_row(
            _t(n.name), _t(n.display_state), f"{n.alloc_cpus}/{n.cpus}", f"{n.gpu_alloc}/{n.gpu_total}",
            _t(idx), _t(",".join(n.partitions)), _t(n.reason or ""), _t(n.reason_user or ""),
            _ago(n.reason_time, now) if n.reason else "",
        )
    console.print(_tight(nodes))
    jobs = Table("JOBID", "NAME", "USER", "PARTITION", "STATE", "NODES", "GPUS", "REASON", title="Jobs")
    for j in snap.jobs:
        gpus = " ".join(f"{g.node}:{_gpu_idx(g.indexes) or g.count}" for g in j.gpus) or (
            f"{j.gpus_per_node}/node" if j.gpus_per_node else ""
        )
        jobs.add_row(
            _t(j.display_id), _t(j.name, 30), _t(j.user), _t(j.partition), _t(j.state),
            _t(collapse(j.nodes)), _t(gpus, 60), _t(j.reason if j.state == "PENDING" else ""),
        )
    console.print(_tight(jobs))
    if snap.topology.kind != "none":
        topo = Table("SWITCH/BLOCK", "LEVEL", "NODES", "CHILDREN", title=f"Topology ({snap.topology.kind})")
        for s in snap.topology.switches:
            topo.add_row(_t(s.name), str(s.level), _t(collapse(s.nodes)), _t(",".join(s.switches)))
        for b in snap.topology.blocks:
            topo.add_row(_t(b.name), "", _t(collapse(b.nodes)), "")
        console.print(_tight(topo))
