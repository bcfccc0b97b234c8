"""Held jobs on the real test cluster for bench_pyslurm.py: load them, remove them and
wait for the queue to be what it was, and sample the daemons' memory meanwhile."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path


class PeakSampler(threading.Thread):
    """Samples the RSS (VmRSS) of the test cluster's slurmctld and slurmrestd every 20 ms, so
    each column gets the daemons' peak while it ran (VmHWM would hold every earlier request's)."""

    def __init__(self, env, daemons=("slurmctld", "slurmrestd")) -> None:
        super().__init__(daemon=True)
        self.pids = {d: _pid(env, d) for d in daemons}
        self.peak = {d: 0.0 for d in daemons}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            for d, pid in self.pids.items():
                self.peak[d] = max(self.peak[d], _rss_mb(pid))

    def take(self) -> dict[str, float]:
        """The peaks since the last take (nan where a daemon could not be read)."""
        peak = {d: (v or float("nan")) for d, v in self.peak.items()}
        self.peak = {d: _rss_mb(pid) for d, pid in self.pids.items()}
        return peak


def _pid(env, daemon: str) -> str:
    try:
        return Path(env["COCKPIT_TEST_CLUSTER_RUN"], "pids", f"head.{daemon}.pid").read_text().split()[0]
    except (OSError, KeyError, IndexError):
        return ""


def _rss_mb(pid: str) -> float:
    try:
        m = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return 0.0
    return int(m.group(1)) / 1024 if m else 0.0


def queued(env, name: str = "") -> int:
    """Pending and running jobs (``squeue -h | wc -l``), of this name where one is given."""
    argv = ["squeue", "-h", "-o", "%i"] + (["--name", name] if name else [])
    return len(subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300).stdout.split())


def load(env, tag: str, n: int) -> None:
    """Submit n held jobs named tag; on a refusal (MaxJobCount reached) say how many got in and stop."""
    code = ("import pyslurm, sys\n"
            f"for i in range({n}):\n"
            "    try:\n"
            f"        pyslurm.JobSubmitDescription(name={tag!r}, script='#!/bin/sh\\nsleep 1\\n', priority=0,\n"
            "            standard_output='/dev/null', working_directory='/tmp', time_limit=1).submit()\n"
            "    except Exception as exc:\n"
            "        sys.exit(f'submission {i + 1} of {n} refused: {exc}')\n")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=3600)
    print(f"loaded {n} held jobs in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"loading stopped ({queued(env, tag)} of {n} in the queue; removed)")


def unload(env, tag: str, before: int) -> None:
    """Cancel this run's jobs and wait until the queue is back to what it was."""
    subprocess.run(["scancel", "--name", tag], env=env, check=False)
    t = time.perf_counter()
    while (left := queued(env, tag)) and time.perf_counter() - t < 300:
        time.sleep(2)
    print(f"removed: {left} of this run's jobs left after {time.perf_counter() - t:.0f} s; "
          f"squeue -h shows {queued(env)} jobs (before the run: {before})", file=sys.stderr)
