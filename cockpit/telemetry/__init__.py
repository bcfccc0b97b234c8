"""GPU telemetry, joined to Slurm jobs, from one of two sources:

* nvidia-smi CSV on each node over SSH/srun (:mod:`~cockpit.telemetry.collect`,
  :mod:`~cockpit.telemetry.probe`): a few hundred nodes;
* the site's Prometheus holding dcgm-exporter's series (``--prometheus URL`` or
  ``[telemetry] prometheus_url``: :mod:`~cockpit.telemetry.promsource`, queries in
  :mod:`~cockpit.telemetry.dcgm`, the HTTP client in :mod:`~cockpit.telemetry.prometheus`):
  thousands of GPUs, aggregated on the server.

Both give ``{(node, gpu_index): GpuTelemetry}`` (``source`` says which);
:mod:`cockpit.telemetry.join` turns that plus a ClusterSnapshot into per-GPU rows
with job, user and low-util age. cockpit joins to jobs itself, through each node's
GPU indexes; dcgm-exporter's job-mapping label is only cross-checked.
"""

from cockpit.telemetry.nvsmi import QUERY_FIELDS, GpuTelemetry, parse_query_gpu

__all__ = ["QUERY_FIELDS", "GpuTelemetry", "parse_query_gpu"]
