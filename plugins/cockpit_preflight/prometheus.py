"""node_exporter textfile-collector metrics for the pre-flight checks' results.

Gauges per node and figure (bytes/s, IOPS, ops/s for storage; temperature,
power, SM clock and throttle state for burn-in; link rate for fabric), plus the
check's status and time. ``--prometheus`` puts the text in ``data["prometheus"]``
and ``cockpit check`` prints it instead of the usual output.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from cockpit.plugins.api import CheckResult


def _label(value: object) -> str:
    # Exposition format escapes: backslash, double quote, newline.
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**kw: object) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in kw.items() if v is not None) + "}"


def _gauge(name: str, help_: str, rows: Iterable[tuple[dict, float]]) -> list[str]:
    rows = [(lab, v) for lab, v in rows if v is not None]
    if not rows:
        return []
    return [f"# HELP {name} {help_}", f"# TYPE {name} gauge"] + [f"{name}{_labels(**lab)} {v:g}" for lab, v in rows]


def _storage(data: dict) -> list[str]:
    bw, iops, meta = [], [], []
    for node, nd in data.get("nodes", {}).items():
        for path, p in nd.get("paths", {}).items():
            for test in ("seqread", "seqwrite"):
                bw.append(({"node": node, "path": path, "test": test}, p.get(f"{test}_bytes_per_s")))
            iops.append(({"node": node, "path": path, "test": "randread"}, p.get("randread_iops")))
            meta += [({"node": node, "path": path, "op": op}, v) for op, v in p.get("meta_ops_per_s", {}).items()]
    return (_gauge("cockpit_preflight_storage_bytes_per_second", "sequential throughput per node and path", bw)
            + _gauge("cockpit_preflight_storage_iops", "4k random-read IOPS per node and path", iops)
            + _gauge("cockpit_preflight_storage_meta_ops_per_second", "file operations per second", meta)
            + _gauge("cockpit_preflight_storage_slow_node", "1 for a node named slow",
                     [({"node": n}, 1) for n in data.get("slow_nodes", [])]))


def _burnin(data: dict) -> list[str]:
    rows: dict[str, list] = {"temp": [], "power": [], "sm": [], "thr": []}
    for node, nd in data.get("nodes", {}).items():
        load = [s for s in nd.get("samples", []) if s.get("phase") == "load"] or nd.get("samples", [])
        for s in load[-1:]:
            for g in s["gpus"]:
                lab = {"node": node, "gpu": g["index"]}
                rows["temp"].append((lab, g.get("temp_c")))
                rows["power"].append((lab, g.get("power_w")))
                rows["sm"].append((lab, g.get("sm_mhz")))
                reasons = set(g.get("reasons") or ()) - {"gpu_idle", "applications_clocks_setting", "sync_boost",
                                                         "display_clock_setting"}
                rows["thr"].append((lab, 1 if reasons else 0) if g.get("reasons") is not None else (lab, None))
    return (_gauge("cockpit_preflight_burnin_gpu_temperature_celsius", "last sample under load", rows["temp"])
            + _gauge("cockpit_preflight_burnin_gpu_power_watts", "last sample under load", rows["power"])
            + _gauge("cockpit_preflight_burnin_gpu_sm_clock_mhz", "last sample under load", rows["sm"])
            + _gauge("cockpit_preflight_burnin_gpu_throttled", "1 when a throttle reason was active", rows["thr"])
            + _gauge("cockpit_preflight_burnin_failing_node", "1 for a node with a proposed drain",
                     [({"node": n}, 1) for n in data.get("failing_nodes", [])]))


def _fabric(data: dict) -> list[str]:
    rows = [({"node": n, "link": nd.get("link")}, nd.get("rate_gbps")) for n, nd in data.get("nodes", {}).items()]
    return _gauge("cockpit_preflight_fabric_link_rate_gbps", "slowest active rail per node, Gb/s", rows)


def to_prometheus(result: CheckResult) -> str:
    body = {"storage": _storage, "burnin": _burnin, "fabric": _fabric}[result.check](dict(result.data))
    lab = _labels(check=result.check)
    body += [f"# HELP cockpit_preflight_check_status 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN",
             "# TYPE cockpit_preflight_check_status gauge", f"cockpit_preflight_check_status{lab} {int(result.severity)}",
             "# HELP cockpit_preflight_last_run_timestamp_seconds when the check ran",
             "# TYPE cockpit_preflight_last_run_timestamp_seconds gauge",
             f"cockpit_preflight_last_run_timestamp_seconds{lab} {result.data.get('time', 0)}"]
    return "\n".join(body) + "\n"


def with_prometheus(result: CheckResult, args: argparse.Namespace) -> CheckResult:
    """The result with ``data["prometheus"]`` when ``--prometheus`` was given."""
    if not getattr(args, "prometheus", False):
        return result
    return CheckResult(result.check, result.severity, result.summary, result.findings,
                       {**result.data, "prometheus": to_prometheus(result)})
