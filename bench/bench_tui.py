"""Benchmark the TUI at scale: 100k jobs / 10k nodes, 1% of jobs changing per refresh.

    .venv/bin/python bench/bench_tui.py [--jobs 100000] [--nodes 10000] [--refreshes 5]
                                        [--datatable-jobs N | --no-datatable] [--view gpus [--alternative]]

The real path end to end: a "cluster" process (this script with --serve) keeps
the jobs as Slurm 24.11 JSON records (copied from the recorded slurmrestd
v0.0.41 samples in tests/data/slurm-json, trimmed to the fields cockpit reads:
real records also carry job_resources, ~20 KB a job) and writes squeue/scontrol
outputs to files; fake ``squeue``/``sinfo``/``scontrol`` scripts cat them. The
app runs headless (App.run_test) on SlurmCliBackend + LocalRunner, so it reads
the output through a subprocess pipe and parses it in the parse worker process
(cockpit.backends.parseproc), exactly as against a live cluster. Prints figures;
asserts nothing.

Figures: time to first screen (first job rows drawn) and to the full load (keys
pressed all the while, their latency reported apart); the
UI thread's CPU time per refresh (everything on the event-loop thread: reading
the command output, receiving deltas, handlers, drawing; measured in refreshes
without key presses) and the handlers alone; key-to-screen latency p50/p99 of
keys pressed during refreshes; peak RSS of the app process and of each parse
worker (the cluster process is not counted). The DataTable run (in its own
process, for its own RSS) fills Textual's DataTable with the same rows, parsed
in-process, and applies the same 1% of changes with update_cell.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests/data/slurm-json"
sys.path.insert(0, str(ROOT))


JOB_KEYS = ("account", "array_job_id", "array_task_id", "array_task_string", "command", "current_working_directory",
            "end_time", "exit_code", "gres_detail", "het_job_id", "het_job_offset", "job_id", "job_state", "name",
            "node_count", "nodes", "partition", "standard_error", "standard_output", "start_time", "state_reason",
            "submit_time", "time_limit", "tres_per_node", "user_name", "cpus", "hold", "flags")


def _num(n):
    return {"set": True, "infinite": False, "number": n}


class ClusterJson:
    """Keeps one JSON chunk per job so a refresh re-serialises only the changed 1%."""

    def __init__(self, n_jobs: int, n_nodes: int, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        jdoc = json.loads((DATA / "slurm-24.11_data_parser-v0.0.41_restd-job-gpus-multi-nodes_slurmweb.json").read_bytes())
        ndoc = json.loads((DATA / "slurm-24.11_data_parser-v0.0.41_restd-nodes_slurmweb.json").read_bytes())
        self.job_tpl = {k: v for k, v in jdoc["jobs"][0].items() if k in JOB_KEYS}
        self.node_tpl = ndoc["nodes"][0]
        self.meta = jdoc["meta"]
        self.n_nodes, self.now = n_nodes, int(time.time())
        self.nodes_bytes = self._nodes_json(n_nodes)
        self.chunks = {jid: self._job(jid) for jid in range(1, n_jobs + 1)}
        self.next_id = n_jobs + 1

    def node_name(self, i: int) -> str:
        return f"gpu{i:05d}"

    def _nodes_json(self, n: int) -> bytes:
        recs = []
        for i in range(n):
            r = copy.deepcopy(self.node_tpl)
            r.update(name=self.node_name(i), hostname=self.node_name(i), state=["MIXED"] if i % 50 else ["IDLE", "DRAIN"],
                     gres="gpu:h100:8", gres_used="gpu:h100:8(IDX:0-7)" if i % 3 else "gpu:h100:4(IDX:0-3)",
                     partitions=["train" if i % 4 else "debug"], reason="" if i % 50 else "Xid 79", cpus=128, alloc_cpus=64)
            recs.append(r)
        return json.dumps({"nodes": recs, "meta": self.meta, "errors": [], "warnings": []}).encode()

    def _job(self, jid: int, state: str | None = None) -> bytes:
        r = dict(self.job_tpl)
        state = state or ("RUNNING" if self.rng.random() < 0.6 else "PENDING")
        node = self.node_name(jid % self.n_nodes)
        r.update(job_id=jid, name=f"train-{jid}", user_name=f"user{jid % 97}", account=f"acct{jid % 13}",
                 partition="train" if jid % 4 else "debug", job_state=[state], node_count=_num(1),
                 state_reason="None" if state == "RUNNING" else self.rng.choice(("Priority", "Resources", "QOSMaxGRESPerUser")),
                 nodes=node if state == "RUNNING" else "", start_time=_num(self.now - jid % 86400),
                 submit_time=_num(self.now - jid % 90000),
                 gres_detail=["gpu:h100:2(IDX:%d-%d)" % (jid % 4 * 2, jid % 4 * 2 + 1)] if state == "RUNNING" else [])
        return json.dumps(r).encode()

    def mutate(self, fraction: float = 0.01) -> None:
        """Change ``fraction`` of the jobs: a third finish, a third start, a third are new."""
        keys = self.rng.sample(list(self.chunks), int(len(self.chunks) * fraction))
        for i, k in enumerate(keys):
            if i % 3 == 0:
                del self.chunks[k]
                self.chunks[self.next_id] = self._job(self.next_id)
                self.next_id += 1
            else:
                self.chunks[k] = self._job(k, "RUNNING" if i % 3 == 1 else "COMPLETING")

    def jobs_bytes(self) -> bytes:
        return b'{"jobs": [' + b",".join(self.chunks.values()) + b'], "meta": ' + json.dumps(self.meta).encode() + b', "errors": [], "warnings": []}'


# -- the fake cluster: a separate process writing Slurm outputs to files ---------------
FAKE_BIN = {
    "squeue": '#!/bin/sh\nexec cat "$BENCH_DIR/squeue.json"\n',
    "sinfo": '#!/bin/sh\necho "slurm 24.11.1"\n',
    "scontrol": '#!/bin/sh\ncase "$2" in\n  node) exec cat "$BENCH_DIR/nodes.json" ;;\n'
                '  partition) exec cat "$BENCH_DIR/partitions.txt" ;;\n'
                '  *) echo "topology/none: no topology configured" >&2; exit 1 ;;\nesac\n',
}


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.rename(path)  # atomic: a running cat sees the old or the new file, whole


def serve(directory: Path, n_jobs: int, n_nodes: int) -> None:
    """The cluster process: write the outputs; on each input line, mutate 1% and rewrite."""
    cj = ClusterJson(n_jobs, n_nodes)
    _write(directory / "nodes.json", cj.nodes_bytes)
    names = [cj.node_name(i) for i in range(n_nodes)]
    parts = (f"PartitionName=train\n   Default=YES MaxTime=UNLIMITED State=UP\n   Nodes={','.join(n for i, n in enumerate(names) if i % 4)}\n\n"
             f"PartitionName=debug\n   MaxTime=01:00:00 State=UP\n   Nodes={','.join(names[::4])}\n")
    _write(directory / "partitions.txt", parts.encode())
    _write(directory / "squeue.json", cj.jobs_bytes())
    print(f"ready {os.path.getsize(directory / 'squeue.json')} {len(cj.nodes_bytes)}", flush=True)
    for _line in sys.stdin:
        cj.mutate(0.01)
        _write(directory / "squeue.json", cj.jobs_bytes())
        print("ok", flush=True)


class Cluster:
    """Starts the cluster process and the fake Slurm commands."""

    def __init__(self, n_jobs: int, n_nodes: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="cockpit-bench-"))
        self.bin = self.dir / "bin"
        self.bin.mkdir()
        for name, text in FAKE_BIN.items():
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        os.environ["BENCH_DIR"] = str(self.dir)
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(self.dir), "--jobs", str(n_jobs),
                                      "--nodes", str(n_nodes)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        _, jobs_size, nodes_size = self.proc.stdout.readline().split()
        self.jobs_mb, self.nodes_mb = int(jobs_size) / 1e6, int(nodes_size) / 1e6

    def mutate(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)
        for p in sorted(self.dir.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        self.dir.rmdir()


# -- the alternative GPU rows (--alternative): the form before cockpit/tui/gpurows.py ----
def _tuple_gpu_rows(node, holders, telemetry, width=200):
    """Each GPU a Row with its own cells and values tuples (as cockpit built them up
    to 2026-12-02): measured beside the GpuRow form, in its own process."""
    from cockpit.text import clean
    from cockpit.tui.gpurows import telemetry_cells
    from cockpit.tui.rows import Row, node_state_text

    rows, idx, busy_node = [], 0, node.gpu_alloc > 0
    state, name = node_state_text(node), clean(node.name, width)
    ids: dict[int, str] = {}
    for group in node.gpus:
        for _ in range(group.count):
            job = holders.get((node.name, idx))
            held = job is not None or idx in group.alloc_indexes
            if node.is_unavailable:
                note = f"on {node.display_state} node"
            elif not held and busy_node:
                note = "idle in alloc node"
            else:
                note = "" if held else "free"
            tcells, tvals = telemetry_cells(telemetry.get((node.name, idx)))
            jid = ids.setdefault(id(job), job.display_id) if job else ("?" if held else "")
            user = job.user if job else ""
            cells = (name, str(idx), clean(group.type or "", 6), state, jid, clean(user, width), note, *tcells)
            values = (node.name, idx, group.type or "", node.display_state, jid, user, note, *tvals)
            style = "drain" if node.is_unavailable else ("idlegpu" if note == "idle in alloc node" else ("alloc" if held else "idle"))
            rows.append(Row(f"{node.name}:{idx}", cells, values, style))
            idx += 1
    return rows


# -- measuring ---------------------------------------------------------------------------
BUILT = asyncio.Event()  # set by each TableView._apply (the UI thread): a table took a build
MEASURING = [True]  # off while the fake cluster rewrites its output between two refreshes (not the app's time)


class UiTimer:
    """Accumulates the UI thread's CPU time spent in wrapped functions (calls made
    by other threads, e.g. the job store's in cockpit.backends._deltafeed, are not counted)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.ui_thread = threading.get_ident()  # made where the app's event loop runs

    def wrap(self, obj, name):
        orig = getattr(obj, name)
        timer = self

        def wrapper(*a, **kw):
            if threading.get_ident() != timer.ui_thread or not MEASURING[0]:
                return orig(*a, **kw)
            # CPU time of the UI thread itself: waiting for the GIL is not UI work
            t = time.thread_time()
            try:
                return orig(*a, **kw)
            finally:
                timer.total += time.thread_time() - t

        setattr(obj, name, wrapper)


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


class KeyProbe:
    """Key-to-screen latency: from handing a key to the driver (as a terminal would)
    to the first frame written to the screen that shows its effect (the cursor moved)."""

    def __init__(self, app, state) -> None:
        self.app, self.state, self.frames = app, state, []
        orig = app._display

        def display(*a, **kw):
            result = orig(*a, **kw)
            self.frames.append((time.perf_counter(), self.state()))
            return result

        app._display = display

    async def press(self, key: str) -> float:
        from textual import events

        before, n = self.state(), len(self.frames)
        event = events.Key(key, None)
        event.set_sender(self.app)
        t = time.perf_counter()
        self.app._driver.send_message(event)
        while time.perf_counter() - t < 30:
            for when, state in self.frames[n:]:
                if state != before:
                    return when - t
            await asyncio.sleep(0.001)
        return float("inf")


async def keys_during(probe: KeyProbe, seconds: float, lat: list) -> None:
    end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < end:
        lat.append(await probe.press("down" if i % 2 == 0 else "up"))
        i += 1
        await asyncio.sleep(0.02)


def rss_now_mb() -> float:
    """This process's RSS now (VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int | None = None) -> float:
    """Peak RSS (VmHWM) of a process; this process by default."""
    if pid is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _worker_peaks(backend) -> dict[str, float]:
    """Peak RSS of each parse worker process, named by the kinds it parses."""
    kinds: dict[int, list[str]] = {}
    for kind, w in backend.workers.items():
        kinds.setdefault(w.pid, []).append(kind)
    return {"+".join(k): peak_rss_mb(pid) for pid, k in kinds.items()}


async def _refresh(app, cluster: Cluster, view) -> None:
    """One refresh: the poller fetches (1% of the jobs changed since the last), the jobs
    table swaps. The change itself (``cluster.mutate``: the fake cluster rewrites its
    whole squeue output, 1-2 s at 500k jobs) is made before, outside what is measured:
    it is the cluster's time, and the UI thread only idled through it."""
    builds = view.builds
    app.poller.refresh_now()
    await app.poller.poll_once()
    while view.builds == builds:  # woken by a table's build (BUILT), not a 5 ms poll: ~0.5 ms less a refresh
        BUILT.clear()
        await BUILT.wait()


async def _settle() -> None:
    """Let the screen update after a refresh (Textual repaints what is dirty within
    1/60 s). Not ``pilot.pause``: it posts a message to each of the ~37 widgets and
    waits for them all, ~2.5-3 ms of the UI thread that the app itself never spends,
    and the figures counted it in every refresh until 2026-12-05."""
    await asyncio.sleep(0.05)


VIEW_KEYS = {"jobs": "5", "gpus": "3", "nodes": "2"}


async def bench_vtable(cluster: Cluster, n_jobs: int, refreshes: int, view_kind: str = "jobs",
                       n_nodes: int = 0, alternative: bool = False) -> dict:
    from cockpit.runner import LocalRunner
    from cockpit.backends.slurm_cli import SlurmCliBackend
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.widgets import views, vtable

    if alternative:
        views.gpu_rows = _tuple_gpu_rows

    ui = UiTimer()
    ui.wrap(CockpitApp, "on_snapshot_updated")
    ui.wrap(views.TableView, "_apply")
    applied = views.TableView._apply

    def apply_and_tell(self, *a, **kw):
        try:
            return applied(self, *a, **kw)
        finally:
            BUILT.set()

    views.TableView._apply = apply_and_tell
    ui.wrap(vtable.VTable, "render_line")
    parts: dict[str, UiTimer] = {}
    if os.environ.get("BENCH_BREAKDOWN"):  # the UI thread's CPU per refresh, by where it went
        import textual.screen

        from cockpit.backends import slurm_delta
        from cockpit.core import poller

        for label, obj, name in (("screen repaint", textual.screen.Screen, "_compositor_refresh"),
                                 ("gc settle", poller, "settle_heap"), ("1 Hz tick", CockpitApp, "_tick"),
                                 ("store values", slurm_delta.DeltaStore, "values"),
                                 ("delta apply", slurm_delta.DeltaStore, "apply"),
                                 ("set_data", vtable.VTable, "set_data"),
                                 ("snapshot handler", CockpitApp, "on_snapshot_updated")):
            parts[label] = UiTimer()
            parts[label].wrap(obj, name)
    gc_pauses = _GcPauses() if parts else None
    stalls = _LoopStalls() if parts else None
    repaints = _Repaints() if parts else None
    out: dict = {}
    t0 = time.perf_counter()
    backend = SlurmCliBackend(LocalRunner(), bin_dir=str(cluster.bin), timeout=120)
    app = CockpitApp(backend, poll=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press(VIEW_KEYS[view_kind])
        view = app.main.views[view_kind]
        expected = {"jobs": n_jobs, "gpus": n_nodes * 8, "nodes": n_nodes}[view_kind]
        table = view.table
        probe = KeyProbe(app, lambda: table.cursor)
        first = asyncio.create_task(app.poller.poll_once())
        while table.row_count == 0:
            await asyncio.sleep(0.005)
        out["first_screen_s"] = time.perf_counter() - t0
        out["first_rows"] = table.row_count
        if stalls is not None:  # what follows is the first load's, not the app's start
            stalls.reset()
            gc_pauses.reset()
        # keys from the first screen to the last row, as someone scrolling while it loads
        load_lat: list[float] = []
        ended = None
        while table.row_count < expected:
            if first.done():  # the table's last build may still run; a load that ended short never fills it
                ended = ended or time.perf_counter()
                if time.perf_counter() - ended > 60:
                    errors = [f"{k}: {s.error}" for k, s in app.poller.status().kinds.items() if s.error]
                    raise SystemExit(f"the first load ended with {table.row_count:,} of {expected:,} rows "
                                     "60 s ago: " + ("; ".join(errors) or "no error reported"))
            await keys_during(probe, 0.05, load_lat)
        out["full_load_s"] = time.perf_counter() - t0
        out["load_key_p50_ms"], out["load_key_p99_ms"] = pct(load_lat, 50) * 1000, pct(load_lat, 99) * 1000
        out["load_keys"] = len(load_lat)
        if stalls is not None:
            stalls.show("the first load")
            stalls.reset()
            gc_pauses.show("the first load")
            gc_pauses.reset()
        await first
        del first  # a finished task keeps its result: the first snapshot (and old job versions)
        await pilot.pause(0.2)
        out["rss_loaded_mb"] = rss_now_mb()
        out["workers_loaded"] = _worker_peaks(backend)
        # the UI thread's CPU while nothing is fetched: the 1 Hz tick (header age, elapsed times)
        # and its repaints, what any second costs, refresh or not
        if repaints is not None:
            repaints.reset()
        c0, w0 = time.thread_time(), time.perf_counter()
        await asyncio.sleep(3.0)  # not pilot.pause: see _settle
        out["idle_ms_per_s"] = (time.thread_time() - c0) * 1000 / (time.perf_counter() - w0)
        if repaints is not None:
            repaints.show("3 s idle")
            repaints.reset()
        cpu, handlers, walls = [], [], []
        for timer in parts.values():
            timer.total = 0.0
        if gc_pauses is not None:
            gc_pauses.reset()
        prof = None
        if os.environ.get("BENCH_PROFILE"):  # where the UI thread's CPU goes, to this file
            import cProfile

            prof = cProfile.Profile(time.thread_time)  # its CPU, as "UI-thread CPU" counts it
            prof.enable()
        for _ in range(refreshes):  # without keys: the UI thread's own cost of a refresh
            MEASURING[0] = False
            await asyncio.to_thread(cluster.mutate)
            MEASURING[0] = True
            before, c0, w0 = ui.total, time.thread_time(), time.perf_counter()
            await _refresh(app, cluster, view)
            await _settle()
            cpu.append(time.thread_time() - c0)
            walls.append(time.perf_counter() - w0)
            handlers.append(ui.total - before)
        if prof is not None:
            prof.disable()
            prof.dump_stats(os.environ["BENCH_PROFILE"])
        if parts:
            repaints.show(f"the {refreshes} refreshes without keys")
            print("UI-thread CPU per refresh by part (first pass, no keys):")
            for label, timer in parts.items():
                print(f"  {label:20s} {timer.total / refreshes * 1000:6.1f} ms")
            print("cyclic GC collections per refresh, any thread (all threads wait): " + ", ".join(
                f"gen {g}: {n / refreshes:.1f} x, {t / refreshes * 1000:.1f} ms (longest {m * 1000:.1f})"
                for g, (n, t, m) in sorted(gc_pauses.by_gen.items())))
            import collections
            import gc as _gc

            kinds = collections.Counter(type(o).__name__ for o in _gc.get_objects())
            print(f"objects the cyclic GC tracks outside the frozen ones: {sum(kinds.values()):,}, most: "
                  + ", ".join(f"{k} {n:,}" for k, n in kinds.most_common(8)))
            _gc_census("first pass done")
        if stalls is not None:
            stalls.reset()
            gc_pauses.reset()
        lat: list[float] = []
        for _ in range(refreshes):  # with keys pressed while the refresh runs
            await asyncio.to_thread(cluster.mutate)
            task = asyncio.create_task(_refresh(app, cluster, view))
            while not task.done():
                await keys_during(probe, 0.05, lat)
            await task
        del task
        if stalls is not None:
            stalls.show()
            gc_pauses.show("them")
        out["ui_cpu_ms"], out["ui_cpu_max_ms"] = statistics.mean(cpu) * 1000, max(cpu) * 1000
        out["ui_cpu_median_ms"] = statistics.median(cpu) * 1000
        out["ui_cpu_each_ms"] = [c * 1000 for c in cpu]
        out["refresh_wall_s"] = statistics.mean(walls)
        out["ui_per_refresh_ms"], out["ui_per_refresh_max_ms"] = statistics.mean(handlers) * 1000, max(handlers) * 1000
        out["key_p50_ms"], out["key_p99_ms"] = pct(lat, 50) * 1000, pct(lat, 99) * 1000
        out["keys"] = len(lat)
        out["workers"] = _worker_peaks(backend)
        out["rows"] = table.row_count
        out["full_gc_ms"] = _full_gc_ms()
        out["rss_end_mb"] = rss_now_mb()
    await backend.close()
    out["rss_mb"] = peak_rss_mb()
    return out


class _LoopStalls:
    """The event loop's longest steps (one callback or task step: no key is read meanwhile)."""

    def __init__(self) -> None:
        import asyncio.events

        self.steps: list[tuple[float, float, str]] = []  # (wall, the UI thread's CPU, what)
        orig = asyncio.events.Handle._run
        me = self

        def _run(handle):
            t, c = time.perf_counter(), time.thread_time()
            try:
                return orig(handle)
            finally:
                took = time.perf_counter() - t
                if took > 0.02:
                    cpu = time.thread_time() - c  # the rest of ``took``: waiting (the GIL, another thread's GC)
                    cb = handle._callback
                    task = getattr(cb, "__self__", None)
                    coro = task.get_coro() if hasattr(task, "get_coro") else None
                    what = getattr(coro, "__qualname__", None) or repr(cb)[:80]
                    frames = []
                    while coro is not None and hasattr(coro, "cr_frame"):  # where it was awaiting
                        if coro.cr_frame is not None:
                            frames.append(f"{coro.cr_code.co_name}:{coro.cr_frame.f_lineno}")
                        coro = coro.cr_await
                    me.steps.append((took, cpu, what + (" @ " + " > ".join(frames[-4:]) if frames else "")))

        asyncio.events.Handle._run = _run

    def reset(self) -> None:
        self.steps = []

    def show(self, during: str = "the refreshes with keys") -> None:
        print(f"event-loop steps over 20 ms during {during}: {len(self.steps)} (wall, of it the UI thread's CPU)")
        for took, cpu, what in sorted(self.steps, reverse=True)[:8]:
            print(f"  {took * 1000:6.1f} ms  {cpu * 1000:5.1f} ms  {what}")


def _first_type(o) -> str:
    """What a list or dict holds, by its first entry's type (the census names containers by it).
    Not a tuple's: one still being filled (in another thread) holds NULLs, and reading one crashes."""
    if not isinstance(o, (list, dict)):
        return ""
    try:
        first = next(iter(o.items() if isinstance(o, dict) else o))
    except StopIteration:
        return ""
    if isinstance(o, dict):
        return f" ({type(first[0]).__name__}: {type(first[1]).__name__})"
    return f" ({type(first).__name__})"


class _Repaints:
    """The screen's updates (Textual's Screen._on_timer_update: a layout when one is due,
    then the dirty widgets drawn): how many, their UI-thread CPU, and which widgets."""

    def __init__(self) -> None:
        import collections

        import textual.screen

        self.reset()
        orig = textual.screen.Screen._on_timer_update
        me = self

        def update(screen):
            dirty = collections.Counter(type(w).__name__ + (f"#{w.id}" if w.id else "") for w in screen._dirty_widgets)
            layout = screen._layout_required
            c = time.thread_time()
            try:
                return orig(screen)
            finally:
                took = time.thread_time() - c
                if threading.get_ident() == me.ui_thread and MEASURING[0]:
                    me.n += 1
                    me.cpu += took
                    me.layouts += bool(layout)
                    me.layout_cpu += took if layout else 0.0
                    for name in dirty:
                        me.by_widget[name] += took / max(1, len(dirty))

        textual.screen.Screen._on_timer_update = update
        self.ui_thread = threading.get_ident()

    def reset(self) -> None:
        import collections

        self.n, self.cpu, self.layouts, self.layout_cpu = 0, 0.0, 0, 0.0
        self.by_widget: collections.Counter = collections.Counter()

    def show(self, during: str) -> None:
        print(f"screen updates during {during}: {self.n}, {self.cpu * 1000:.1f} ms of UI-thread CPU; "
              f"{self.layouts} with a layout ({self.layout_cpu * 1000:.1f} ms); by dirty widget (a share of each "
              "update's CPU): " + ", ".join(f"{k} {v * 1000:.1f}" for k, v in self.by_widget.most_common(6)))


class _GcPauses:
    """Time spent in the cyclic GC's collections, by generation (gc.callbacks)."""

    def __init__(self) -> None:
        import gc

        self.by_gen: dict[int, tuple[int, float, float]] = {}
        self.slow: list[tuple[float, int, str]] = []  # collections over 10 ms: (took, generation, biggest)
        self._start, self._big = 0.0, ""
        self.census = bool(os.environ.get("BENCH_GC_CENSUS"))
        gc.callbacks.append(self._cb)

    def reset(self) -> None:
        self.by_gen = {}
        self.slow: list[tuple[float, int, str]] = []

    def show(self, during: str) -> None:
        print(f"cyclic GC collections during {during}: " + ", ".join(
            f"gen {g}: {n} x, {t * 1000:.1f} ms, longest {m * 1000:.1f} ms"
            for g, (n, t, m) in sorted(self.by_gen.items())))
        for took, gen, big in sorted(self.slow, reverse=True)[:5] if self.census else ():
            print(f"  gen {gen} collection {took * 1000:.1f} ms; its biggest containers: {big or 'none'}")

    def _cb(self, phase: str, info: dict) -> None:
        import gc

        if phase == "start":
            if not self.census:
                self._start = time.perf_counter()
                return
            # what this collection walks: its generations' biggest containers. The census
            # costs 3-40 ms a collection: outside the pause measured here, but inside every
            # other figure (UI CPU, the thaw), so only with BENCH_GC_CENSUS=1.
            gens = range(info["generation"] + 1)
            big = sorted(((len(o), type(o).__name__, _first_type(o)) for g in gens for o in gc.get_objects(g)
                          if isinstance(o, (tuple, list, dict, set, frozenset))), reverse=True)[:3]
            self._big = ", ".join(f"{k} of {n:,}{f}" for n, k, f in big)
            self._start = time.perf_counter()
            return
        took = time.perf_counter() - self._start
        if not MEASURING[0]:
            return
        n, total, longest = self.by_gen.get(info["generation"], (0, 0.0, 0.0))
        self.by_gen[info["generation"]] = (n + 1, total + took, max(longest, took))
        if took > 0.01:
            self.slow.append((took, info["generation"], self._big))


def _full_gc_ms() -> float:
    """The UI thread's pause for the poller's periodic thaw and full collection
    (settle_heap when its thaw is due), forced now."""
    from cockpit.core import poller

    poller.reset_heap_settling()  # nobody at the keys: the thaw is not deferred
    poller._next_thaw = 0.0
    breakdown = bool(os.environ.get("BENCH_BREAKDOWN"))
    if breakdown:
        _gc_census("before the forced thaw")
    t = time.perf_counter()
    poller.settle_heap()
    took = (time.perf_counter() - t) * 1000
    if breakdown:
        import gc

        _gc_census("after it")
        t = time.perf_counter()
        gc.collect()  # what is left to walk: the floor of every later thaw
        print(f"  a second full collection at once: {(time.perf_counter() - t) * 1000:.1f} ms")
    return took


def _gc_census(label: str) -> None:
    """What a thaw walks (BENCH_BREAKDOWN): every tracked object outside the program's
    frozen heap (cockpit.heap.freeze_program: never walked again, so not listed), the
    references they hold by type, and the containers of 5,000 entries or more."""
    import collections
    import gc

    frozen = gc.get_freeze_count()
    objs = gc.get_objects()
    kinds = collections.Counter(type(o).__name__ for o in objs)
    refs = collections.Counter()
    big = collections.Counter()
    held = {}  # id of a big container -> where it is held (a dict's key: an attribute, mostly)
    for o in objs:
        refs[type(o).__name__] += len(gc.get_referents(o))
        if isinstance(o, (tuple, list, dict, set, frozenset)) and len(o) >= 5000:
            held[id(o)] = "?"
    for o in objs:
        if type(o) is dict and held:
            for k, v in o.items():
                if id(v) in held and isinstance(k, str):
                    held[id(v)] = k
    for o in objs:
        if id(o) in held:
            if held[id(o)] == "?":  # held by an object with slots, or a tuple: its type
                owners = [r for r in gc.get_referrers(o) if r is not objs]  # not the frozen program's
                sample = next(iter(o.items() if isinstance(o, dict) else o))
                held[id(o)] = ("in " + "/".join(sorted({type(r).__qualname__ for r in owners}))[:60]
                               + f", e.g. {ascii(sample)[:60]}")
            big[f"{type(o).__name__} of {len(o):,} ({held[id(o)]})"] += 1
    strips = _strips_held(objs)
    del objs
    print(f"{label}: a thaw walks {sum(kinds.values()):,} objects (and not the program's {frozen:,} frozen) holding "
          f"{sum(refs.values()):,} references; most objects: " + ", ".join(f"{k} {n:,}" for k, n in kinds.most_common(6)))
    print("  most references: " + ", ".join(f"{k} {n:,}" for k, n in refs.most_common(6))
          + "; containers of 5,000+: " + (", ".join(f"{n} {k}" for k, n in big.most_common(8)) or "none"))
    print(f"  Textual Strips: {strips[0]:,} (each with 7 FIFOCaches); {strips[1]:,} of them the VTables' drawn "
          f"lines and their cached crops, over {strips[2]} tables holding {strips[3]:,} lines")


def _strips_held(objs) -> tuple[int, int, int, int]:
    """Strips alive; those reachable from the VTables' drawn lines (a Strip's FIFOCaches
    keep its crops, each a Strip with its own caches); the tables; their drawn lines."""
    from textual.strip import Strip

    from cockpit.tui.widgets.vtable import VTable

    total = sum(1 for o in objs if type(o) is Strip)
    tables = [o for o in objs if isinstance(o, VTable)]
    seen: set[int] = set()
    todo = [d[3] for t in tables for d in t._drawn.values()]
    while todo:
        st = todo.pop()
        if id(st) in seen:
            continue
        seen.add(id(st))
        for name in ("_divide_cache", "_crop_cache", "_style_cache", "_filter_cache", "_line_length_cache",
                     "_crop_extend_cache", "_offsets_cache"):
            cache = getattr(st, name, None)
            for v in getattr(cache, "_cache", {}).values():
                todo.extend(v if isinstance(v, list) else [v] if isinstance(v, Strip) else [])
    return total, len(seen), len(tables), sum(len(t._drawn) for t in tables)


async def bench_datatable(cluster: Cluster, refreshes: int, sample: int) -> dict:
    from textual.app import App
    from textual.widgets import DataTable

    from cockpit.backends.slurm_json import parse_squeue
    from cockpit.tui.rows import JOB_SCHEMA, job_row

    class DTApp(App):
        def compose(self):
            yield DataTable(id="dt")

    out: dict = {}
    t0 = time.perf_counter()
    app = DTApp()
    async with app.run_test(size=(160, 50)) as pilot:
        jobs = await asyncio.to_thread(parse_squeue, (cluster.dir / "squeue.json").read_bytes())
        dt = app.query_one(DataTable)
        cols = [dt.add_column(c.label, key=str(i)) for i, c in enumerate(JOB_SCHEMA.columns)]
        dt.add_rows([job_row(j).cells for j in jobs])
        del jobs
        await pilot.pause()
        out["first_screen_s"] = out["full_load_s"] = time.perf_counter() - t0
        keys = list(dt.rows)
        per, lat = [], []
        dt.focus()
        await pilot.pause()
        probe = KeyProbe(app, lambda: dt.cursor_coordinate)
        for _ in range(refreshes):
            t = time.perf_counter()
            # the same amount of changes as the virtual table sees: 1% of rows, one cell each;
            # only ``sample`` are applied and the time is scaled, else a refresh takes minutes.
            n_changes = len(keys) // 100
            done = min(sample, n_changes)
            for k in random.sample(keys, done):
                dt.update_cell(k, cols[4], "▶ running")
            await pilot.pause()
            per.append((time.perf_counter() - t) * n_changes / max(done, 1))
            await keys_during(probe, 0.3, lat)
        out["ui_cpu_ms"] = out["ui_per_refresh_ms"] = statistics.mean(per) * 1000
        out["ui_cpu_max_ms"] = out["ui_per_refresh_max_ms"] = max(per) * 1000
        out["key_p50_ms"], out["key_p99_ms"] = pct(lat, 50) * 1000, pct(lat, 99) * 1000
        out["keys"] = len(lat)
        out["rows"] = len(keys)
        out["note"] = (f"refresh time extrapolated from {sample} update_cell calls to {n_changes}; "
                       "parsing in-process (no worker); keys measured between refreshes")
    out["rss_mb"] = peak_rss_mb()
    out["workers"] = {}
    return out


def show(title: str, r: dict) -> None:
    print(f"\n{title}")
    print(f"  rows                        {r['rows']}")
    print(f"  time to first screen        {r['first_screen_s']:8.2f} s   (target <= 3 s)"
          + (f"  [{r['first_rows']} rows; all rows at {r['full_load_s']:.2f} s]" if "first_rows" in r else ""))
    median = f"median {r['ui_cpu_median_ms']:.1f}, " if "ui_cpu_median_ms" in r else ""
    print(f"  UI-thread CPU / refresh     {r['ui_cpu_ms']:8.1f} ms  ({median}max {r['ui_cpu_max_ms']:.1f}; target <= 30 ms)")
    if "ui_cpu_each_ms" in r:
        print("    each refresh, in order     " + ", ".join(f"{c:.1f}" for c in r["ui_cpu_each_ms"]) + " ms")
    print(f"    of which handlers+drawing {r['ui_per_refresh_ms']:8.1f} ms  (max {r['ui_per_refresh_max_ms']:.1f})")
    if "idle_ms_per_s" in r:
        idle = r["idle_ms_per_s"] * r["refresh_wall_s"]
        print(f"    a refresh took {r['refresh_wall_s']:.1f} s (fetch and parse off the UI thread); idle, the UI "
              f"thread costs {r['idle_ms_per_s']:.1f} ms/s (1 Hz tick, repaints): {idle:.1f} ms of the "
              f"refresh's, {r['ui_cpu_ms'] - idle:.1f} ms beyond")
    print(f"  key-to-screen p50 / p99     {r['key_p50_ms']:8.1f} / {r['key_p99_ms']:.1f} ms over {r['keys']} keys "
          "(target p99 <= 50 ms)")
    if "load_key_p99_ms" in r:
        print(f"    during the first load     {r['load_key_p50_ms']:8.1f} / {r['load_key_p99_ms']:.1f} ms over "
              f"{r['load_keys']} keys (pressed from the first screen to the last row)")
    if "full_gc_ms" in r:
        print(f"  full GC (thaw) pause        {r['full_gc_ms']:8.1f} ms  (settle_heap's thaw, forced; no key is "
              "answered meanwhile)")
    workers = r.get("workers") or {}
    total = r["rss_mb"] + sum(workers.values())
    parts = "".join(f", {k} worker {v:.0f} MB" for k, v in workers.items())
    print(f"  peak RSS                    {r['rss_mb']:8.0f} MB  (app process{parts}; total {total:.0f} MB; "
          "target <= 400 MB)")
    if "rss_loaded_mb" in r:
        print(f"    app RSS now               {r['rss_loaded_mb']:8.0f} MB after the first load, "
              f"{r['rss_end_mb']:.0f} MB after the refreshes")
        print("    worker peaks after the first load: "
              + ", ".join(f"{k} {v:.0f} MB" for k, v in r.get("workers_loaded", {}).items()))
    if r.get("note"):
        print(f"  note: {r['note']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--refreshes", type=int, default=5)
    ap.add_argument("--no-datatable", action="store_true")
    ap.add_argument("--young-threshold", type=int, default=0,
                    help="also run the jobs view with this many allocations between young GC collections "
                         "(the alternative to cockpit's poller.YOUNG_THRESHOLD; Python's default is 700)")
    ap.add_argument("--switch-interval", type=float, default=0,
                    help="also run the jobs view with this GIL switch interval in ms (the alternative to "
                         "cockpit.heap.UI_SWITCH_INTERVAL, 2 ms; Python's default is 5)")
    ap.add_argument("--view", choices=tuple(VIEW_KEYS), default="jobs",
                    help="the view shown while refreshing (default jobs; gpus: 8 rows a node)")
    ap.add_argument("--alternative", action="store_true",
                    help="with --view gpus: also run the GPU rows as before (a Row of tuples each), in its own process")
    ap.add_argument("--datatable-jobs", type=int, default=0, help="jobs for the DataTable run (default: --jobs)")
    ap.add_argument("--datatable-sample", type=int, default=20, help="update_cell calls measured per refresh")
    ap.add_argument("--only", choices=("vtable", "vtable-alternative", "datatable"), help=argparse.SUPPRESS)
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        return serve(a.serve, a.jobs, a.nodes)
    if a.only is None:
        t = time.perf_counter()
        cmd = [sys.executable, __file__, "--jobs", str(a.jobs), "--nodes", str(a.nodes), "--refreshes", str(a.refreshes)]
        subprocess.run([*cmd, "--view", a.view, "--only", "vtable"], check=True)  # each run in its own process: its own peak RSS
        if a.alternative and a.view == "gpus":
            subprocess.run([*cmd, "--view", a.view, "--only", "vtable-alternative"], check=True)
        if a.young_threshold:
            subprocess.run([*cmd, "--view", a.view, "--only", "vtable", "--young-threshold", str(a.young_threshold)],
                           check=True)
        if a.switch_interval:
            subprocess.run([*cmd, "--view", a.view, "--only", "vtable", "--switch-interval", str(a.switch_interval)],
                           check=True)
        if not a.no_datatable:
            n = a.datatable_jobs or a.jobs
            subprocess.run([sys.executable, __file__, "--jobs", str(n), "--nodes", str(a.nodes),
                            "--refreshes", str(a.refreshes), "--datatable-sample", str(a.datatable_sample),
                            "--only", "datatable"], check=True)
        print(f"\n(bench wall time {time.perf_counter() - t:.0f} s)")
        return
    t = time.perf_counter()
    cluster = Cluster(a.jobs, a.nodes)
    print(f"cluster: {a.jobs} jobs / {a.nodes} nodes as 24.11 JSON ({cluster.jobs_mb:.0f} MB squeue, "
          f"{cluster.nodes_mb:.0f} MB scontrol nodes), built in {time.perf_counter() - t:.1f} s by a separate process")
    try:
        if a.only.startswith("vtable"):
            alt = a.only == "vtable-alternative"
            label = ("(alternative) GPU rows as before: a Row of cells and values tuples each" if alt else
                     "cockpit VTable (virtual, render_line; parse worker process, deltas)")
            if a.young_threshold:
                from cockpit.core import poller

                poller.YOUNG_THRESHOLD = a.young_threshold
                label = f"(alternative) the same, young GC collections every {a.young_threshold} allocations"
            if a.switch_interval:
                from cockpit import heap

                heap.UI_SWITCH_INTERVAL = a.switch_interval / 1000
                label = f"(alternative) the same, a GIL switch interval of {a.switch_interval:g} ms"
            show(label,
                 asyncio.run(bench_vtable(cluster, a.jobs, a.refreshes, a.view, a.nodes, alt)))
        else:
            show(f"Textual DataTable, same data ({a.jobs} jobs)",
                 asyncio.run(bench_datatable(cluster, a.refreshes, a.datatable_sample)))
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
