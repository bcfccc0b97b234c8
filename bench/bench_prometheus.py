"""GPU telemetry at fleet scale: cockpit's Prometheus queries against a real
Prometheus holding NODES x GPUS dcgm-exporter GPUs, side by side with an SSH
fan-out of the per-node command in the same run.

Prometheus is Debian's binary on loopback, scraping the dcgm-exporter STAND-IN of
tests/promlib.py: one target serving the recorded 8x H100 output
(tests/data/dcgm/h100-8gpu-gpu-node-1-580.105.08-sampled.prom: GPU_TEMP, POWER_USAGE,
GPU_UTIL, MEM_COPY_UTIL) once per node, only ``Hostname`` rewritten. Every GPU in
that recording is at 0 %, so the fleet-wide idle answer holds every GPU: the worst case
for the per-GPU answer. ``--partly`` also rewrites GPU 0's utilisation line to 100 on
every node (the one value changed, said in the output): every node partly idle, so
the alternative form, too, returns the 7 idle GPUs of each node.

Per refresh it prints time, bytes on the wire (gzip) and decoded, and Prometheus'
CPU for: the GPUs view's visible rows (cockpit's 3 queries), the Pulse's fleet-wide
idle GPUs (1 query; beside it the alternative that returns a fully idle node as one
series and per-GPU series only for partly idle nodes), the per-node summary of the visible nodes, the per-job
utilisation of the visible jobs (1 query), and, for contrast,
every GPU's value. "Key-to-screen" is the event loop's worst lag while the refresh
runs (a key waits for the loop; a 10 ms probe timer measures it). The SSH side
fans out to TARGETS loopback sshd aliases (bench_fanout's farm; root, needs sshd)
running ``cat`` of a recorded nvidia-smi CSV, the bytes nvidia-smi would print.
Prints, never asserts. Targets: visible rows <= 1 s and <= 1 MB; fleet idle <= 2 s.

    .venv/bin/python bench/bench_prometheus.py [--nodes 10000] [--gpus 8] [--visible 40] [--refreshes 5] [--ssh-targets 200] [--partly]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "remote"), str(ROOT / "bench")]

import promlib  # noqa: E402

from cockpit.telemetry import dcgm  # noqa: E402
from cockpit.telemetry.prometheus import PromSettings  # noqa: E402
from cockpit.telemetry.promsource import PrometheusTelemetry  # noqa: E402

RECORDING = "h100-8gpu-gpu-node-1-580.105.08-sampled.prom"
# The alternative fleet-idle form (not cockpit's): one series per fully idle node (GPUs
# reporting x 1000 + the highest utilisation), per-GPU series only for partly idle nodes.
_PER_GPU = f"max by (Hostname, instance, gpu) ({dcgm.UTIL})"
_ALL_IDLE = f"max by (Hostname, instance) ({dcgm.UTIL}) < 5"
WHOLE_IDLE = (f"(count by (Hostname, instance) ({_PER_GPU}) * 1000 + on (Hostname, instance) "
              f"max by (Hostname, instance) ({dcgm.UTIL})) and on (Hostname, instance) ({_ALL_IDLE})")
PARTLY_IDLE = f"({_PER_GPU} < 5) unless on (Hostname, instance) ({_ALL_IDLE})"
NVSMI_CSV = "0, GPU-c4529c8d, NVIDIA H100 80GB HBM3, 00000000:53:00.0, 0, 0, 81559, 0, 30, 29, 113.61, 700.00\n"


def fleet_page(nodes: int, gpus: int, partly: bool = False) -> str:
    """The recording once per node (its first ``gpus`` GPUs), Hostname set to nodeNNNNN;
    ``partly``: GPU 0's utilisation 100 instead of 0."""
    base = [ln for ln in (promlib.DATA / RECORDING).read_text().splitlines()
            if ln and not ln.startswith("#") and int(ln.split('gpu="', 1)[1].split('"', 1)[0]) < gpus]
    if partly:
        base = [ln.rsplit(" ", 1)[0] + " 100" if ln.startswith(dcgm.UTIL + "{") and 'gpu="0"' in ln else ln
                for ln in base]
    out = []
    for n in range(1, nodes + 1):
        host = f'Hostname="node{n:05d}"'
        out.extend(ln.replace('Hostname="gpu-node-1"', host) for ln in base)
    return "\n".join(out) + "\n"


class LoopLag:
    """The event loop's worst lag (what a key press would wait) while it runs."""

    def __init__(self, period: float = 0.01) -> None:
        self.period, self.worst, self._task = period, 0.0, None

    async def _run(self) -> None:
        while True:
            t0 = time.monotonic()
            await asyncio.sleep(self.period)
            self.worst = max(self.worst, time.monotonic() - t0 - self.period)

    def __enter__(self):
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc):
        self._task.cancel()


async def measure(prom, src: PrometheusTelemetry, name: str, call, refreshes: int) -> dict:
    rows = []
    for _ in range(refreshes):
        tr = src.client.traffic
        before = (tr.requests, tr.wire_bytes, tr.body_bytes, prom.cpu_seconds())
        t0 = time.monotonic()
        with LoopLag() as lag:
            result = await call()
        wall = time.monotonic() - t0
        rows.append((wall, tr.wire_bytes - before[1], tr.body_bytes - before[2], prom.cpu_seconds() - before[3],
                     tr.requests - before[0], lag.worst))
    med = [statistics.median(r[i] for r in rows) for i in range(6)]
    size = len(result.readings) if hasattr(result, "readings") else len(result)
    print(f"  {name:<34} {med[0] * 1000:8.0f} ms {med[1] / 1024:9.1f} KiB wire {med[2] / 1024:9.1f} KiB json "
          f"{med[3] * 1000:7.0f} ms prom-CPU {med[4]:2.0f} req  loop lag {med[5] * 1000:5.0f} ms  ({size} items)")
    return {"wall": med[0], "wire": med[1]}


async def prometheus_side(prom, a) -> None:
    src = PrometheusTelemetry(PromSettings(prom.url, timeout=60), scrape_interval=15.0)
    visible = [f"node{n:05d}" for n in range(1, max(1, a.visible // a.gpus) + 1)]
    every = src.client

    async def every_gpu():
        return await every.query(dcgm.UTIL)
    try:
        print(f"Prometheus: {a.nodes} nodes x {a.gpus} GPUs, visible rows {a.visible} ({len(visible)} nodes), "
              f"median of {a.refreshes}")
        v = await measure(prom, src, "GPUs view, visible rows", lambda: src.read(visible), a.refreshes)
        f = await measure(prom, src, "Pulse: fleet-wide idle GPUs", lambda: src.idle_gpus(5.0), a.refreshes)

        async def whole_nodes_form():  # the alternative: fully idle nodes as one series each
            return [*await every.query(WHOLE_IDLE), *await every.query(PARTLY_IDLE)]
        await measure(prom, src, "(alternative) idle per node + partly", whole_nodes_form, a.refreshes)
        await measure(prom, src, "node summary, visible nodes", lambda: src.node_summary(visible), a.refreshes)
        # the jobs view's rows: one job per visible node here (8 GPUs each), averaged on the server
        jobs = {str(100 + i): {n: tuple(range(a.gpus))} for i, n in enumerate(visible)}
        await measure(prom, src, "per-job util, visible jobs", lambda: src.job_summary(jobs), a.refreshes)
        await measure(prom, src, "(contrast) every GPU's util", every_gpu, a.refreshes)
        ok_v = v["wall"] <= 1.0 and v["wire"] <= 1024 * 1024
        print(f"  targets: visible rows <= 1 s and <= 1 MB: {'met' if ok_v else 'MISSED'}; "
              f"fleet idle <= 2 s: {'met' if f['wall'] <= 2.0 else 'MISSED'}")
    finally:
        await src.close()


async def ssh_side(a) -> None:
    if a.ssh_targets <= 0:
        print("SSH fan-out: skipped (--ssh-targets 0)")
        return
    try:
        from bench_fanout import default_user, write_alias_config
        from sshdlib import SshdFarm, available
    except ImportError as exc:
        print(f"SSH fan-out: skipped ({exc})")
        return
    why = available()
    if why:
        print(f"SSH fan-out: skipped ({why})")
        return
    from cockpit.remote.fanout import fanout
    from cockpit.remote.pool import SshPool
    from cockpit.remote.settings import SshSettings

    with tempfile.TemporaryDirectory(prefix="cockpit-bench-sshd-") as tmp:
        Path(tmp).chmod(0o755)  # sshd reads authorized_keys as the login user
        farm = SshdFarm(Path(tmp)).setup(5, net="127.0.22")
        try:
            (farm.dir / "authorized_keys").chmod(0o644)
            csv = Path(tmp) / "nvidia-smi.csv"
            csv.write_text(NVSMI_CSV * a.gpus)
            csv.chmod(0o644)
            cfg, names = write_alias_config(farm, a.ssh_targets, default_user())
            pool = SshPool(SshSettings(config_file=str(cfg), known_hosts=str(farm.known_hosts), fanout_window=64,
                                       connect_timeout=30, command_timeout=60))
            try:
                for label in ("first (connects)", "again (pooled)"):
                    t0 = time.monotonic()
                    with LoopLag() as lag:
                        res = await fanout(pool, names, ["cat", str(csv)], keep_connections=True)
                    wall = time.monotonic() - t0
                    bad = sum(1 for r in res.values() if r.error or r.returncode)
                    print(f"  SSH fan-out {label:<17} {a.ssh_targets} nodes {wall * 1000:8.0f} ms, loop lag "
                          f"{lag.worst * 1000:5.0f} ms, {bad} failed -> {a.nodes} nodes at this rate: "
                          f"{wall * a.nodes / a.ssh_targets:6.1f} s")
            finally:
                await pool.close()
        finally:
            farm.teardown()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--visible", type=int, default=40, help="GPU rows on screen")
    ap.add_argument("--refreshes", type=int, default=5)
    ap.add_argument("--ssh-targets", type=int, default=200)
    ap.add_argument("--scrape", default="15s")
    ap.add_argument("--partly", action="store_true", help="GPU 0 of every node at 100 %% (every node partly idle)")
    a = ap.parse_args()
    page = fleet_page(a.nodes, a.gpus, a.partly)
    if a.partly:
        print("--partly: GPU 0's DCGM_FI_DEV_GPU_UTIL rewritten from 0 to 100 on every node (nothing else changed)")
    standin = promlib.StandIn({"fleet": page})
    with tempfile.TemporaryDirectory() as tmp:
        cfg = (f"global:\n  scrape_interval: {a.scrape}\n  scrape_timeout: {a.scrape}\nscrape_configs:\n"
               f"  - job_name: dcgm\n    metrics_path: /metrics/fleet\n"
               f"    static_configs:\n      - targets: ['127.0.0.1:{standin.port}']\n")
        prom = promlib.Prometheus(cfg, Path(tmp))
        try:
            prom.wait_ready()
            t0 = time.monotonic()
            prom.wait_series(f"count(DCGM_FI_DEV_GPU_UTIL) >= {a.nodes * a.gpus}", 1, timeout=600)
            print(f"stand-in page {len(page) / 1e6:.1f} MB, {page.count(chr(10))} series; first scrape in "
                  f"{time.monotonic() - t0:.1f} s; Prometheus CPU so far {prom.cpu_seconds():.1f} s")
            asyncio.run(prometheus_side(prom, a))
        finally:
            prom.stop()
            standin.stop()
    asyncio.run(ssh_side(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
