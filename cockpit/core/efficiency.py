"""The efficiency of a finished job from what accounting recorded: CPU, memory and
GPU, each with the field it came from, or why there is no figure. No Textual."""

from __future__ import annotations

from cockpit.models.accounting import JobRecord
from cockpit.models.accounting_reports import Efficiency, Measure

NO_GPU_UTIL = ("not measured: Slurm recorded no gres/gpuutil for this job (it needs gres/gpuutil in "
               "AccountingStorageTRES and an NVML/RSMI GPU plugin on the nodes), and cockpit keeps no "
               "GPU telemetry history")


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


def efficiency(job: JobRecord) -> Efficiency:
    """CPU, memory and GPU efficiency of a job read with its steps (sacct -j)."""
    return Efficiency(job.job_id, (_cpu(job), _memory(job), _gpu(job)))
