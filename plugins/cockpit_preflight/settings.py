"""The plugin's config keys ([plugins.preflight]) and how flags override them.

Keys are prefixed by the check they serve (``storage_``, ``burnin_``,
``fabric_``); the job keys without a prefix apply to the storage and burn-in
jobs alike. Expectations are tables keyed by partition, ``'*'`` for any.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cockpit.plugins.api import ConfigKey, UsageError

# The guide's storage figure: local NVMe RAID0 at about 32 GB/s sequential read per
# 8-GPU node. The other expectations are site-specific and unset by default.
GUIDE_LOCAL_READ_GBPS = 32.0
# The guide's fabric table: [from this many GPUs, minimum Gb/s, recommended Gb/s].
# 8-32 GPUs need >= 200 Gb/s InfiniBand; more than 32 need 400, 800 recommended.
GUIDE_FABRIC_TABLE = [[8, 200.0, 200.0], [33, 400.0, 800.0]]

CONFIG: dict[str, ConfigKey] = {
    # jobs (storage and burnin)
    "output_dir": ConfigKey(str, "~/cockpit-preflight", "Job output folder, visible from the submit host"),
    "time_limit": ConfigKey(str, "00:30:00", "sbatch --time of each pre-flight job"),
    "exclusive": ConfigKey(bool, True, "sbatch --exclusive (nothing else on the nodes while measuring)"),
    "poll_interval": ConfigKey(float, 2.0, "Seconds between squeue polls while following a job"),
    "job_timeout": ConfigKey(float, 3600.0, "Cancel a pre-flight job after this many seconds"),
    "warn_ratio": ConfigKey(float, 0.90, "WARN when a figure is below this x its expectation"),
    "crit_ratio": ConfigKey(float, 0.70, "CRIT when a figure is below this x its expectation"),
    "slow_ratio": ConfigKey(float, 0.70, "A node (or GPU) is slow below this x its peers (the other of two, else the median of all)"),
    # storage
    "storage_local_path": ConfigKey(str, "/tmp", "Local scratch measured on each node (--local)"),
    "storage_shared_path": ConfigKey(str, "", "Shared filesystem path measured from each node (--shared); empty = none"),
    "storage_local_read_gbps": ConfigKey(dict, {}, "Expected local sequential read per node, GB/s, by partition; "
                                         "key '*' for any (else storage_default_local_read_gbps)"),
    "storage_default_local_read_gbps": ConfigKey(float, GUIDE_LOCAL_READ_GBPS,
                                                 "Expected local sequential read per node where the table names no "
                                                 "partition (the guide: 32 GB/s for 8-GPU nodes); 0 = none"),
    "storage_local_write_gbps": ConfigKey(dict, {}, "Expected local sequential write per node, GB/s, by partition"),
    "storage_local_randread_kiops": ConfigKey(dict, {}, "Expected local 4k random-read kIOPS per node, by partition"),
    "storage_shared_read_gbps": ConfigKey(dict, {}, "Expected shared sequential read per node, GB/s, by partition"),
    "storage_shared_write_gbps": ConfigKey(dict, {}, "Expected shared sequential write per node, GB/s, by partition"),
    "storage_shared_meta_ops": ConfigKey(dict, {}, "Expected shared file creates per second per node, by partition"),
    "storage_fio": ConfigKey(str, "fio", "fio on the nodes (path or name); dd is used where it is missing"),
    "storage_size": ConfigKey(str, "1G", "fio --size per job (the file each job writes then reads)"),
    "storage_runtime": ConfigKey(int, 30, "fio --runtime seconds per test (time based)"),
    "storage_block_size": ConfigKey(str, "1M", "fio --bs of the sequential tests (random read uses 4k)"),
    "storage_iodepth": ConfigKey(int, 32, "fio --iodepth"),
    "storage_numjobs": ConfigKey(int, 4, "fio --numjobs (reported as one group)"),
    "storage_ioengine": ConfigKey(str, "libaio", "fio --ioengine of the data tests"),
    "storage_direct": ConfigKey(bool, True, "fio --direct=1 / dd oflag=direct (bypass the page cache)"),
    "storage_meta_files": ConfigKey(int, 5000, "Files created, stat'ed and deleted by the metadata test"),
    "storage_checkpoint_bytes_per_param": ConfigKey(float, 14.0,
                                                    "Checkpoint bytes per parameter: bf16 weights 2 + fp32 master "
                                                    "copy 4 + Adam moments 2 x 4"),
    # burnin
    "burnin_engine": ConfigKey(str, "auto", "auto (dcgmi where present, else torch), dcgmi or torch"),
    "burnin_duration": ConfigKey(int, 300, "Seconds of the torch load (--duration); dcgmi diag runs its own tests' lengths"),
    "burnin_interval": ConfigKey(float, 5.0, "Seconds between nvidia-smi samples during the load"),
    "burnin_gpus_per_node": ConfigKey(int, 8, "GPUs requested per node (--gpus-per-node); 0 = none"),
    "burnin_nvidia_smi": ConfigKey(str, "nvidia-smi", "nvidia-smi on the nodes (path or name)"),
    "burnin_dcgmi": ConfigKey(str, "dcgmi", "dcgmi on the nodes (path or name)"),
    "burnin_dcgmi_level": ConfigKey(int, 3, "dcgmi diag -r level (3 includes targeted stress and power)"),
    "burnin_python": ConfigKey(str, "python3", "Python with torch on the nodes, for the bundled matmul load"),
    "burnin_matrix": ConfigKey(int, 8192, "Matrix size n of the n x n matmul load on a GPU"),
    "burnin_cpu_matrix": ConfigKey(int, 512, "Matrix size n of the load where there is no GPU (CPU torch)"),
    "burnin_cpu_threads": ConfigKey(int, 1, "torch threads of the CPU load"),
    "burnin_power_cap_ratio": ConfigKey(float, 0.80, "SW power cap active below this x the power limit is a finding"),
    # fabric
    "fabric_ib_root": ConfigKey(str, "/sys/class/infiniband", "Where HCAs are read on each node ({node} = its name)"),
    "fabric_net_root": ConfigKey(str, "/sys/class/net", "Where Ethernet links are read on each node ({node} = its name)"),
    "fabric_ibstat": ConfigKey(str, "ibstat", "ibstat on the nodes, used where the sysfs tree is missing"),
    "fabric_table": ConfigKey(list, GUIDE_FABRIC_TABLE,
                              "Rows [from GPUs, minimum Gb/s, recommended Gb/s] per link (the guide's table)"),
    "fabric_probe_timeout": ConfigKey(float, 30.0, "Seconds per probe command on a node"),
}


def merged(config: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Defaults, then the config table, then the non-None ``overrides`` (flags).

    Raises UsageError naming a bad ratio."""
    out = {k: v.default for k, v in CONFIG.items()}
    out.update({k: v for k, v in config.items() if k in CONFIG})
    out.update({k: v for k, v in (overrides or {}).items() if v is not None and k in CONFIG})
    for key in ("warn_ratio", "crit_ratio", "slow_ratio", "burnin_power_cap_ratio"):
        if not 0 < float(out[key]) <= 1:
            raise UsageError(f"bad {key} {out[key]!r}: expected a ratio in (0, 1]")
    if out["crit_ratio"] > out["warn_ratio"]:
        raise UsageError(f"crit_ratio {out['crit_ratio']} is above warn_ratio {out['warn_ratio']}")
    out["output_dir"] = os.path.expanduser(str(out["output_dir"]))
    return out


def expected(table: Mapping[str, Any] | None, partitions: tuple[str, ...] | list[str],
             default: float | None = None) -> float | None:
    """The expectation for a node in ``partitions``: the first partition the table names,
    else ``'*'``, else ``default`` (None or 0: none). Raises UsageError for a value that is
    not a positive number."""
    table = table or {}
    for key in (*partitions, "*"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise UsageError(f"bad expectation {value!r} for partition {key!r}: expected a positive number")
            return float(value)
    return float(default) if default else None


def fabric_table(rows: Any) -> list[tuple[int, float, float]]:
    """The validated fabric table, sorted by GPU count. Raises UsageError naming a bad row."""
    out = []
    for row in rows or []:
        ok = (isinstance(row, (list, tuple)) and len(row) == 3
              and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)
              and row[0] >= 1 and 0 < row[1] <= row[2])
        if not ok:
            raise UsageError(f"bad fabric_table row {row!r}: expected [from GPUs, minimum Gb/s, recommended Gb/s]")
        out.append((int(row[0]), float(row[1]), float(row[2])))
    return sorted(out)


def fabric_need(table: list[tuple[int, float, float]], gpus: int) -> tuple[float, float] | None:
    """(minimum, recommended) Gb/s for ``gpus`` GPUs, or None below the table's first row."""
    need = None
    for from_gpus, minimum, recommended in table:
        if gpus >= from_gpus:
            need = (minimum, recommended)
    return need
