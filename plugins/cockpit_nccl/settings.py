"""The plugin's config keys ([plugins.nccl]) and how flags override them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cockpit.plugins.api import UsageError
from cockpit.plugins.api import ConfigKey

from cockpit_nccl.pairs import DEFAULT_SLOW_RATIO

CONFIG: dict[str, ConfigKey] = {
    "expected_busbw": ConfigKey(dict, {}, "Expected all_reduce busbw (GB/s) of multi-node runs per "
                                "partition; key '*' applies to any partition, e.g. {gpu = 370.0}"),
    "expected_busbw_node": ConfigKey(dict, {}, "Expected busbw (GB/s) of one-node runs (NVLink) per "
                                     "partition; key '*' for any, e.g. {'*' = 460.0}"),
    "warn_ratio": ConfigKey(float, 0.90, "WARN when busbw < this x expected (or x baseline)"),
    "crit_ratio": ConfigKey(float, 0.80, "CRIT when busbw < this x expected (or x baseline)"),
    "top_sizes": ConfigKey(int, 3, "Judge the best busbw among this many largest message sizes"),
    "plateau_bytes": ConfigKey(int, 256 << 20, "Note when the largest size is below this (bytes)"),
    "history_file": ConfigKey(str, "", "JSON Lines history; empty = $XDG_DATA_HOME/cockpit/nccl-history.jsonl"),
    "history_window": ConfigKey(int, 20, "Baseline = median busbw of this many previous runs"),
    "history_min_runs": ConfigKey(int, 3, "Previous runs needed before a baseline is used"),
    "pair_slow_ratio": ConfigKey(float, DEFAULT_SLOW_RATIO, "Pair mode: a pair is slow below this x the "
                                 "median busbw of the other pairs (or x the expected busbw)"),
    "engine": ConfigKey(str, "nccl-tests", "nccl-tests or torch"),
    "binary": ConfigKey(str, "all_reduce_perf", "nccl-tests binary (path, or name in the image)"),
    "container_image": ConfigKey(str, "", "pyxis --container-image for nccl-tests; empty = none"),
    "gpus_per_node": ConfigKey(int, 8, "GPUs per node = tasks per node (one task per GPU)"),
    "min_bytes": ConfigKey(str, "8", "nccl-tests -b"),
    "max_bytes": ConfigKey(str, "16G", "nccl-tests -e"),
    "iters": ConfigKey(int, 20, "-n iterations per size"),
    "warmup": ConfigKey(int, 5, "-w warmup iterations"),
    "torch_python": ConfigKey(str, "python3", "Python with torch on the compute nodes"),
    "torch_backend": ConfigKey(str, "nccl", "torch engine backend: nccl (GPUs) or gloo (CPUs)"),
    "torch_tasks_per_node": ConfigKey(int, 0, "torch engine tasks per node; 0 = gpus_per_node"),
    "torch_min_bytes": ConfigKey(str, "1M", "torch engine smallest message"),
    "torch_max_bytes": ConfigKey(str, "1G", "torch engine largest message"),
    "output_dir": ConfigKey(str, "~/cockpit-nccl", "Job output folder, visible from the submit host"),
    "time_limit": ConfigKey(str, "00:15:00", "sbatch --time of each benchmark job"),
    "exclusive": ConfigKey(bool, True, "sbatch --exclusive (nothing else on the nodes)"),
    "poll_interval": ConfigKey(float, 2.0, "Seconds between squeue polls while following a job"),
    "job_timeout": ConfigKey(float, 1800.0, "Cancel a benchmark job after this many seconds"),
    "env": ConfigKey(dict, {}, "Extra NCCL_*/GLOO_*/TORCH_* variables exported in the job"),
    "max_parallel_jobs": ConfigKey(int, 0, "Pair mode: disjoint pairs run at once; 0 = all"),
}


def merged(config: Mapping[str, Any], args: Any) -> dict[str, Any]:
    """Config defaults, then the config table, then the flags given on the command line."""
    out = {k: v.default for k, v in CONFIG.items()}
    out.update({k: v for k, v in config.items() if k in CONFIG})
    for key in CONFIG:
        val = getattr(args, key, None)
        if val is not None:
            out[key] = val
    for key in ("warn_ratio", "crit_ratio", "pair_slow_ratio"):
        if not 0 < float(out[key]) <= 1:
            raise UsageError(f"bad {key} {out[key]!r}: expected a ratio in (0, 1]")
    if out["crit_ratio"] > out["warn_ratio"]:
        raise UsageError(f"crit_ratio {out['crit_ratio']} is above warn_ratio {out['warn_ratio']}")
    out["output_dir"] = os.path.expanduser(str(out["output_dir"]))
    return out


def expected_for(cfg: Mapping[str, Any], partition: str | None, one_node: bool,
                 flag: float | None) -> float | None:
    """The expected busbw: --expected-busbw, else the config by partition, else '*'."""
    if flag is not None:
        if flag <= 0:
            raise UsageError(f"bad --expected-busbw {flag}: must be > 0 GB/s")
        return float(flag)
    table = cfg["expected_busbw_node" if one_node else "expected_busbw"] or {}
    val = table.get(partition or "*", table.get("*"))
    return float(val) if val is not None else None
