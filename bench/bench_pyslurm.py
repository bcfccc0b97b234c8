"""pyslurm vs the CLI backend vs slurmrestd on the real test cluster, loaded with thousands of held jobs.

    flock /tmp/cockpit-heavy.lock .venv/bin/python bench/bench_pyslurm.py [--jobs 9000] [--runs 3]
        (as root, on the test cluster: tests/cluster/up; --jobs 50000 --modes slurm-cli,pyslurm for #24)

Loads the cluster with N held jobs (one record each: held array tasks stay one
record in slurmctld, in squeue --json and in pyslurm alike, so they are
submitted one by one through pyslurm, ~1 ms each), then prints side by side in
one run, medians of ``--runs`` fresh processes each:

* first load: a fresh backend fetches nodes and jobs (as the poller does, at
  once); refresh: the same again, nothing changed (what every 5 s costs);
* peak RSS of the cockpit process and of its largest helper (the pyslurm
  worker; the parse worker or squeue itself);
* slurmctld RPCs for start + first load and per refresh (sdiag between the
  phases; the fewest of the runs, since other clients only add to the counts);
* each as a ratio to the floor: the controller answering alone,
  ``squeue --all --json >/dev/null`` and the node listing
  (``scontrol show node --json``, ``sinfo --json`` on 22.05) run at once;
* the TUI in a tmux pane: seconds from start to the Pulse view with data, and
  to its JOBS line counting all the held jobs (the whole queue read);
* slurmrestd (the test cluster's, JWT of the test user): the same load through
  the REST backend; the peak RSS of the slurmrestd server and of slurmctld
  while each column ran (VmRSS sampled every 20 ms);
* the UI question: the worst gap of a 5 ms asyncio ticker during a refresh and
  during a fetch from a controller that does not answer, with pyslurm in a
  thread of the UI process vs in the worker process.

The jobs are removed at the end (scancel --name, then it waits for the queue to
be what it was); slurmctld keeps their records another MinJobAge (300 s on the
test cluster), so a second run right after needs room for both in MaxJobCount.
The load average is printed beside each column. Child processes do the measuring
(``--measure``), so that one backend's peak memory never hides the other's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from heldjobs import PeakSampler, load, queued, unload  # noqa: E402 - bench/ is this script's folder
ENV_SH = Path("/run/cockpit-cluster/env.sh")
MODES = ("slurm-cli", "pyslurm", "pyslurm-thread", "slurmrestd")
_RPC = re.compile(r"^\s+(REQUEST_\w+|MESSAGE_\w+)\s+\(\s*\d+\)\s+count:(\d+)")


# -- child side: one measurement in a fresh process ---------------------------------
def _bad_conf() -> str:
    text = Path(os.environ["SLURM_CONF"]).read_text()
    path = Path(f"/tmp/cockpit-bench-down-{os.getpid()}.conf")
    path.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=6899", text))  # loopback, no listener
    return str(path)


async def _backend(mode: str, down: bool = False):
    from cockpit.backends.slurm_cli import SlurmCliBackend
    from cockpit.runner import LocalRunner

    cli = SlurmCliBackend(LocalRunner(), timeout=60)
    if mode == "slurm-cli":
        return cli, 0.0
    if mode == "slurmrestd":
        from cockpit.backends.rest_client import RestSettings
        from cockpit.backends.slurmrestd import SlurmRestBackend

        started = time.perf_counter()
        rest = SlurmRestBackend(RestSettings(url=os.environ["SLURMRESTD_URL"], timeout=120))
        await rest.open()
        return rest, time.perf_counter() - started
    from cockpit.backends.pyslurm_backend import Probe, PyslurmBackend, probe
    from cockpit.backends.pyslurm_worker import PyslurmWorker, ThreadWorker

    started = time.perf_counter()
    env = {"SLURM_CONF": _bad_conf()} if down else {}
    if mode == "pyslurm-thread":
        if down:
            os.environ.update(env)  # pyslurm reads it when it is imported, here
        worker = ThreadWorker()
        info = await worker.call("info")
        found = Probe(True, "bench", info["pyslurm"], info["generation"], "", worker)
    elif down:
        worker = PyslurmWorker(env=env)
        info = await worker.call("info")
        found = Probe(True, "bench", info["pyslurm"], info["generation"], "", worker)
    else:
        found = await probe(cli)
        assert found.usable, found.why
    return PyslurmBackend(cli=cli, probed=found), time.perf_counter() - started


async def _both(backend) -> tuple[int, int]:
    nodes, jobs = await asyncio.gather(backend.fetch_nodes(), backend.fetch_jobs())
    return len(nodes), len(jobs)


async def _worst_gap(coro) -> tuple[float, object]:
    """Run coro while a 5 ms ticker runs on the same loop; the longest the ticker waited beyond 5 ms."""
    worst, done = 0.0, False

    async def tick():
        nonlocal worst
        while not done:
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            worst = max(worst, time.perf_counter() - t - 0.005)

    ticker = asyncio.ensure_future(tick())
    await asyncio.sleep(0.02)  # the ticker runs before coro starts a thread that may hold the GIL
    try:
        result = await coro
    except Exception as exc:  # noqa: BLE001 - the down case fails by design
        result = exc
    done = True
    await ticker
    return worst, result


async def measure(mode: str) -> dict:
    out: dict = {"mode": mode}
    if mode.endswith("-down"):
        backend, _ = await _backend(mode.removesuffix("-down"), down=True)
        t = time.perf_counter()
        out["stall_down_s"], err = await _worst_gap(backend.fetch_jobs())
        out["down_s"], out["down_error"] = time.perf_counter() - t, str(err)[:120]
        await backend.close()
        return out
    env = dict(os.environ)
    before = rpcs(env)
    backend, out["probe_s"] = await _backend(mode)
    t = time.perf_counter()
    out["nodes"], out["jobs"] = await _both(backend)
    out["first_s"] = time.perf_counter() - t
    loaded = rpcs(env)
    t = time.perf_counter()
    out["stall_refresh_s"], _ = await _worst_gap(_both(backend))
    out["refresh_s"] = time.perf_counter() - t
    out["rpcs_first"], out["rpcs_refresh"] = rpc_delta(before, loaded), rpc_delta(loaded, rpcs(env))
    await backend.close()
    out["rss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # In thread mode and over REST the only children are the sdiag calls, whose RSS right after
    # fork is this process's: no helper to report (slurmrestd's server is measured by the parent).
    out["rss_helper_mb"] = (float("nan") if mode in ("pyslurm-thread", "slurmrestd")
                            else resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    return out


# -- parent side ----------------------------------------------------------------------
def _env() -> dict[str, str]:
    env = dict(os.environ)
    for line in ENV_SH.read_text().splitlines():
        m = re.match(r"^export ([A-Z_][A-Z0-9_]*)=(.*)$", line.strip())
        if m:
            env[m.group(1)] = m.group(2).strip("'\"")
    return env


def rpcs(env) -> dict[str, int]:
    text = subprocess.run(["sdiag"], capture_output=True, text=True, env=env, check=True).stdout
    section = text.split("Remote Procedure Call statistics by message type", 1)[-1].split("by user")[0]
    return {m.group(1): int(m.group(2)) for line in section.splitlines() if (m := _RPC.match(line))}


def rpc_delta(before: dict[str, int], after: dict[str, int]) -> int:
    """Read RPCs between two sdiag calls: submissions and job ends left out, and the one
    sdiag call that closes the window (slurmrestd's own token check is a diag too)."""
    skip = ("REQUEST_SUBMIT_BATCH_JOB", "REQUEST_CANCEL_JOB_STEP", "REQUEST_KILL_JOB",
            "MESSAGE_NODE_REGISTRATION_STATUS", "REQUEST_COMPLETE_BATCH_SCRIPT", "MESSAGE_EPILOG_COMPLETE")
    return sum(after.get(k, 0) - before.get(k, 0) for k in after if k not in skip) - 1


def child(mode: str, env) -> dict:
    if mode == "slurmrestd":  # only this child gets the token: every Slurm client would use SLURM_JWT
        env = dict(env, SLURM_JWT=env["COCKPIT_TEST_SLURM_JWT"])
    proc = subprocess.run([sys.executable, __file__, "--measure", mode], capture_output=True, text=True,
                          env=env, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{mode}: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def floor(env, node_argv: list[str], runs: int) -> dict:
    def timed(argvs):
        t = time.perf_counter()
        procs = [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env) for a in argvs]
        rcs = [p.wait() for p in procs]
        assert rcs == [0] * len(argvs), (argvs, rcs)
        return time.perf_counter() - t

    jobs = ["squeue", "--all", "--json"]
    out = {"jobs_s": statistics.median(timed([jobs]) for _ in range(runs)),
           "nodes_s": statistics.median(timed([node_argv]) for _ in range(runs)),
           "both_s": statistics.median(timed([jobs, node_argv]) for _ in range(runs))}
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # squeue's own peak
    return out


def tui_first_screen(env, backend: str, held: int) -> tuple[float, float]:
    """Seconds from starting ``cockpit`` in a tmux pane to the Pulse view showing data (the
    header's age is a number: "age —" is shown before any), and to its JOBS line counting at
    least the ``held`` jobs as pending (the whole queue read), polled every 20 ms."""
    import shutil
    import tempfile

    cockpit = Path(sys.executable).parent / "cockpit"  # the venv running this bench (a worktree has none)
    if shutil.which("tmux") is None or not cockpit.exists():
        return float("nan"), float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp, "cockpit")
        cfg.mkdir()
        (cfg / "config.toml").write_text(f'[general]\nbackend = "{backend}"\n')
        sock = f"cockpit-bench-{os.getpid()}"
        tenv = dict(env, XDG_CONFIG_HOME=tmp, XDG_STATE_HOME=tmp, TERM="xterm-256color", LANG="C.UTF-8")
        if backend == "slurmrestd":
            tenv["SLURM_JWT"] = env["COCKPIT_TEST_SLURM_JWT"]

        def tmux(*a):
            return subprocess.run(["tmux", "-L", sock, *a], capture_output=True, text=True, env=tenv, timeout=20)

        t, first = time.perf_counter(), float("nan")
        tmux("new-session", "-d", "-x", "160", "-y", "48", "--", str(cockpit))
        try:
            while time.perf_counter() - t < 300:  # squeue --json at 50k jobs alone takes 16 s
                pane = tmux("capture-pane", "-p").stdout
                head = (pane.splitlines() or [""])[0]
                if first != first and "Pulse" in head and re.search(r"\bage \d", head):
                    first = time.perf_counter() - t
                if (m := re.search(r"(\d+) pending", pane)) and int(m.group(1)) >= held:
                    return first, time.perf_counter() - t
                time.sleep(0.02)
            return first, float("nan")
        finally:
            tmux("kill-server")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=0,
                    help="held jobs to submit (default: up to 9000, leaving 500 of MaxJobCount to others)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES), help=f"columns, comma-separated (default: all of {MODES})")
    ap.add_argument("--no-tui", action="store_true", help="skip the TUI first-screen row (tmux)")
    ap.add_argument("--no-down", action="store_true", help="skip the controller-not-answering runs (9 s each)")
    ap.add_argument("--json", help="also write the raw figures to this file")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    if bad := [m for m in args.modes if m not in MODES]:
        ap.error(f"--modes: unknown column {bad[0]!r} (known: {', '.join(MODES)})")
    if args.measure:
        print(json.dumps(asyncio.run(measure(args.measure))))
        return
    if not ENV_SH.exists():
        raise SystemExit(f"{ENV_SH} missing: start the test cluster (sudo tests/cluster/up)")
    env = _env()
    version = env.get("COCKPIT_TEST_SLURM_VERSION", "")
    node_argv = ["sinfo", "--json"] if version.startswith("22.") else ["scontrol", "show", "node", "--json"]
    if not args.jobs:
        conf = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, env=env).stdout
        limit = int(re.search(r"MaxJobCount\s*=\s*(\d+)", conf).group(1))
        have = len(subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i"], capture_output=True, text=True,
                                  env=env).stdout.split())
        args.jobs = max(0, min(9000, limit - have - 500))
    tag = f"cockpit-bench-{uuid.uuid4().hex[:6]}"
    before = queued(env)
    sampler = PeakSampler(env)
    sampler.start()
    try:
        load(env, tag, args.jobs)
        results = run_all(env, node_argv, args, sampler)
    finally:
        unload(env, tag, before)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    report(results, version, node_argv, args)


def _load_avg() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def run_all(env, node_argv, args, sampler: PeakSampler) -> dict:
    sampler.take()  # the peaks of loading the jobs are not a column's
    res: dict = {"floor": floor(env, node_argv, args.runs), "load_start": _load_avg()}
    res["floor"]["ctld_mb"] = sampler.take()["slurmctld"]
    for mode in args.modes:
        load_before = os.getloadavg()[0]
        samples = [child(mode, env) for _ in range(args.runs)]
        med = {k: statistics.median(s[k] for s in samples) for k, v in samples[0].items()
               if isinstance(v, (int, float))}
        for k in ("rpcs_first", "rpcs_refresh"):  # other clients of slurmctld only add to sdiag's counts
            med[k] = min(s[k] for s in samples)
        if mode != "pyslurm-thread" and not args.no_tui:  # the TUI always uses the worker process
            tui = [tui_first_screen(env, mode, args.jobs) for _ in range(args.runs)]
            med["tui_first_s"], med["tui_all_s"] = (statistics.median(x) for x in zip(*tui))
        peaks = sampler.take()
        med["rss_ctld_mb"] = peaks["slurmctld"]
        med["rss_server_mb"] = peaks["slurmrestd"] if mode == "slurmrestd" else float("nan")
        med["load"] = f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}"
        res[mode] = med
    if not args.no_down:
        for mode in ("pyslurm-down", "pyslurm-thread-down"):
            res[mode] = child(mode, env)
    res["load_end"] = _load_avg()
    return res


def report(r: dict, version: str, node_argv: list[str], args) -> None:
    f, cols = r["floor"], [c for c in MODES if c in r]
    first = r[cols[0]]
    print(f"Slurm {version}, {first['jobs']:.0f} jobs and {first['nodes']:.0f} nodes in slurmctld ({args.jobs} of "
          f"them held, submitted for this run); medians of {args.runs} runs; load average (1/5/15 min) "
          f"{r['load_start']} at the start, {r['load_end']} at the end")
    print(f"floor: squeue --all --json {f['jobs_s']:.2f} s, {' '.join(node_argv)} {f['nodes_s']:.2f} s, "
          f"both at once {f['both_s']:.2f} s; squeue's peak RSS {f['rss_mb']:.0f} MB, slurmctld's {f['ctld_mb']:.0f} MB")
    print(f"{'':38}" + "".join(f"{c:>18}" for c in cols))

    def row(label, key, fmt="{:.2f}", ratio=None):
        cells = []
        for c in cols:
            v = r[c].get(key, float("nan"))
            cell = fmt.format(v) if v == v else "-"  # nan: not measured for this column
            if ratio and v == v:
                cell += f" ({v / ratio:.2f}x)"
            cells.append(f"{cell:>18}")
        print(f"{label:38}" + "".join(cells))

    row("TUI: start to Pulse with data, s", "tui_first_s", ratio=f["both_s"])
    row("TUI: start to Pulse counting all jobs", "tui_all_s", ratio=f["both_s"])
    row("backend chosen (probe), s", "probe_s")
    row("first load nodes+jobs, s (x floor)", "first_s", ratio=f["both_s"])
    row("refresh, nothing changed, s", "refresh_s", ratio=f["both_s"])
    row("peak RSS, cockpit process, MB", "rss_self_mb", "{:.0f}")
    row("peak RSS, largest helper, MB", "rss_helper_mb", "{:.0f}")
    row("peak RSS, slurmrestd server, MB", "rss_server_mb", "{:.0f}")
    row("peak RSS, slurmctld, MB", "rss_ctld_mb", "{:.0f}")
    row("slurmctld RPCs: start + first load", "rpcs_first", "{:.0f}")
    row("slurmctld RPCs: refresh", "rpcs_refresh", "{:.0f}")
    row("UI: worst 5 ms tick during refresh, s", "stall_refresh_s", "{:.3f}")
    row("load average 1 min, before -> after", "load", "{}")
    for mode in ("pyslurm-down", "pyslurm-thread-down"):
        if mode in r:
            d = r[mode]
            print(f"controller not answering, {mode.removesuffix('-down')}: the fetch failed after "
                  f"{d['down_s']:.1f} s, worst 5 ms tick {d['stall_down_s']:.3f} s ({d['down_error'][:70]})")


if __name__ == "__main__":
    main()
