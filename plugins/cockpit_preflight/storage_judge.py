"""Judge storage figures: expectations per partition, the slow node among its peers,
what each filesystem means for checkpoints, and the checkpoint time for a model size.

Expectations are per node (``storage_*`` tables of [plugins.preflight], by
partition); the default is the guide's 32 GB/s local sequential read of an 8-GPU
node. A node is named slow when a figure is below ``slow_ratio`` x the median of
the other nodes measured in the same run. A figure that could not be measured is
UNKNOWN, never OK.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from cockpit.plugins.api import CheckResult, Finding, Severity, worst

from cockpit_preflight.common import fmt_rate, fmt_seconds, node_label, pct, slow_members
from cockpit_preflight.settings import expected
from cockpit_preflight.storage_job import LOCAL_FS, NETWORK_FS, NFS, PARALLEL_FS, NodeFigures

# (path, figure attribute, label, config key of the expectation, unit scale of that key)
METRICS = (
    ("local", "seqread", "local sequential read", "storage_local_read_gbps", 1e9),
    ("local", "seqwrite", "local sequential write", "storage_local_write_gbps", 1e9),
    ("local", "randread_iops", "local 4k random read", "storage_local_randread_kiops", 1e3),
    ("shared", "seqread", "shared sequential read", "storage_shared_read_gbps", 1e9),
    ("shared", "seqwrite", "shared sequential write", "storage_shared_write_gbps", 1e9),
    ("shared", "meta:create", "shared file creates", "storage_shared_meta_ops", 1.0),
)


def value_of(node: NodeFigures, path: str, attr: str) -> float | None:
    fig = node.paths.get(path)
    if fig is None:
        return None
    if attr.startswith("meta:"):
        return fig.meta.get(attr[5:])
    return getattr(fig, attr)


def fmt_value(attr: str, value: float | None) -> str:
    if value is None:
        return "-"
    if attr == "randread_iops":
        return f"{value / 1e3:.3g} kIOPS"
    if attr.startswith("meta:"):
        return f"{value:.0f} ops/s"
    return fmt_rate(value)


def _expectations(nodes: Mapping[str, NodeFigures], cfg: Mapping[str, Any],
                  partitions: Mapping[str, Sequence[str]]) -> list[Finding]:
    out = []
    for name, node in sorted(nodes.items()):
        for path, attr, label, key, scale in METRICS:
            want = expected(cfg[key], tuple(partitions.get(name, ())),
                            cfg["storage_default_local_read_gbps"] if key == "storage_local_read_gbps" else None)
            got = value_of(node, path, attr)
            if want is None or got is None:
                continue
            ratio = got / (want * scale)
            sev = (Severity.CRIT if ratio < cfg["crit_ratio"] else Severity.WARN if ratio < cfg["warn_ratio"]
                   else Severity.OK)
            if sev != Severity.OK:
                out.append(Finding(sev, f"{name}: {label} {fmt_value(attr, got)}, {pct(ratio)} of the "
                                        f"{fmt_value(attr, want * scale)} expected", "storage-expectation",
                                   fix="check the node's drives (nvme list, smartctl), its RAID and its filesystem"))
    return out


def _slow(nodes: Mapping[str, NodeFigures], ratio: float) -> tuple[list[Finding], list[str]]:
    out, names = [], []
    for path, attr, label, _key, _scale in METRICS:
        values = {n: v for n, node in nodes.items() if (v := value_of(node, path, attr)) is not None}
        for name, value, ref in slow_members(values, ratio):
            names.append(name)
            out.append(Finding(Severity.CRIT, f"{name} is slow: {label} {fmt_value(attr, value)}, "
                                              f"{pct(value / ref)} of its peers ({fmt_value(attr, ref)})",
                               "storage-slow-node",
                               evidence=tuple(f"{n}: {fmt_value(attr, v)}" for n, v in sorted(values.items())),
                               fix=f"drain {name} and check its drives, RAID and filesystem before the run"))
    return out, sorted(set(names))


def _filesystems(nodes: Mapping[str, NodeFigures]) -> list[Finding]:
    out = []
    for name, node in sorted(nodes.items()):
        for kind, fig in sorted(node.paths.items()):
            fs, where = fig.fstype, f"{fig.fstype} on {fig.source}" if fig.source else str(fig.fstype)
            if fs is None and fig.fs_asked:
                out.append(Finding(Severity.UNKNOWN, f"{name}: filesystem of the {kind} path could not be read",
                                   "storage-filesystem"))
            elif fs is None:
                continue
            elif kind == "shared" and fs in NFS:
                out.append(Finding(Severity.WARN, f"{name}: shared path is NFS ({where}): NFS for checkpoints is "
                                                  "a finding", "storage-nfs-checkpoints",
                                   fix="use a parallel filesystem (Lustre, GPFS ...) for checkpoints, or write them "
                                       "to local NVMe first and copy them asynchronously"))
            elif kind == "shared" and fs not in PARALLEL_FS:
                sev = Severity.WARN if fs in LOCAL_FS else Severity.OK
                out.append(Finding(sev, f"{name}: shared path is {where}, not a parallel filesystem"
                                   + (" (a local filesystem: is it shared at all?)" if fs in LOCAL_FS else ""),
                                   "storage-shared-filesystem"))
            elif kind == "local" and fs in NETWORK_FS:
                out.append(Finding(Severity.WARN, f"{name}: local scratch is on a network filesystem ({where})",
                                   "storage-local-filesystem", fix="point --local at the node's NVMe scratch"))
            elif kind == "local" and fig.raid_level and fig.raid_level != "raid0":
                out.append(Finding(Severity.OK, f"{name}: local scratch is md {fig.raid_level} over "
                                                f"{fig.raid_disks} disks (the guide's layout is RAID0)",
                                   "storage-local-filesystem"))
    return out


def checkpoint(nodes: Mapping[str, NodeFigures], params: float, bytes_per_param: float) -> dict[str, Any]:
    """Checkpoint time when every node measured writes its share at once, at its measured
    sequential write: total bytes / the sum of the nodes' figures (None where unmeasured)."""
    total = params * bytes_per_param
    out: dict[str, Any] = {"params": params, "bytes_per_param": bytes_per_param, "bytes": total,
                           "nodes": len(nodes),
                           "assumption": "bf16 weights (2 B) + fp32 master copy (4 B) + Adam moments (2 x 4 B) "
                                         "per parameter unless configured; sharded over the nodes measured, "
                                         "all writing at once at their measured sequential write"}
    for kind in ("local", "shared"):
        rates = [v for n in nodes.values() if (v := value_of(n, kind, "seqwrite"))]
        out[f"{kind}_seconds"] = total / sum(rates) if rates and len(rates) == len(nodes) else None
    return out


def _checkpoint_finding(ck: dict[str, Any]) -> Finding:
    local, shared = ck["local_seconds"], ck["shared_seconds"]
    title = (f"checkpoint of {ck['params'] / 1e9:g}B parameters ({ck['bytes'] / 1e9:.0f} GB at "
             f"{ck['bytes_per_param']:g} B/param): {fmt_seconds(local)} to local scratch, "
             f"{fmt_seconds(shared)} to the shared path")
    fix = None
    if local is not None and shared is not None and shared > local:
        fix = (f"write checkpoints to local NVMe first and copy them to shared storage asynchronously: "
               f"saves {fmt_seconds(shared - local)} per checkpoint")
    return Finding(Severity.OK, title, "storage-checkpoint-time", detail=ck["assumption"], fix=fix)


def judge(nodes: Mapping[str, NodeFigures], cfg: Mapping[str, Any], partitions: Mapping[str, Sequence[str]],
          *, expected_nodes: Sequence[str] = (), params: float | None = None,
          job: Mapping[str, Any] | None = None) -> CheckResult:
    findings: list[Finding] = []
    for name in expected_nodes:
        if name not in nodes:
            findings.append(Finding(Severity.UNKNOWN, f"{name} printed no figures", "storage-measured"))
    for name, node in sorted(nodes.items()):
        findings += [Finding(Severity.UNKNOWN, f"{name}: {e}", "storage-measured") for e in node.errors]
        for fig in node.paths.values():
            findings += [Finding(Severity.UNKNOWN, p, "storage-measured") for p in fig.problems]
        if node.tool == "dd":
            findings.append(Finding(Severity.WARN, f"{name}: fio not found: sequential figures from dd, "
                                                   "random-read IOPS not measured", "storage-fio-missing",
                                    fix="install fio on the nodes (Debian/Ubuntu: apt install fio)"))
    slow, slow_names = _slow(nodes, float(cfg["slow_ratio"]))
    findings += slow + _expectations(nodes, cfg, partitions) + _filesystems(nodes)
    ck = checkpoint(nodes, params, float(cfg["storage_checkpoint_bytes_per_param"])) if params else None
    if ck:
        findings.append(_checkpoint_finding(ck))
    measured = any(value_of(n, p, a) is not None for n in nodes.values() for p, a, *_ in METRICS)
    sev = worst(findings) if measured else Severity.UNKNOWN
    data: dict[str, Any] = {
        "time": int(time.time()), "slow_nodes": slow_names, "checkpoint": ck, **dict(job or {}),
        "nodes": {n: {"tool": f.tool, "partitions": list(partitions.get(n, ())),
                      "paths": {k: p.to_dict() for k, p in f.paths.items()}} for n, f in sorted(nodes.items())},
    }
    return CheckResult("storage", sev, _summary(nodes, slow_names, measured), tuple(findings), data)


def _summary(nodes: Mapping[str, NodeFigures], slow: Sequence[str], measured: bool) -> str:
    if not measured:
        return f"storage: nothing measured on {node_label(nodes) if nodes else 'any node'}"
    parts = []
    for path, attr, label, *_ in METRICS[:1] + METRICS[4:5]:
        vals = [v for n in nodes.values() if (v := value_of(n, path, attr)) is not None]
        if vals:
            parts.append(f"{label} {fmt_value(attr, min(vals))}-{fmt_value(attr, max(vals))}"
                         if len(vals) > 1 else f"{label} {fmt_value(attr, vals[0])}")
    head = f"storage on {node_label(nodes)}: " + ("; ".join(parts) or "figures in data")
    return head + (f"; slow node: {', '.join(slow)}" if slow else "")
