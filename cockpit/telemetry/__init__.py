"""GPU telemetry from the nodes: nvidia-smi CSV (and dcgm-exporter), joined to Slurm jobs.

The TUI and ``cockpit gpus`` call :func:`cockpit.telemetry.collect.telemetry_for`
(or a :class:`~cockpit.telemetry.collect.TelemetryCollector`) and get
``{(node, gpu_index): GpuTelemetry}``; :mod:`cockpit.telemetry.join` turns that
plus a ClusterSnapshot into per-GPU rows with job, user and low-util age.
"""

from cockpit.telemetry.nvsmi import QUERY_FIELDS, GpuTelemetry, parse_query_gpu

__all__ = ["QUERY_FIELDS", "GpuTelemetry", "parse_query_gpu"]
