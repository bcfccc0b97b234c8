"""dcgm-exporter's series: which cockpit reads, what each means, and the PromQL
that asks a Prometheus for them without pulling the fleet.

Field names: dcgm-exporter's ``etc/default-counters.csv`` and
``dcp-metrics-included.csv`` (../shared/fixtures/dcgm). Traps, each handled here:

* ``DCGM_FI_DEV_XID_ERRORS`` is the *last* Xid and never resets (dcgm-exporter
  #500, #190; DCGM #277): cockpit shows the last value and whether it changed
  within the window (``changes()``), never calls it a count. Xid 62 is not
  exported at all (DCGM #235).
* Counters (PCIe replays, NVLink errors) reset when the exporter or the driver
  restarts: ``increase()`` over the window handles the reset.
* ``DCGM_FI_PROF_*`` are ratios 0..1 and exist only where the profiling module
  runs (Volta and later, not under MIG for all of them); absent means not
  measured. Utilisation alone misleads (a rank spinning in NCCL shows 100 %):
  SM active, tensor active and DRAM active say more (jobstats #58).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# (series, GpuTelemetry attribute, scale, meaning, views). ``scale`` turns the
# exporter's unit into the attribute's (ratios into percent).
SERIES: tuple[tuple[str, str, float, str, str], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "util_gpu", 1.0, "GPU utilisation, % of time a kernel ran (the sample period varies by product)",
     "GPUs view, Pulse suspects, job efficiency, utilisation report"),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "util_mem", 1.0, "memory copy engine utilisation, %", "GPUs view (gpus --json)"),
    ("DCGM_FI_DEV_FB_USED", "mem_used_mib", 1.0, "framebuffer memory used, MiB", "GPUs view MEM"),
    ("DCGM_FI_DEV_FB_FREE", "mem_free_mib", 1.0, "framebuffer memory free, MiB (total = used + free where FB_TOTAL is not exported)", "GPUs view MEM"),
    ("DCGM_FI_DEV_FB_TOTAL", "mem_total_mib", 1.0, "framebuffer memory total, MiB", "GPUs view MEM"),
    ("DCGM_FI_DEV_POWER_USAGE", "power_w", 1.0, "power draw, W", "GPUs view POWER, node summary (summed), thermal-power runbook"),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "power_limit_w", 1.0, "power management limit, W (power is shown against it)", "gpus --json, thermal-power runbook"),
    ("DCGM_FI_DEV_GPU_TEMP", "temp_gpu", 1.0, "GPU temperature, C", "GPUs view TEMP, node summary (max), thermal-power runbook"),
    ("DCGM_FI_DEV_MEMORY_TEMP", "temp_mem", 1.0, "HBM temperature, C", "gpus --json, thermal-power runbook"),
    ("DCGM_FI_DEV_SM_CLOCK", "clock_sm_mhz", 1.0, "SM clock, MHz", "gpus --json, thermal-power runbook"),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "clock_event_reasons", 1.0, "clock throttle reasons bitmask (same bits as nvidia-smi's clocks_event_reasons)", "GPUs view THROTTLE, thermal-power runbook"),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "clock_event_reasons", 1.0, "the same bitmask under its DCGM 3.3+ name", "GPUs view THROTTLE, thermal-power runbook"),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "ecc_corr_volatile", 1.0, "single-bit (corrected) ECC errors since the driver loaded", "gpus --json, gpu-xid runbook"),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc_uncorr_volatile", 1.0, "double-bit (uncorrected) ECC errors since the driver loaded", "GPUs view ECC, gpu-xid runbook"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "remapped_correctable", 1.0, "rows remapped for correctable errors", "gpus --json, gpu-xid runbook"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "remapped_uncorrectable", 1.0, "rows remapped for uncorrectable errors", "gpus --json, gpu-xid runbook"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "remapped_failure", 1.0, "1 when a row remap failed (the GPU needs service)", "gpus --json, gpu-xid runbook"),
    ("DCGM_FI_DEV_XID_ERRORS", "xid_last", 1.0, "the LAST Xid seen (0 = none since the exporter started); never resets, not a count", "gpus --json, gpu-xid runbook"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_active", 100.0, "graphics/compute engine active, % of time (profiling)", "gpus --json"),
    ("DCGM_FI_PROF_SM_ACTIVE", "sm_active", 100.0, "SMs with at least one warp, % of cycles (profiling)", "gpus --json, job efficiency"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active", 100.0, "tensor pipe active, % of cycles (profiling)", "gpus --json"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "dram_active", 100.0, "device memory interface active, % of cycles (profiling)", "gpus --json"),
)
# Read over a window, not as a last value: (label cockpit gives it, PromQL function, series).
WINDOWED: tuple[tuple[str, str, tuple[str, ...], str, str], ...] = (
    ("xid_changes", "changes", ("DCGM_FI_DEV_XID_ERRORS",), "changes of the last Xid within the window (> 0: a new Xid came)",
     "gpus --json, gpu-xid runbook"),
    ("pcie_replays", "increase", ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",), "PCIe replays within the window (counter resets handled)",
     "gpus --json, nvlink runbook"),
    ("nvlink_errors", "increase", ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                                   "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"),
     "NVLink CRC, replay and recovery errors within the window, all links", "gpus --json, nvlink runbook"),
    ("nvlink_bytes_per_s", "rate", ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",), "NVLink traffic, all links (the counter's rate)",
     "gpus --json, nvlink runbook"),
)
INSTANT_NAMES: tuple[str, ...] = tuple(dict.fromkeys(s for s, *_ in SERIES))
UTIL = "DCGM_FI_DEV_GPU_UTIL"
AGE_NAMES = (UTIL, "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_USED")


@dataclass(frozen=True)
class Matching:
    """How series are matched to Slurm's nodes and GPUs."""

    node_label: str = "Hostname"  # dcgm-exporter's; "instance" (port stripped) is always the fallback
    gpu_label: str = "gpu"  # or UUID / pci_bus_id (then ordered by pci_bus_id, as NVML and Slurm's AutoDetect do)
    job_label: str = "hpc_job"  # dcgm-exporter's HPC job-mapping label, cross-checked when present


def _re_alt(names: Iterable[str]) -> str:
    """An RE2 alternation matching exactly these names, as a PromQL string body."""
    alts = "|".join(re.sub(r"([\\.+*?()\[\]{}|^$])", r"\\\1", n) for n in sorted(set(names)))
    return alts.replace("\\", "\\\\").replace('"', '\\"')


def _quote(value: str) -> str:
    """A PromQL string body for an exact match."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def node_matchers(nodes: Sequence[str], m: Matching) -> list[str]:
    """Label matchers that pick these nodes' series: by the node label, and by
    ``instance`` host:port as the fallback."""
    alt = _re_alt(nodes)
    out = [] if m.node_label == "instance" else [f'{m.node_label}=~"{alt}"']
    out.append(f'instance=~"({alt})(:[0-9]+)?"')
    return out


def group_labels(m: Matching, *, per_gpu: bool = True, job: bool = False) -> str:
    labels = [m.node_label, "instance"]
    if per_gpu:
        labels.append(m.gpu_label)
        if m.gpu_label != "gpu":
            labels.append("pci_bus_id")
    if job and m.job_label:
        labels.append(m.job_label)
    return ", ".join(dict.fromkeys(labels))


def _either(template: str, nodes: Sequence[str], m: Matching) -> str:
    """``template`` (with ``@SEL@`` for the node matcher) once per way of matching, joined by ``or``."""
    return " or ".join(f"({template.replace('@SEL@', s)})" for s in node_matchers(nodes, m))


def instant_query(nodes: Sequence[str], m: Matching) -> str:
    """Every last value of these nodes' GPUs, one series per (series name, GPU):
    aggregated on the server so that only the labels cockpit needs travel."""
    names = _re_alt(INSTANT_NAMES)
    inner = _either('label_replace({__name__=~"' + names + '",@SEL@}, "m", "$1", "__name__", "(.+)")', nodes, m)
    return f"max by (m, {group_labels(m, job=True)}) ({inner})"


def _per_name(fn: str, names: Iterable[str], nodes: Sequence[str], m: Matching) -> str:
    """``fn`` applied to each series name apart (functions drop ``__name__``, and two
    series left with the same labels are an error), each result labelled ``n``."""
    return " or ".join(f'label_replace({_either(fn.replace("@NAME@", n), nodes, m)}, "n", "{n}", "", "")' for n in names)


def age_query(nodes: Sequence[str], m: Matching) -> str:
    """The newest sample's time per GPU (cockpit marks a GPU stale past two scrape
    intervals), from the series every exporter config has; ``timestamp()`` must see
    the selector itself (of a function's result it gives the evaluation time)."""
    return f"max by ({group_labels(m)}) ({_per_name('timestamp(@NAME@{@SEL@})', AGE_NAMES, nodes, m)})"


def window_query(nodes: Sequence[str], m: Matching, window_s: int) -> str:
    """Xid changes, PCIe replays, NVLink errors and traffic within the window, per GPU."""
    parts = []
    for label, fn, names, _, _ in WINDOWED:
        inner = _per_name(f"{fn}(@NAME@{{@SEL@}}[{int(window_s)}s])", names, nodes, m)
        parts.append(f'label_replace(sum by ({group_labels(m)}) ({inner}), "m", "{label}", "", "")')
    return " or ".join(parts)


def node_summary_query(nodes: Sequence[str], m: Matching) -> str:
    """Per node: min and average utilisation, hottest GPU, summed power."""
    parts = []
    for label, agg, name in (("util_min", "min", UTIL), ("util_avg", "avg", UTIL),
                             ("temp_max", "max", "DCGM_FI_DEV_GPU_TEMP"), ("power_sum", "sum", "DCGM_FI_DEV_POWER_USAGE")):
        inner = _either(name + "{@SEL@}", nodes, m)
        parts.append(f'label_replace({agg} by ({group_labels(m, per_gpu=False)}) ({inner}), "m", "{label}", "", "")')
    return " or ".join(parts)


def idle_query(m: Matching, threshold: float) -> str:
    """Fleet-wide: only the GPUs below ``threshold`` % come back (a few hundred
    bytes at 80,000 series), for the Pulse's idle-GPU suspects."""
    return f"max by ({group_labels(m)}) ({UTIL}) < {threshold:g}"


def job_gpus_query(gpus: dict[str, Sequence[int]], m: Matching, name: str = UTIL,
                   job_label: tuple[str, str] | None = None) -> str:
    """One series per GPU of a job, for ``query_range`` over its run. ``gpus``:
    node -> Slurm GPU indexes (matched through the ``gpu`` label; none = all of them);
    ``job_label`` (label, job id) keeps only the series dcgm-exporter mapped to the job."""
    parts = []
    for node, idx in sorted(gpus.items()):
        gsel = f',gpu=~"{_re_alt(str(i) for i in idx)}"' if idx else ""
        if job_label:
            gsel += f',{job_label[0]}="{_quote(job_label[1])}"'
        parts.append(_either(name + "{@SEL@" + gsel + "}", [node], m))
    return f"max by ({group_labels(m)}) ({' or '.join(parts)})"


def job_summary_query(jobs: dict[str, dict[str, Sequence[int]]], m: Matching) -> str:
    """Per job shown: average and lowest utilisation over its GPUs and how many reported,
    aggregated on the server (one sample per job and figure comes back, labelled ``job``
    and ``m``). ``jobs``: job id -> node -> Slurm GPU indexes (none = every GPU of the node)."""
    parts = []
    for job_id, gpus in sorted(jobs.items()):
        inner = job_gpus_query(gpus, m)
        for label, agg in (("util_avg", "avg"), ("util_min", "min"), ("gpus", "count")):
            parts.append(f'label_replace(label_replace({agg}({inner}), "job", "{_quote(job_id)}", "", ""), '
                         f'"m", "{label}", "", "")')
    return " or ".join(parts)


# What the gpu-xid, hung-job, thermal-power and nvlink runbooks read beside dmesg (node_history_query;
# judged by plugins/cockpit_runbooks/dcgmrules.py).
RUNBOOK_NAMES = ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                 "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                 "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                 "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                 "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                 "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                 "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", UTIL)


def node_history_query(node: str, m: Matching, names: Sequence[str] = RUNBOOK_NAMES) -> str:
    """One node's series (per name and GPU) for ``query_range`` over its last hour."""
    inner = _either('label_replace({__name__=~"' + _re_alt(names) + '",@SEL@}, "m", "$1", "__name__", "(.+)")', [node], m)
    return f"max by (m, {group_labels(m)}) ({inner})"
