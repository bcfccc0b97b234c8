"""Key-to-screen latency while the TUI's History view loads finished jobs from the
real test cluster's accounting (the CLI backend, the app headless). Used by
bench/bench_accounting.py --tui; runs alone too:

    source /run/cockpit-cluster/env.sh
    .venv/bin/python bench/bench_accounting_tui.py [--window 1d]

Keys are sent to the driver as a terminal would; the latency is the time to the
first frame that shows their effect (bench_tui.py's KeyProbe): ``s`` (the sort
column, drawn in the header) while the jobs load, ``down``/``up`` after.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_tui import KeyProbe, pct  # noqa: E402


async def measure(window: str) -> dict:
    from cockpit.backends.slurm_cli import SlurmCliBackend
    from cockpit.runner import LocalRunner
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.screens.history import HistoryScreen

    backend = SlurmCliBackend(LocalRunner(default_timeout=300), timeout=300)
    app = CockpitApp(backend, poll=False)
    out: dict = {}
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause(0.5)
        screen = HistoryScreen(window)
        t0 = time.perf_counter()
        app.push_screen(screen)
        await pilot.pause(0.2)
        probe = KeyProbe(app, lambda: (screen.table.sort_field, screen.table.value_reverse, screen.table.cursor_key(), len(screen.loaded)))
        during: list[float] = []
        while not screen.loaded and time.perf_counter() - t0 < 300:
            during.append(await probe.press("s"))
            await asyncio.sleep(0.05)
        out["load_s"] = time.perf_counter() - t0
        out["jobs"] = len(screen.loaded)
        after = [await probe.press("down" if i % 2 == 0 else "up") for i in range(40)]
        out["during"], out["after"] = during, after
    await backend.close()
    return out


def key_latency(window: str) -> str:
    r = asyncio.run(measure(window))
    d, a = [x * 1000 for x in r["during"]], [x * 1000 for x in r["after"]]
    return (f"TUI History view, last {window}: {r['jobs']} jobs on screen after {r['load_s']:.1f} s; key-to-screen "
            f"while loading p50 {pct(d, 50):.0f} ms, p99 {pct(d, 99):.0f} ms, max {max(d, default=0):.0f} ms "
            f"({len(d)} keys); after: p50 {pct(a, 50):.0f} ms, p99 {pct(a, 99):.0f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", default="1d")
    print(key_latency(ap.parse_args().window))
