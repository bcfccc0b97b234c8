"""The JSON printed by ``cockpit history``, ``node history``, ``job why``, ``job show``
and ``report utilization`` (``--json``). A public interface: docs/accounting-json.md
documents every field and a test keeps the two in step. Add fields; never rename
or remove one without raising SCHEMA_VERSION."""

from __future__ import annotations

from typing import Any

from cockpit.models.accounting import JobRecord, NodeEvent, QueryCost, Reservation
from cockpit.models.accounting_reports import (
    Efficiency, NodeHistory, UtilRow, Utilization, WhyPending,
)

SCHEMA_VERSION = 1


def cost_to_dict(c: QueryCost) -> dict[str, Any]:
    return {"command": c.command, "seconds": round(c.seconds, 4), "bytes": c.bytes, "records": c.records,
            "bounds": list(c.bounds)}


def job_to_dict(j: JobRecord, reason: str = "") -> dict[str, Any]:
    return {
        "job_id": j.job_id, "job_id_raw": j.job_id_raw, "array_job_id": j.array_job_id,
        "array_task_id": j.array_task_id, "name": j.name, "user": j.user, "account": j.account,
        "partition": j.partition, "qos": j.qos, "state": j.state, "exit_code": j.exit_code,
        "exit_signal": j.exit_signal, "derived_exit_code": j.derived_exit_code, "failure": reason,
        "slurm_reason": j.reason, "submit_time": j.submit_time, "start_time": j.start_time,
        "end_time": j.end_time, "elapsed_s": j.elapsed_s, "time_limit": j.time_limit,
        "nodes": list(j.nodes), "node_count": j.node_count, "cpus": j.cpus, "gpus": j.gpus,
        "alloc_tres": dict(j.alloc_tres),
    }


def event_to_dict(e: NodeEvent) -> dict[str, Any]:
    return {"node": e.node, "kind": e.kind, "state": e.state, "start": e.start, "end": e.end,
            "reason": e.reason, "user": e.user}


def history_to_dict(jobs: tuple[JobRecord, ...], reasons: list[str], start: int, end: int, source: str,
                    costs: tuple[QueryCost, ...]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "source": source, "start": start, "end": end,
            "jobs": [job_to_dict(j, r) for j, r in zip(jobs, reasons)], "costs": [cost_to_dict(c) for c in costs]}


def node_history_to_dict(h: NodeHistory, reasons: list[str]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "node": h.node, "start": h.start, "end": h.end,
            "summary": h.summary, "flapping": h.flapping, "counts": dict(h.counts),
            "xids": {str(k): v for k, v in h.xids.items()}, "failed_jobs": h.failed_jobs,
            "events": [event_to_dict(e) for e in h.events],
            "recent_jobs": [job_to_dict(j, r) for j, r in zip(h.recent_jobs, reasons)],
            "costs": [cost_to_dict(c) for c in h.costs]}


def efficiency_to_dict(e: Efficiency) -> dict[str, Any]:
    return {m.name: {"percent": m.percent, "used": m.used, "source": m.source} for m in e.measures}


def reservation_to_dict(r: Reservation) -> dict[str, Any]:
    return {"name": r.name, "start": r.start, "end": r.end, "nodes": list(r.nodes), "flags": sorted(r.flags),
            "users": list(r.users), "accounts": list(r.accounts), "partition": r.partition, "state": r.state,
            "maintenance": r.is_maintenance}


def why_to_dict(w: WhyPending) -> dict[str, Any]:
    p = w.priority
    return {
        "schema_version": SCHEMA_VERSION, "job_id": w.job_id, "state": w.state, "slurm_reason": w.reason,
        "summary": w.summary, "asks": w.asks,
        "priority": None if p is None else {"priority": p.priority, "factors": dict(p.factors),
                                            "ahead": w.ahead, "weights": dict(w.weights)},
        "limits": [{"scope": f.scope, "per": f.per, "key": f.limit.key, "tres": f.limit.tres, "limit": f.limit.limit,
                    "used": f.limit.used, "asks": f.asks, "blocks": f.blocks, "text": f.text} for f in w.limits],
        "reservations": [{**reservation_to_dict(f.reservation), "covers": list(f.nodes), "all_nodes": f.all_nodes,
                          "text": f.text} for f in w.reservations],
        "dependencies": [{"kind": d.kind, "job_id": d.job_id, "state": d.state, "fulfilled": d.fulfilled,
                          "text": d.text} for d in w.dependencies],
        "free_blocks": [{"kind": b.kind, "name": b.name, "nodes": list(b.nodes), "free_gpus": b.free_gpus,
                         "nodes_that_fit": b.nodes_that_fit, "fits": b.fits} for b in w.free_blocks],
        "start_estimate": w.start_estimate, "start_nodes": w.start_nodes, "notes": list(w.notes),
        "costs": [cost_to_dict(c) for c in w.costs],
    }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def util_row_to_dict(r: UtilRow) -> dict[str, Any]:
    return {"scope": r.scope, "name": r.name, "start": r.start, "end": r.end, "capacity_gpu_h": _r(r.capacity),
            "allocated_gpu_h": _r(r.allocated), "idle_in_alloc_gpu_h": _r(r.idle_in_alloc),
            "drained_gpu_h": _r(r.drained), "unallocated_gpu_h": _r(r.unallocated),
            "utilization_pct": _r(r.utilization), "jobs": r.jobs}


def utilization_to_dict(u: Utilization) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "start": u.start, "end": u.end, "bucket_s": u.bucket_s,
            "jobs": u.jobs, "rows": [util_row_to_dict(r) for r in u.rows],
            "trend": [util_row_to_dict(r) for r in u.trend], "sources": dict(u.sources),
            "band_pct": [70, 80], "rent_line_pct": 50, "costs": [cost_to_dict(c) for c in u.costs],
            "warnings": list(u.warnings)}
