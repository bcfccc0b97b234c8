"""Simulated NCCL benchmark output: nccl-tests ``all_reduce_perf`` text and the
bundled torch benchmark's (which prints the same table).

The layout is nccl-tests' own (src/common.cu, as in tests/data/nccl-tests and
REFERENCE.md section 1), so cockpit's parser reads it like a real run; the
numbers are made up and the first line says so. Bandwidth model:

* one node: NVLink (NVSwitch), ~478 GB/s busbw at large messages;
* several nodes: the slowest node's InfiniBand bandwidth, ~389 GB/s busbw for
  8 x 400G NDR, except the scenario's ``slow_nccl_node`` at ~30% of that (one
  degraded rail holds the whole ring back), so pair bisection can name it;
* per size: a fixed latency, then a ramp up to the plateau, as in real runs.

Everything is derived from node names and the job id (crc32), never from the
wall clock, so the same submission always prints the same table.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

PEAK_NVLINK = 478.0  # GB/s busbw, one HGX H100 node
PEAK_IB = 389.0  # GB/s busbw, 8 x 400G NDR per node
SLOW_FACTOR = 0.30  # the slow node's share of its peers' bandwidth
LATENCY_US = 68.0
RAMP_BYTES = 64 << 20  # the ramp to the plateau: half of it is reached around here
GPU_NAME = "NVIDIA H100 80GB HBM3"
SIMULATED = "# SIMULATED by cockpit --demo: {what}; the numbers are made up\n"


def jitter(key: str, spread: float) -> float:
    """A deterministic factor in [1 - spread, 1 + spread] for ``key``."""
    return 1.0 + spread * ((zlib.crc32(key.encode()) % 20001) / 10000.0 - 1.0)


def node_busbw(node: str, slow_node: str) -> float:
    """What ``node`` can take part in a multi-node all_reduce at (GB/s busbw)."""
    return PEAK_IB * jitter(f"ib:{node}", 0.015) * (SLOW_FACTOR if node == slow_node else 1.0)


def job_busbw(nodes: Sequence[str], slow_node: str, job_id: int) -> float:
    """The plateau busbw of one job on ``nodes``: NVLink alone, else the slowest node."""
    if len(nodes) <= 1:
        return PEAK_NVLINK * jitter(f"nvl:{nodes[0] if nodes else ''}", 0.01)
    return min(node_busbw(n, slow_node) for n in nodes) * jitter(f"run:{job_id}", 0.02)


def sizes(lo: int, hi: int, factor: int) -> list[int]:
    out, size = [], max(lo, 1)
    while size <= hi:
        out.append(size)
        size *= max(factor, 2)
    return out


def _time_us(size: int, alg_peak: float, key: str) -> float:
    """Latency + transfer + a ramp term that fades at large messages (GB/s = 1e3 B/us)."""
    ramp = size * RAMP_BYTES / (size + RAMP_BYTES)
    return (LATENCY_US + (size + ramp) / (alg_peak * 1e3)) * jitter(key, 0.012)


def _time_str(us: float) -> str:
    # nccl-tests' own choice of decimals by magnitude (src/common.cu)
    if us >= 10000.0:
        return f"{us:7.0f}"
    if us >= 100.0:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


def _side(size: int, us: float, factor: float, torch: bool) -> tuple[str, float]:
    algbw = size / us / 1e3
    busbw = algbw * factor
    if torch:  # torch_bench's fmt_side: always one decimal, a wider #wrong
        return f"  {us:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {0:6d}", busbw
    return f"  {_time_str(us)}  {algbw:6.2f}  {busbw:6.2f}  {0:5d}", busbw


def _rows(size_list: list[int], ranks: int, peak_bus: float, job_id: int, torch: bool) -> tuple[list[str], float]:
    factor = 2.0 * (ranks - 1) / ranks if ranks > 1 else 1.0
    alg_peak = peak_bus / factor if factor else peak_bus
    lines, total = [], 0.0
    for size in size_list:
        line = f"{size:12d}  {max(size // 4, 1):12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}"
        for side in ("oop", "ip"):
            text, bus = _side(size, _time_us(size, alg_peak, f"{job_id}:{size}:{side}"), factor, torch)
            line += text
            total += bus
        lines.append(line)
    return lines, total / max(2 * len(size_list), 1)


def _devices(hosts: Sequence[str], tasks_per_node: int, base_pid: int, bus_ids: Sequence[str]) -> list[str]:
    out, rank = [], 0
    for h, host in enumerate(hosts):
        for local in range(tasks_per_node):
            bus = bus_ids[local % len(bus_ids)] if bus_ids else "0000:00:00"
            out.append(f"#  Rank {rank:2d} Group  0 Pid {base_pid + 100 * h + local:6d} on {host:>10s} "
                       f"device {local:2d} [{bus}] {GPU_NAME}")
            rank += 1
    return out


_TABLE_HEAD = (
    "#\n#" + " " * 62 + "out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
)


def nccl_tests_output(hosts: Sequence[str], tasks_per_node: int, peak_bus: float, job_id: int, *,
                      binary: str = "all_reduce_perf", lo: int = 8, hi: int = 16 << 30, factor: int = 2,
                      iters: int = 20, warmup: int = 5, check: int = 1, bus_ids: Sequence[str] = ()) -> str:
    """What ``srun --mpi=pmix all_reduce_perf -g 1 ...`` prints, simulated."""
    ranks = max(1, len(hosts) * tasks_per_node)
    rows, avg = _rows(sizes(lo, hi, factor), ranks, peak_bus, job_id, torch=False)
    name = binary.rsplit("/", 1)[-1]
    head = (SIMULATED.format(what=f"nccl-tests {name} output of job {job_id}")
            + "# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703\n"
            + f"# Collective test starting: {name}\n"
            + f"# nThread 1 nGpus 1 minBytes {lo} maxBytes {hi} step: {factor}(factor) warmup iters: {warmup} "
            + f"iters: {iters} agg iters: 1 validation: {check} graph: 0\n#\n# Using devices\n")
    devices = _devices(hosts, tasks_per_node, 2_100 + job_id % 5_000, bus_ids)
    tail = (f"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {avg:.4g} \n#\n"
            f"# Collective test concluded: {name}\n#\n")
    return head + "\n".join(devices) + "\n" + _TABLE_HEAD + "\n".join(rows) + "\n" + tail


def torch_output(hosts: Sequence[str], tasks_per_node: int, peak_bus: float, job_id: int, *,
                 backend: str = "nccl", lo: int = 1 << 20, hi: int = 1 << 30, factor: int = 2,
                 iters: int = 20, warmup: int = 5, bus_ids: Sequence[str] = ()) -> str:
    """What the bundled torch_bench.py prints (rank 0 only), simulated."""
    ranks = max(1, len(hosts) * tasks_per_node)
    if backend == "gloo":
        peak_bus = peak_bus / 40.0  # gloo over TCP on CPUs: a few GB/s
    rows, avg = _rows(sizes(lo, hi, factor), ranks, peak_bus * 0.96, job_id, torch=True)
    head = (SIMULATED.format(what=f"torch_bench output of job {job_id}")
            + "# cockpit torch_bench: torch.distributed engine, nccl-tests compatible output\n"
            + "# Collective test starting: all_reduce_perf\n"
            + f"# nThread 1 nGpus 1 minBytes {lo} maxBytes {hi} step: {factor}(factor) warmup iters: {warmup} "
            + f"iters: {iters} agg iters: 1 validation: 1 graph: 0 backend: {backend} torch: 2.5.1+cu124\n"
            + "#\n# Using devices\n")
    devices = _devices(hosts, tasks_per_node, 3_100 + job_id % 5_000, bus_ids if backend == "nccl" else ())
    tail = (f"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {avg:.4f} \n#\n"
            "# Collective test concluded: all_reduce_perf\n")
    return head + "\n".join(devices) + "\n" + _TABLE_HEAD + "\n".join(rows) + "\n" + tail
