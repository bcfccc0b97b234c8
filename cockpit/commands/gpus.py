"""``cockpit gpus [--nodes ...] [--json]``: live GPU telemetry per node and
index, joined to the Slurm job holding each GPU."""

from __future__ import annotations

import json
import sys

from cockpit.errors import EXIT_FAILED, EXIT_OK, UsageError
from cockpit.hostlist import expand


def register(sub) -> None:
    p = sub.add_parser("gpus", help="GPU telemetry (nvidia-smi over SSH, or Prometheus with --prometheus) joined to Slurm jobs")
    p.add_argument("--nodes", metavar="HOSTLIST", help="nodes to ask (default: every node Slurm lists with GPUs)")
    p.add_argument("--json", action="store_true", help="one JSON object per GPU")
    p.set_defaults(func=run)


def _fmt(v, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        v = f"{v:g}"
    return f"{v}{unit}"


def row_to_json(row, source: str = "nvidia-smi") -> dict:
    from dataclasses import asdict

    t = row.telemetry
    return {
        "node": row.node, "index": row.index, "node_state": row.node_state,
        "job_id": row.job_id, "job": row.job_display, "user": row.user,
        "source": source if t is None else t.source,
        "telemetry": None if t is None else {**asdict(t), "missing": list(t.missing),
                                             "clock_events": list(t.clock_events), "throttled": t.throttled},
    }


def _print_table(rows, errors: dict[str, str]) -> None:
    head = ("NODE", "GPU", "JOB", "USER", "UTIL", "MEM USED/TOTAL", "TEMP", "POWER", "THROTTLE", "ECC UNC", "REMAP PEND", "PCIE")
    lines = [head]
    for r in rows:
        t = r.telemetry
        if t is None:
            vals = ("-",) * 8
        else:
            vals = (
                _fmt(t.util_gpu, "%") + (" stale" if t.stale else ""), f"{_fmt(t.mem_used_mib)}/{_fmt(t.mem_total_mib)} MiB", _fmt(t.temp_gpu, "C"),
                _fmt(t.power_w, "W"), ",".join(e for e in t.clock_events if e != "gpu_idle") or ("-" if t.clock_event_reasons is None else "none"),
                _fmt(t.ecc_uncorr_volatile), _fmt(t.remapped_pending), f"gen{_fmt(t.pcie_gen)} x{_fmt(t.pcie_width)}",
            )
        lines.append((r.node, str(r.index), r.job_display or "-", r.user or "-", *vals))
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(head))]
    for l in lines:
        print("  ".join(str(c).ljust(w) for c, w in zip(l, widths)).rstrip())
    for node, why in sorted(errors.items()):
        print(f"{node}: error: {why}", file=sys.stderr)


async def _from_prometheus(source, nodes) -> tuple[dict, dict[str, str]]:
    """Prometheus' reading; down or slow is one line and exit 3 (PrometheusError), never 0 %."""
    try:
        reading = await source.read(nodes)
    finally:
        await source.close()
    errors = dict(reading.errors)
    for (node, idx), t in sorted(reading.readings.items()):
        if t.stale:
            errors.setdefault(node, f"{node}: stale series (newest sample {t.age_s:.0f} s old, GPU {idx} and maybe others)")
    return reading.readings, errors


async def run(args, session) -> int:
    from cockpit.commands.exec import fanout_settings, simulated_nodes
    from cockpit.telemetry.collect import TelemetryCollector
    from cockpit.telemetry.join import gpu_owners, join
    from cockpit.telemetry.promsource import job_label_disagreements, prometheus_source

    source = prometheus_source(session.config)
    snap = await session.backend.snapshot()
    if args.nodes:
        nodes = list(expand(args.nodes))
    else:
        nodes = [n.name for n in snap.nodes if n.gpu_total > 0]
    if not nodes:
        raise UsageError("Slurm lists no node with GPUs; name nodes with --nodes")
    notes: list[str] = []
    if source is not None:
        telemetry, errors = await _from_prometheus(source, nodes)
        notes = job_label_disagreements(telemetry, gpu_owners(snap))
    else:
        collector = TelemetryCollector(fanout_settings(session, args), pool=simulated_nodes(session))
        try:
            telemetry = await collector.telemetry_for(nodes)
        finally:
            await collector.close()
        errors = collector.errors
    kind = "nvidia-smi" if source is None else "prometheus"
    rows = join(snap, telemetry, nodes=set(nodes))
    if args.json:
        out = {"source": kind, "gpus": [row_to_json(r, kind) for r in rows], "errors": errors,
               "disagreements": notes}
        json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        _print_table(rows, errors)
        for line in notes:
            print(f"job label disagrees: {line}", file=sys.stderr)
    return EXIT_FAILED if errors or notes else EXIT_OK
