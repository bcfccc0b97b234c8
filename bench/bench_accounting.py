"""sacct/slurmdbd query time and cockpit's parse time for a history of real
finished jobs on the test cluster, and how both grow with the window.

With ``--submit`` it first runs ``--jobs`` short jobs as job arrays (``sbatch
--array=0-999 --wrap true``; MaxArraySize is 1001) and waits for them. Then, per window (1h, 1d, 7d by default) and per
source (``sacct --json``, ``--parsable2``), it runs the query cockpit runs and
prints sacct's wall time, the output size, cockpit's parse time and the
records; then ``cockpit history --json`` end to end. ``--tui`` adds the
key-to-screen latency while the History view loads. Prints figures; asserts
nothing.

    source /run/cockpit-cluster/env.sh
    .venv/bin/python bench/bench_accounting.py [--submit] [--jobs 10000] [--windows 1h,1d,7d] [--runs 3] [--tui]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cockpit.backends import accounting_json as aj  # noqa: E402
from cockpit.backends import accounting_text as at  # noqa: E402
from cockpit.backends.accounting import JobQuery, SlurmAccounting  # noqa: E402
from cockpit.core.accounting import parse_span  # noqa: E402
from cockpit.models.accounting import FINISHED_STATES  # noqa: E402
from cockpit.runner import LocalRunner  # noqa: E402

NAME = "cockpit-bench-acct"


def sh(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=True, **kw)


def finished(window: str) -> int:
    out = sh(["sacct", "-X", "-n", "-P", "-o", "JobIDRaw", "--allusers", "-S", f"now-{parse_span(window)}seconds",
              "-E", "now", "--state=" + ",".join(FINISHED_STATES)]).stdout
    return len(out.splitlines())


def submit(want: int) -> None:
    have = finished("1d")
    arrays = -(-want // 1000)
    t0 = time.monotonic()
    for _ in range(arrays):
        while True:  # MaxJobCount (10000) counts finished jobs kept for MinJobAge: wait for room
            res = subprocess.run(["sbatch", "--parsable", "-J", NAME, "--array=0-999", "-o", "/dev/null", "-t", "1",
                                  "--wrap", "true"], capture_output=True, text=True)
            if res.returncode == 0:
                break
            if "MaxJobCount" not in res.stderr and "temporarily" not in res.stderr.lower():
                sys.exit(f"sbatch failed: {res.stderr.strip()}")
            time.sleep(10)
    print(f"submitted {arrays} arrays of 1000 `true` jobs ({have} finished jobs in the last day)", flush=True)
    while True:
        left = len(sh(["squeue", "-h", "-n", NAME, "-t", "PD,R,CG", "-r", "-o", "%i"]).stdout.splitlines())
        if not left:
            break
        time.sleep(5)
    took = time.monotonic() - t0
    print(f"{arrays * 1000} jobs ran in {took:.0f} s ({arrays * 1000 / took:.1f} jobs/s); "
          f"{finished('1d')} finished jobs in the last day", flush=True)


async def measure(acct: SlurmAccounting, window: str, source: str) -> tuple[float, int, float, int]:
    """(sacct seconds, bytes, parse seconds, records) of one query."""
    now = time.time()
    q = JobQuery(start=int(now) - parse_span(window))
    out = ["--json"] if source == "json" else ["--parsable2", "--noheader", "-o", ",".join(at.SACCT_FIELDS)]
    argv, _bounds = acct._job_argv(q, now, out)  # noqa: SLF001 - the argv cockpit runs
    raw, took = await acct._cmd.run(argv, epoch_times=source != "json")  # noqa: SLF001
    t0 = time.perf_counter()
    if source == "json":
        recs = aj.parse_sacct_json(aj.load(raw), steps=False)
    else:
        recs = at.parse_sacct_parsable(raw.decode("utf-8", "replace"))
    return took, len(raw), time.perf_counter() - t0, len(recs)


def end_to_end(window: str) -> float:
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent-cockpit-bench")
    env.pop("COCKPIT_CONFIG", None)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "cockpit.cli", "--backend", "slurm-cli", "history", "--json", "--limit", "0",
                    "--since", window], capture_output=True, check=True, env=env, cwd=ROOT)
    return time.monotonic() - t0


def tui_latency(window: str) -> str:
    try:
        from bench.bench_accounting_tui import key_latency  # the History view's own probe
    except ImportError:
        return "key-to-screen while the History view loads: not measured (no TUI History view yet)"
    return key_latency(window)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submit", action="store_true", help="first run --jobs short jobs as job arrays")
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--windows", default="1h,1d,7d")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tui", action="store_true", help="also key-to-screen latency while the History view loads")
    args = ap.parse_args()
    if not os.environ.get("SLURM_CONF"):
        sys.exit("source /run/cockpit-cluster/env.sh first (the test cluster, with accounting)")
    if args.submit:
        submit(args.jobs)
    version = sh(["sinfo", "--version"]).stdout.strip()
    acct = SlurmAccounting(LocalRunner(default_timeout=300), timeout=300)
    print(f"{version}; median of {args.runs} runs; sacct = its wall time, parse = cockpit's parse of the output")
    print(f"{'window':<7} {'source':<12} {'records':>8} {'sacct s':>8} {'MB':>7} {'parse s':>8} {'us/job':>7}")
    for window in args.windows.split(","):
        for source in ("json", "parsable2"):
            runs = [asyncio.run(measure(acct, window, source)) for _ in range(args.runs)]
            took = statistics.median(r[0] for r in runs)
            size = statistics.median(r[1] for r in runs)
            parse = statistics.median(r[2] for r in runs)
            n = runs[-1][3]
            per = 1e6 * parse / n if n else 0
            print(f"{window:<7} {source:<12} {n:>8} {took:>8.2f} {size / 1e6:>7.1f} {parse:>8.3f} {per:>7.1f}", flush=True)
        e2e = statistics.median(end_to_end(window) for _ in range(args.runs))
        print(f"{window:<7} cockpit history --json end to end: {e2e:.2f} s", flush=True)
    print(tui_latency(args.windows.split(",")[-1]) if args.tui else
          "key-to-screen while the History view loads: run with --tui")


if __name__ == "__main__":
    main()
