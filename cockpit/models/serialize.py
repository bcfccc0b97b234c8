"""The JSON form of a ClusterSnapshot, as printed by ``cockpit snapshot --format json``.

This schema is a public interface (scripts depend on it); docs/snapshot-json.md
documents it field by field, and a test keeps the two in step. Add fields;
never rename or remove one without bumping SCHEMA_VERSION.
"""

from __future__ import annotations

from typing import Any

from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology
from cockpit.models.cluster import mig_profile

SCHEMA_VERSION = 1


def _unknown_null(out: dict[str, Any], unknown: frozenset[str], keys: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """A field that could not be read is null in JSON (never 0 or idle), and named in ``unknown``."""
    for field in unknown:
        for key in keys.get(field, ()):
            out[key] = None
    out["unknown"] = sorted(unknown)
    return out


_NODE_UNKNOWN = {"state": ("state", "display_state"),
                 "gpus": ("gpus", "gpu_total", "gpu_alloc", "mig", "mig_total", "mig_alloc", "sharing",
                          "shard_total", "shard_used", "mps_total", "mps_used"),
                 "reason": ("reason", "reason_user", "reason_time")}
_JOB_UNKNOWN = {"state": ("state",), "gpus": ("gpus", "gpus_per_node", "gpu_type", "gpu_count"),
                "reason": ("reason",)}


def node_to_dict(n: Node) -> dict[str, Any]:
    return _unknown_null(_node_dict(n), n.unknown, _NODE_UNKNOWN)


def _node_dict(n: Node) -> dict[str, Any]:
    return {
        "name": n.name,
        "state": n.state,
        "display_state": n.display_state,
        "flags": sorted(n.flags),
        "reason": n.reason,
        "reason_user": n.reason_user,
        "reason_time": n.reason_time,
        "cpus": n.cpus,
        "alloc_cpus": n.alloc_cpus,
        "memory_mb": n.memory_mb,
        "alloc_memory_mb": n.alloc_memory_mb,
        "partitions": list(n.partitions),
        "gpus": [
            {"type": g.type, "count": g.count, "alloc_indexes": list(g.alloc_indexes),
             "alloc_count": g.alloc_count} for g in n.gpus
        ],
        "gpu_total": n.gpu_total,
        "gpu_alloc": n.gpu_alloc,
        "mig": [
            {"type": g.type, "profile": mig_profile(g.type), "count": g.count,
             "alloc_indexes": list(g.alloc_indexes), "alloc_count": g.alloc_count} for g in n.mig
        ],
        "mig_total": n.mig_total,
        "mig_alloc": n.mig_alloc,
        "sharing": [{"name": s.name, "type": s.type, "total": s.total, "used": s.used} for s in n.sharing],
        **_shared(n, "shard"),
        **_shared(n, "mps"),
        "address": n.address,
        "features": list(n.features),
        "boot_time": n.boot_time,
    }


def _shared(n: Node, name: str) -> dict[str, Any]:
    total, used = n.shared(name)
    return {f"{name}_total": total, f"{name}_used": used}


def job_to_dict(j: Job) -> dict[str, Any]:
    return _unknown_null(_job_dict(j), j.unknown, _JOB_UNKNOWN)


def _job_dict(j: Job) -> dict[str, Any]:
    return {
        "job_id": j.job_id,
        "display_id": j.display_id,
        "array_job_id": j.array_job_id,
        "array_task_id": j.array_task_id,
        "array_task_string": j.array_task_string,
        "het_job_id": j.het_job_id,
        "het_job_offset": j.het_job_offset,
        "name": j.name,
        "user": j.user,
        "account": j.account,
        "partition": j.partition,
        "state": j.state,
        "state_flags": sorted(j.state_flags),
        "reason": j.reason,
        "held": j.held,
        "nodes": list(j.nodes),
        "node_count": j.node_count,
        "cpus": j.cpus,
        "gpus": [
            {"node": g.node, "type": g.type, "count": g.count, "indexes": list(g.indexes)} for g in j.gpus
        ],
        "gpus_per_node": j.gpus_per_node,
        "gpu_type": j.gpu_type,
        "gpu_count": j.gpu_count,
        "submit_time": j.submit_time,
        "start_time": j.start_time,
        "end_time": j.end_time,
        "time_limit": j.time_limit,
        "command": j.command,
        "work_dir": j.work_dir,
        "stdout": j.stdout,
        "stderr": j.stderr,
        "exit_code": j.exit_code,
        "exit_signal": j.exit_signal,
    }


def partition_to_dict(p: Partition) -> dict[str, Any]:
    return {
        "name": p.name,
        "nodes": list(p.nodes),
        "state": p.state,
        "is_default": p.is_default,
        "max_time": p.max_time,
        "total_cpus": p.total_cpus,
    }


def topology_to_dict(t: Topology) -> dict[str, Any]:
    return {
        "kind": t.kind,
        "switches": [
            {
                "name": s.name,
                "level": s.level,
                "nodes": list(s.nodes),
                "switches": list(s.switches),
                "link_speed": s.link_speed,
            }
            for s in t.switches
        ],
        "blocks": [
            {"name": b.name, "nodes": list(b.nodes), "index": b.index, "size": b.size} for b in t.blocks
        ],
    }


def snapshot_to_dict(s: ClusterSnapshot) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "source": s.source,
        "simulated": s.simulated,
        "slurm_version": s.slurm_version,
        "fetched_at": s.fetched_at,
        "errors": list(s.errors),
        "nodes": [node_to_dict(n) for n in s.nodes],
        "partitions": [partition_to_dict(p) for p in s.partitions],
        "jobs": [job_to_dict(j) for j in s.jobs],
        "topology": topology_to_dict(s.topology),
    }
