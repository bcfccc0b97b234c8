#!/usr/bin/env python3
"""all_reduce bandwidth with torch.distributed, printed the way nccl-tests prints it.

For sites without nccl-tests. Runs one process per task under srun; the
rendezvous comes from Slurm's environment: RANK=SLURM_PROCID,
WORLD_SIZE=SLURM_NTASKS, LOCAL_RANK=SLURM_LOCALID, MASTER_ADDR = the first host
of SLURM_JOB_NODELIST (the sbatch script exports it; else ``scontrol show
hostnames``). Backend ``nccl`` on GPUs, ``gloo`` on CPUs.

Same definitions as nccl-tests (doc/PERFORMANCE.md): algbw = bytes / time,
busbw = algbw x 2(n-1)/n for all_reduce. "out-of-place" times a copy into a
separate buffer plus all_reduce of it (torch's all_reduce is in place);
"in-place" times all_reduce alone. Only rank 0 prints, so cockpit's nccl-tests
parser judges this output unchanged. Standalone on purpose: no cockpit import,
so it can be copied to any cluster.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import warnings

INFO_BYTES = 512
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text: str) -> int:
    text = text.strip().upper().rstrip("B")
    unit = text[-1] if text and text[-1] in UNITS else ""
    return int(float(text[: len(text) - len(unit)]) * UNITS[unit])


def slurm_env() -> tuple[int, int, int]:
    """(rank, world size, local rank) from torchrun's or Slurm's variables; sets MASTER_*."""
    env = os.environ
    rank = int(env.get("RANK", env.get("SLURM_PROCID", "0")))
    world = int(env.get("WORLD_SIZE", env.get("SLURM_NTASKS", "1")))
    local = int(env.get("LOCAL_RANK", env.get("SLURM_LOCALID", "0")))
    if "MASTER_ADDR" not in env:
        nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "localhost"
        try:
            out = subprocess.run(["scontrol", "show", "hostnames", nodelist], check=True,
                                 capture_output=True, text=True).stdout.split()
            env["MASTER_ADDR"] = out[0]
        except (OSError, subprocess.CalledProcessError, IndexError):
            env["MASTER_ADDR"] = nodelist.split(",")[0]
    env.setdefault("MASTER_PORT", str(20000 + int(env.get("SLURM_JOB_ID", "0")) % 20000))
    return rank, world, local


def busid(torch, backend: str, local: int) -> tuple[str, str]:
    if backend != "nccl":
        return "cpu", f"CPU ({backend})"
    props = torch.cuda.get_device_properties(local)
    bus = getattr(props, "pci_bus_id", 0)
    dom = getattr(props, "pci_domain_id", 0)
    dev = getattr(props, "pci_device_id", 0)
    return f"{dom:04x}:{bus:02x}:{dev:02x}", props.name


def gather_info(torch, dist, dev, world: int, info: tuple) -> list[tuple]:
    """all_gather of each rank's device line, as fixed-size bytes (all_gather_object needs numpy)."""
    raw = "\t".join(map(str, info)).encode()[:INFO_BYTES].ljust(INFO_BYTES, b"\0")
    mine = torch.tensor(list(raw), dtype=torch.uint8, device=dev)
    bufs = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(bufs, mine)
    out = []
    for buf in bufs:
        r, pid, host, local, bus, name = bytes(buf.tolist()).rstrip(b"\0").decode().split("\t")
        out.append((int(r), int(pid), host, int(local), bus, name))
    return out


def timed(dist, sync, fn, iters: int) -> float:
    """Average seconds per call of fn over iters, after a barrier."""
    dist.barrier()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) / iters


def measure(torch, dist, dev, sync, size: int, args) -> tuple[float, float, int]:
    """(out-of-place s, in-place s, wrong elements) for one message size."""
    count = max(size // 4, 1)
    src = torch.ones(count, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)

    def oop():
        dst.copy_(src)
        dist.all_reduce(dst)

    def ip():
        dist.all_reduce(src)

    for _ in range(args.warmup):
        ip()
    t_oop = timed(dist, sync, oop, args.iters)
    t_ip = timed(dist, sync, ip, args.iters)
    # Validation: each rank contributes rank+1; the sum is n(n+1)/2 everywhere.
    rank, world = dist.get_rank(), dist.get_world_size()
    src.fill_(rank + 1)
    dist.all_reduce(src)
    wrong = int((src != world * (world + 1) / 2).sum().item())
    return t_oop, t_ip, wrong


def fmt_side(size: int, secs: float, world: int, wrong: int) -> str:
    algbw = size / secs / 1e9 if secs > 0 else 0.0
    busbw = algbw * 2 * (world - 1) / world
    return f"  {secs * 1e6:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:6d}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    ap.add_argument("--min-bytes", default="1M")
    ap.add_argument("--max-bytes", default="1G")
    ap.add_argument("--factor", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args(argv)
    # This benchmark never needs numpy; torch warns at import when it is missing.
    warnings.filterwarnings("ignore", message=".*NumPy.*")
    import torch
    import torch.distributed as dist

    rank, world, local = slurm_env()
    if args.backend == "nccl":
        torch.cuda.set_device(local)
        dev, sync = torch.device("cuda", local), torch.cuda.synchronize
    else:
        dev, sync = torch.device("cpu"), (lambda: None)
    dist.init_process_group(args.backend, rank=rank, world_size=world)
    bus, name = busid(torch, args.backend, local)
    infos = gather_info(torch, dist, dev, world, (rank, os.getpid(), socket.gethostname(), local, bus, name))
    lo, hi = parse_bytes(args.min_bytes), parse_bytes(args.max_bytes)
    out = sys.stdout
    if rank == 0:
        out.write("# cockpit torch_bench: torch.distributed engine, nccl-tests compatible output\n")
        out.write("# Collective test starting: all_reduce_perf\n")
        out.write(f"# nThread 1 nGpus 1 minBytes {lo} maxBytes {hi} step: {args.factor}(factor) "
                  f"warmup iters: {args.warmup} iters: {args.iters} agg iters: 1 validation: 1 "
                  f"graph: 0 backend: {args.backend} torch: {torch.__version__}\n#\n# Using devices\n")
        for r, pid, host, dev_i, b, n in infos:
            out.write(f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10s} device {dev_i:2d} [{b}] {n}\n")
        out.write("#\n#" + " " * 62 + "out-of-place                       in-place\n")
        out.write("#       size         count      type   redop    root     time   algbw   busbw "
                  "#wrong     time   algbw   busbw #wrong\n")
        out.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
                  "            (us)  (GB/s)  (GB/s)\n")
        out.flush()
    total, rows, size = 0.0, 0, lo
    while size <= hi:
        t_oop, t_ip, wrong = measure(torch, dist, dev, sync, size, args)
        if rank == 0:
            line = f"{size:12d}  {max(size // 4, 1):12d}     float     sum      -1"
            line += fmt_side(size, t_oop, world, wrong) + fmt_side(size, t_ip, world, wrong)
            out.write(line + "\n")
            out.flush()
            total += sum(size / t / 1e9 * 2 * (world - 1) / world for t in (t_oop, t_ip))
            rows += 2
        size *= max(args.factor, 2)
    if rank == 0:
        out.write("# Out of bounds values : 0 OK\n")
        out.write(f"# Avg bus bandwidth    : {total / max(rows, 1):.4f} \n#\n")
        out.write("# Collective test concluded: all_reduce_perf\n")
        out.flush()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
