"""node_exporter textfile-collector metrics for a CheckResult of the nccl check."""

from __future__ import annotations

from cockpit.plugins.api import CheckResult


def _label(value: object) -> str:
    # Exposition format escapes: backslash, double quote, newline.
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**kw: object) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in kw.items() if v is not None) + "}"


def to_prometheus(result: CheckResult) -> str:
    """Gauges per run (busbw, expected, status) and per suspect node, plus the check status."""
    lines = [
        "# HELP cockpit_nccl_busbw_gbps busbw at the largest message sizes, GB/s",
        "# TYPE cockpit_nccl_busbw_gbps gauge",
    ]
    status = ["# HELP cockpit_nccl_run_status 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN",
              "# TYPE cockpit_nccl_run_status gauge"]
    expected = ["# HELP cockpit_nccl_expected_busbw_gbps expected busbw, GB/s",
                "# TYPE cockpit_nccl_expected_busbw_gbps gauge"]
    sev = {"OK": 0, "WARN": 1, "CRIT": 2, "UNKNOWN": 3}
    for run in result.data.get("runs", []):
        lab = _labels(nodes=run["nodes"] or "log", engine=run["engine"],
                      collective=run["collective"], nranks=run["nranks"])
        if run["busbw_gbps"] is not None:
            lines.append(f"cockpit_nccl_busbw_gbps{lab} {run['busbw_gbps']:g}")
        if run["expected_gbps"]:
            expected.append(f"cockpit_nccl_expected_busbw_gbps{lab} {run['expected_gbps']:g}")
        status.append(f"cockpit_nccl_run_status{lab} {sev[run['status']]}")
    out = lines + status + (expected if len(expected) > 2 else [])
    suspects = result.data.get("suspect", {}).get("nodes", [])
    out += ["# HELP cockpit_nccl_suspect_node 1 for a node named by pair bisection",
            "# TYPE cockpit_nccl_suspect_node gauge"]
    out += [f"cockpit_nccl_suspect_node{_labels(node=n)} 1" for n in suspects]
    out += ["# HELP cockpit_nccl_check_status worst verdict of this check",
            "# TYPE cockpit_nccl_check_status gauge",
            f"cockpit_nccl_check_status{_labels(mode=result.data.get('mode'))} {int(result.severity)}",
            "# HELP cockpit_nccl_last_run_timestamp_seconds when the check ran",
            "# TYPE cockpit_nccl_last_run_timestamp_seconds gauge",
            f"cockpit_nccl_last_run_timestamp_seconds {result.data.get('time', 0)}"]
    return "\n".join(out) + "\n"
