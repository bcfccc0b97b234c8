"""How long the UI thread waits for the GIL while the jobs table finds what changed, side by side.

    .venv/bin/python bench/bench_gilshare.py [--jobs 500000] [--runs 3] [--ordered]

A worker thread runs the jobs table's diff (cockpit.tui.livetable.LiveTable.update)
on a 1% refresh of ``--jobs`` jobs, as the app's build thread does, while the main
thread stands in for the UI thread: it wakes every millisecond and notes how late
it ran (what a key waits for). Two forms of the same diff in one run:

* cockpit: the passes over every job in slices (cockpit.tui.gilshare), so the GIL
  can change hands between two C calls;
* alternative: each pass one C call (``list(map(...))``, ``set(keys)``), as before.

The jobs lie shuffled in memory unless ``--ordered`` (after hours of churn, a
table's objects are no longer in their memory order; a fresh load is). Prints
the worker's time per diff and the main thread's longest and p99 lateness;
asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.models import Job, record_replace  # noqa: E402
from cockpit.tui import gilshare, livetable  # noqa: E402
from cockpit.tui.livetable import LiveTable  # noqa: E402
from cockpit.tui.rows import job_row  # noqa: E402


def make_jobs(n: int, ordered: bool) -> list[Job]:
    rng = random.Random(1)
    ids = list(range(1, n + 1))
    if not ordered:
        rng.shuffle(ids)  # made in shuffled order: neighbours in the table are far apart in memory
    jobs = {i: Job(i, name=f"job-{i % 97}", user=f"u{i % 13}", account="acct", partition="gpu",
                   state="RUNNING" if i % 3 else "PENDING") for i in ids}
    return [jobs[i] for i in range(1, n + 1)]


def refreshed(jobs: list[Job], rng: random.Random) -> tuple[Job, ...]:
    """1% of the jobs change state, 0.5% leave and as many arrive (new ids)."""
    out = list(jobs)
    n = len(out)
    for i in rng.sample(range(n), n // 100):
        out[i] = record_replace(out[i], state="COMPLETING")
    for i in sorted(rng.sample(range(n), n // 200), reverse=True):
        del out[i]
    top = max(j.job_id for j in out)
    out.extend(Job(top + k + 1, name="new", user="u0", state="PENDING") for k in range(n // 200))
    return tuple(out)


def lateness_during(work) -> tuple[float, list[float]]:
    """Run ``work`` in a thread; the main thread wakes every 1 ms meanwhile."""
    late: list[float] = []
    done = threading.Event()
    took = [0.0]

    def run() -> None:
        t = time.perf_counter()
        work()
        took[0] = time.perf_counter() - t
        done.set()

    worker = threading.Thread(target=run)
    worker.start()
    while not done.is_set():
        due = time.perf_counter() + 0.001
        time.sleep(0.001)
        late.append(max(0.0, time.perf_counter() - due))
    worker.join()
    return took[0], late


def measure(jobs: list[Job], runs: int, sliced: bool) -> dict:
    saved = gilshare.SLICE
    if not sliced:
        gilshare.SLICE = 1 << 40  # one C call per pass: the form before
    try:
        rng = random.Random(2)
        live = LiveTable(job_row, lambda j: j.job_id)
        live.configure("", None, None, False)
        current = tuple(jobs)
        live.update(current)
        took, late = [], []
        for _ in range(runs):
            nxt = refreshed(list(current), rng)
            t, lat = lateness_during(lambda: live.update(nxt))
            took.append(t)
            late.extend(lat)
            current = nxt
    finally:
        gilshare.SLICE = saved
    late.sort()
    return {"diff_ms": statistics.median(took) * 1000, "late_max_ms": late[-1] * 1000,
            "late_p99_ms": late[min(len(late) - 1, int(0.99 * len(late)))] * 1000, "wakes": len(late)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ordered", action="store_true")
    a = ap.parse_args()
    jobs = make_jobs(a.jobs, a.ordered)
    print(f"{a.jobs} jobs ({'in memory order' if a.ordered else 'shuffled in memory'}), 1% refreshes, "
          f"{a.runs} runs each, slice {gilshare.SLICE}, switch interval {sys.getswitchinterval() * 1000:.0f} ms, "
          f"full rebuild above {livetable.FULL_REBUILD:.0%} changed")
    for label, sliced in (("cockpit: passes in slices", True), ("alternative: one C call a pass", False)):
        r = measure(jobs, a.runs, sliced)
        print(f"  {label:34s} diff {r['diff_ms']:6.1f} ms   UI thread late: max {r['late_max_ms']:6.1f} ms, "
              f"p99 {r['late_p99_ms']:5.1f} ms over {r['wakes']} wakes")


if __name__ == "__main__":
    main()
