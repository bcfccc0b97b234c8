"""The efficiency of a finished job from what accounting recorded: CPU, memory and
GPU, each with the field it came from, or why there is no figure. No Textual."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cockpit.models.accounting import JobRecord
from cockpit.models.accounting_reports import Efficiency, Measure

NO_GPU_UTIL = ("not measured: Slurm recorded no gres/gpuutil for this job (it needs gres/gpuutil in "
               "AccountingStorageTRES and an NVML/RSMI GPU plugin on the nodes), and no Prometheus "
               "with dcgm-exporter's series is configured ([telemetry] prometheus_url)")


def _cpu(job: JobRecord) -> Measure:
    cpus = job.cpus
    used = [s.total_cpu_s for s in job.steps if s.total_cpu_s is not None]
    if not cpus or not job.elapsed_s:
        return Measure("cpu", None, "", "not measured: no CPUs allocated or no elapsed time recorded")
    if not used:
        return Measure("cpu", None, "", "not measured: sacct recorded no TotalCPU for the job's steps")
    total = sum(used)
    pct = 100.0 * total / (job.elapsed_s * cpus)
    return Measure("cpu", round(pct, 1), f"{total:.1f} of {job.elapsed_s * cpus} CPU-seconds",
                   "sacct TotalCPU of the steps (user+system) / (Elapsed x AllocTRES cpu)")


def _memory(job: JobRecord) -> Measure:
    alloc = job.alloc_tres.get("mem")
    peaks = [s.tres_in_max["mem"] for s in job.steps if "mem" in s.tres_in_max]
    if not peaks:
        return Measure("memory", None, "", "not measured: sacct recorded no TRESUsageInMax mem (jobacct_gather "
                       "took no sample: the steps were shorter than JobAcctGatherFrequency, or it is none)")
    peak = max(peaks)
    if not alloc:
        return Measure("memory", None, f"peak {peak:.0f} MB", "sacct TRESUsageInMax mem; no memory allocated to compare")
    per_node = alloc / max(job.node_count, 1)
    return Measure("memory", round(100.0 * peak / per_node, 1), f"peak {peak:.0f} of {per_node:.0f} MB per node",
                   "sacct TRESUsageInMax mem (the largest task's peak RSS) / AllocTRES mem per node")


def _gpu(job: JobRecord) -> Measure:
    if not job.gpus:
        return Measure("gpu", None, "", "no GPUs allocated")
    utils = [(s.tres_in_ave["gres/gpuutil"], s.elapsed_s) for s in job.steps if "gres/gpuutil" in s.tres_in_ave]
    if not utils:
        return Measure("gpu", None, "", NO_GPU_UTIL)
    weight = sum(e for _, e in utils) or len(utils)
    pct = sum(u * (e or 1) for u, e in utils) / weight
    mem = [s.tres_in_max["gres/gpumem"] for s in job.steps if "gres/gpumem" in s.tres_in_max]
    extra = f", GPU memory peak {max(mem):.0f} MB" if mem else ""
    return Measure("gpu", round(pct, 1), f"{job.gpus} GPU(s){extra}",
                   "sacct TRESUsageInAve gres/gpuutil of the steps, weighted by their elapsed time")


def gpu_from_history(job: JobRecord, history: Mapping[tuple[str, int], Sequence[tuple[float, float]]],
                     how: str = "") -> Measure | None:
    """The GPU figure from utilisation samples over the whole run ((node, GPU) -> [(t, %)],
    from Prometheus' query_range), or None when there are none. The mean is over every
    sample of every GPU (equal steps); how much of the run had samples is said."""
    pts = [(t, v) for series in history.values() for t, v in series]
    if not pts or not job.start_time:
        return None
    end = job.end_time or max(t for t, _ in pts)
    run = max(end - job.start_time, 1)
    times = sorted({t for t, _ in pts})
    step = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
    covered = min(100.0, 100.0 * (times[-1] - times[0] + step) / run)  # the run's span that had samples
    pct = sum(v for _, v in pts) / len(pts)
    used = f"{len(history)} GPU(s) over {run / 60:.0f} min, samples over {covered:.0f}% of the run"
    source = "Prometheus DCGM_FI_DEV_GPU_UTIL over the run (query_range), mean of every sample"
    return Measure("gpu", round(pct, 1), used, f"{source}{'; ' + how if how else ''}")


def efficiency(job: JobRecord, gpu_history: Mapping[tuple[str, int], Sequence[tuple[float, float]]] | None = None,
               gpu_how: str = "") -> Efficiency:
    """CPU, memory and GPU efficiency of a job read with its steps (sacct -j). With
    ``gpu_history`` (its GPUs' utilisation over the run from Prometheus) the GPU figure
    comes from there; else from sacct's gres/gpuutil where Slurm recorded it."""
    gpu = gpu_from_history(job, gpu_history, gpu_how) if gpu_history and job.gpus else None
    return Efficiency(job.job_id, (_cpu(job), _memory(job), gpu or _gpu(job)))
