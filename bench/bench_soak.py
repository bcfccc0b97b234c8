"""Soak: the TUI left running against the real test cluster, with the cluster churning.

    tests/cluster/up && .venv/bin/python bench/bench_soak.py [--minutes 30] [--restart-every 10]
                                                             [--churn-every 3] [--period 60]

The app runs headless (App.run_test, 160x48) on the CLI backend with the
default refresh intervals, telemetry included, against the cluster of
tests/cluster/up. Meanwhile a churn task changes the cluster every few seconds
(submits short jobs, cancels one, drains or resumes a node: with Slurm's own
commands, as other users and operators would) and slurmctld is restarted every
``--restart-every`` minutes (SIGTERM, then tests/cluster/up starts it again).
Each period it presses keys (down/up) and measures key-to-screen latency.

Prints, per period: RSS of the app process and of its parse worker, open file
descriptors, threads, established SSH connections, key-to-screen p50/p99,
polls and poll errors; at the end the RSS slope per hour (least squares over
the periods after the first two) and every exception the app raised. Asserts
nothing; bounded in time; removes the jobs it submitted and resumes the nodes
it drained.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tui import KeyProbe, pct  # noqa: E402

ENV_FILE = Path("/run/cockpit-cluster/env.sh")
TAG = "cockpit-soak"


def cluster_env() -> dict[str, str]:
    if not ENV_FILE.exists():
        sys.exit(f"bench_soak: no test cluster ({ENV_FILE} missing): run tests/cluster/up first")
    env = dict(os.environ)
    for line in ENV_FILE.read_text().splitlines():
        line = line.removeprefix("export ").strip()
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = v.strip("'\"")
    return env


def slurm(env, *argv: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), env=env, input=input, capture_output=True, text=True, timeout=60)


def proc_status(pid: int | str = "self") -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def rss_mb(pid: int | str = "self") -> float:
    try:
        return int(proc_status(pid)["VmRSS"].split()[0]) / 1024
    except (OSError, KeyError):
        return 0.0


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def ssh_connections() -> int:
    """Established TCP connections of this process to port 22 (via socket inodes)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "01" and parts[2].endswith(":0016") and parts[9] in inodes:
                n += 1
    return n


def child_pids() -> list[int]:
    me = str(os.getpid())
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdecimal():
            try:
                if proc_status(d.name).get("PPid") == me:
                    out.append(int(d.name))
            except OSError:
                pass
    return out


class Churn(threading.Thread):
    """The world changing under the app: other users' jobs, an operator's drains."""

    def __init__(self, env, every: float, nodes: list[str], stop: threading.Event) -> None:
        super().__init__(daemon=True, name="soak-churn")
        self.env, self.every, self.nodes, self.stop = env, every, nodes, stop
        self.rng = random.Random(7)
        self.events = 0
        self.drained: set[str] = set()

    def run(self) -> None:
        while not self.stop.wait(self.every):
            what = self.rng.choice(("submit", "submit", "cancel", "drain"))
            try:
                if what == "submit":
                    slurm(self.env, "sbatch", f"--job-name={TAG}", "--output=/dev/null",
                          f"--wrap=sleep {self.rng.randint(3, 40)}")
                elif what == "cancel":
                    ids = slurm(self.env, "squeue", "-h", f"--name={TAG}", "-o", "%i").stdout.split()
                    if ids:
                        slurm(self.env, "scancel", self.rng.choice(ids))
                else:
                    node = self.rng.choice(self.nodes)
                    if node in self.drained:
                        slurm(self.env, "scontrol", "update", f"NodeName={node}", "State=RESUME")
                        self.drained.discard(node)
                    else:
                        slurm(self.env, "scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=soak churn")
                        self.drained.add(node)
                self.events += 1
            except subprocess.TimeoutExpired:
                pass  # slurmctld restarting: the next round goes on

    def clean(self) -> None:
        slurm(self.env, "scancel", f"--name={TAG}")
        for node in self.drained:
            slurm(self.env, "scontrol", "update", f"NodeName={node}", "State=RESUME")


def restart_slurmctld(env) -> None:
    pid_file = Path(env["COCKPIT_TEST_CLUSTER_RUN"]) / "pids" / "head.slurmctld.pid"
    pid = int(pid_file.read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    subprocess.run([str(ROOT / "tests/cluster/up")], capture_output=True, timeout=300)


async def soak(args) -> None:
    from cockpit.backends.slurm_cli import SlurmCliBackend
    from cockpit.config import Config
    from cockpit.runner import LocalRunner
    from cockpit.tui.app import CockpitApp

    env = cluster_env()
    os.environ.update({k: v for k, v in env.items() if k.startswith(("SLURM_", "COCKPIT_TEST"))})
    nodes = args.drain_nodes.split(",") if args.drain_nodes else env.get("COCKPIT_TEST_NODES", "node01 node02 node03 node04").split()
    backend = SlurmCliBackend(LocalRunner(env=env), timeout=30)
    errors: list[str] = []
    app = CockpitApp(backend, Config())
    orig_handle = app._handle_exception

    def record(error: Exception) -> None:  # keep the app alive and count what broke
        errors.append(f"{type(error).__name__}: {error}")

    app._handle_exception = record  # noqa: SLF001 - the soak reports exceptions instead of exiting
    stop = threading.Event()
    churn = Churn(env, args.churn_every, nodes, stop)
    rows = []
    start = time.monotonic()
    next_restart = start + args.restart_every * 60
    restarts = 0
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("5")  # the jobs view: the one that churns most
            table = app.main.active_table()
            deadline = time.monotonic() + 120
            while table.row_count < 2 and time.monotonic() < deadline:  # keys need rows to move over
                await asyncio.sleep(0.2)
            probe = KeyProbe(app, lambda: table.cursor)
            churn.start()
            threads0 = threading.active_count()
            while time.monotonic() - start < args.minutes * 60:
                period_end = time.monotonic() + args.period
                lat = []
                while time.monotonic() < period_end:
                    for i in range(10):
                        lat.append(await probe.press("down" if i % 2 == 0 else "up"))
                        await asyncio.sleep(0.05)
                    await asyncio.sleep(2)
                    if time.monotonic() >= next_restart:
                        # A thread of its own, joined: asyncio.to_thread would leave an idle
                        # executor thread behind and count as the app's.
                        t = threading.Thread(target=restart_slurmctld, args=(env,), name="soak-restart")
                        t.start()
                        while t.is_alive():
                            await asyncio.sleep(0.2)
                        restarts += 1
                        next_restart += args.restart_every * 60
                status = app.poller.status()
                rows.append({
                    "t_min": (time.monotonic() - start) / 60, "rss_mb": rss_mb(),
                    "workers_mb": sum(rss_mb(p) for p in child_pids()), "fds": open_fds(),
                    "threads": threading.active_count(), "ssh": ssh_connections(),
                    "p50_ms": pct(lat, 50) * 1000, "p99_ms": pct(lat, 99) * 1000, "keys": len(lat),
                    "stale": bool(getattr(status, "stale", False)), "churn": churn.events, "restarts": restarts,
                })
                r = rows[-1]
                print(f"{r['t_min']:6.1f} min  rss {r['rss_mb']:7.1f} MB  workers {r['workers_mb']:6.1f} MB  "
                      f"fds {r['fds']:4d}  threads {r['threads']:3d}  ssh {r['ssh']:2d}  "
                      f"keys p50/p99 {r['p50_ms']:6.1f}/{r['p99_ms']:6.1f} ms  churn {r['churn']:4d}  "
                      f"restarts {r['restarts']}  {'STALE' if r['stale'] else ''}", flush=True)
    finally:
        stop.set()
        churn.clean()
        app._handle_exception = orig_handle
    report(rows, errors, threads0 if rows else 0)


def slope_per_hour(rows, key: str) -> float:
    pts = [(r["t_min"] / 60, r[key]) for r in rows[2:]]
    if len(pts) < 2:
        return float("nan")
    mx, my = statistics.fmean(p[0] for p in pts), statistics.fmean(p[1] for p in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else float("nan")


def report(rows, errors, threads0: int) -> None:
    if not rows:
        print("no periods completed")
        return
    first, last = rows[min(2, len(rows) - 1)], rows[-1]
    print()
    print(f"periods: {len(rows)}  churn events: {last['churn']}  slurmctld restarts: {last['restarts']}")
    print(f"RSS app: {first['rss_mb']:.1f} -> {last['rss_mb']:.1f} MB, slope {slope_per_hour(rows, 'rss_mb'):+.2f} MB/hour "
          f"(workers {slope_per_hour(rows, 'workers_mb'):+.2f} MB/hour)")
    print(f"fds: {first['fds']} -> {last['fds']}  threads: {threads0} at start, {last['threads']} at the end  "
          f"ssh connections: {first['ssh']} -> {last['ssh']}")
    all_p99 = [r["p99_ms"] for r in rows]
    print(f"key-to-screen p99 per period: median {statistics.median(all_p99):.1f} ms, worst {max(all_p99):.1f} ms; "
          f"p50 median {statistics.median(r['p50_ms'] for r in rows):.1f} ms")
    import gc

    gc.unfreeze()
    gc.collect()
    print(f"RSS after a full collection at the end: {rss_mb():.1f} MB (frozen garbage freed)")
    print(f"exceptions: {len(errors)}")
    for e in errors[:20]:
        print(f"  {e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--restart-every", type=float, default=10.0, help="minutes between slurmctld restarts")
    ap.add_argument("--churn-every", type=float, default=3.0, help="seconds between cluster changes")
    ap.add_argument("--period", type=float, default=60.0, help="seconds per reported period")
    ap.add_argument("--drain-nodes", default="", help="nodes the churn drains and resumes (default: all)")
    asyncio.run(soak(ap.parse_args()))


if __name__ == "__main__":
    main()
