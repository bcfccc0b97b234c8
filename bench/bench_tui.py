"""Benchmark the TUI at scale: 100k jobs / 10k nodes, 1% of jobs changing per refresh.

    .venv/bin/python bench/bench_tui.py [--jobs 100000] [--nodes 10000] [--refreshes 5] [--no-datatable]

Data is produced in Slurm 24.11's JSON shape (records copied from the recorded
slurmrestd v0.0.41 samples in tests/data/slurm-json, trimmed to the fields the
parser reads, so the bench process does not carry ~3 KB per job) and parsed by
cockpit.backends.slurm_json in a worker thread, as a backend would. The app runs
headless (App.run_test). Prints figures; asserts nothing.

UI-thread time per refresh = time spent in the app's snapshot handler, the
table swap and the line rendering on the event-loop thread. The DataTable run
fills Textual's DataTable with the same rows and applies the same changes with
update_cell/add_row/remove_row (on the UI thread, as it must).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import random
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests/data/slurm-json"
sys.path.insert(0, str(ROOT))

from cockpit.backends.slurm_json import parse_squeue  # noqa: E402
from cockpit.backends.slurm_json_nodes import parse_scontrol_nodes  # noqa: E402
from cockpit.models import Partition, Topology  # noqa: E402

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


class BenchBackend:
    name, description = "bench", "bench: synthetic 24.11 JSON"

    def __init__(self, cj: ClusterJson) -> None:
        self.cj = cj
        self.nodes = parse_scontrol_nodes(cj.nodes_bytes)
        names = [n.name for n in self.nodes]
        self.parts = (Partition("train", tuple(n for i, n in enumerate(names) if i % 4)), Partition("debug", tuple(names[::4])))

    async def version(self):
        return "24.11.1"

    async def fetch_jobs(self):
        data = self.cj.jobs_bytes()
        return await asyncio.to_thread(parse_squeue, data)  # parsing off the UI thread

    async def fetch_nodes(self):
        return self.nodes

    async def fetch_partitions(self):
        return self.parts

    async def fetch_topology(self):
        return Topology()

    async def close(self):
        pass


class UiTimer:
    """Accumulates time spent in wrapped UI-thread functions."""

    def __init__(self) -> None:
        self.total = 0.0

    def wrap(self, obj, name):
        orig = getattr(obj, name)
        timer = self

        def wrapper(*a, **kw):
            # CPU time of the UI thread itself: waiting for the GIL held by a worker is not
            # UI work (it shows up in the key latency instead)
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


async def keys_during(pilot, seconds: float, lat: list) -> None:
    end = time.perf_counter() + seconds
    keys = ["down", "down", "pagedown", "up", "pageup"]
    i = 0
    while time.perf_counter() < end:
        t = time.perf_counter()
        await pilot.press(keys[i % len(keys)])
        lat.append(time.perf_counter() - t)
        i += 1
        await asyncio.sleep(0.02)


async def bench_vtable(cj: ClusterJson, refreshes: int) -> dict:
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.widgets import views, vtable

    ui = UiTimer()
    ui.wrap(CockpitApp, "on_snapshot_updated")
    ui.wrap(views.TableView, "_apply")
    ui.wrap(vtable.VTable, "render_line")
    t0 = time.perf_counter()
    app = CockpitApp(BenchBackend(cj), poll=False)
    out: dict = {}
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("5")
        table = app.main.views["jobs"].table
        await app.poller.poll_once()
        while table.row_count == 0:
            await pilot.pause(0.01)
        out["first_screen_s"] = time.perf_counter() - t0
        per, lat = [], []
        for _ in range(refreshes):
            cj.mutate(0.01)
            app.poller.refresh_now()
            before = ui.total
            builds = app.main.views["jobs"].builds
            task = asyncio.create_task(app.poller.poll_once())
            await keys_during(pilot, 0.1, lat)
            await task
            while app.main.views["jobs"].builds == builds:
                await keys_during(pilot, 0.05, lat)
            await pilot.pause(0.05)
            per.append(ui.total - before)
        out["ui_per_refresh_ms"] = statistics.mean(per) * 1000
        out["ui_per_refresh_max_ms"] = max(per) * 1000
        out["key_p50_ms"], out["key_p99_ms"] = pct(lat, 50) * 1000, pct(lat, 99) * 1000
        out["keys"] = len(lat)
    return out


async def bench_datatable(cj: ClusterJson, refreshes: int, sample: int) -> dict:
    from textual.app import App
    from textual.widgets import DataTable

    from cockpit.tui.rows import JOB_SCHEMA, job_row

    class DTApp(App):
        def compose(self):
            yield DataTable(id="dt")

    jobs = parse_squeue(cj.jobs_bytes())
    out: dict = {}
    t0 = time.perf_counter()
    app = DTApp()
    async with app.run_test(size=(160, 50)) as pilot:
        dt = app.query_one(DataTable)
        cols = [dt.add_column(c.label, key=str(i)) for i, c in enumerate(JOB_SCHEMA.columns)]
        dt.add_rows([job_row(j).cells for j in jobs])  # keys are generated; we keep our own map below
        await pilot.pause()
        out["first_screen_s"] = time.perf_counter() - t0
        keys = list(dt.rows)
        per, lat = [], []
        for _ in range(refreshes):
            cj.mutate(0.01)
            t = time.perf_counter()
            # the same amount of changes as the virtual table sees: 1% of rows, one cell each;
            # only ``sample`` are applied and the time is scaled, else a refresh takes minutes.
            n_changes = len(keys) // 100
            done = min(sample, n_changes)
            for k in random.sample(keys, done):
                dt.update_cell(k, cols[4], "▶ running")
            await pilot.pause()
            spent = time.perf_counter() - t
            per.append(spent * n_changes / max(done, 1))
            await keys_during(pilot, 0.3, lat)
        out["ui_per_refresh_ms"] = statistics.mean(per) * 1000
        out["ui_per_refresh_max_ms"] = max(per) * 1000
        out["key_p50_ms"], out["key_p99_ms"] = pct(lat, 50) * 1000, pct(lat, 99) * 1000
        out["keys"] = len(lat)
        out["note"] = f"refresh time extrapolated from {sample} update_cell calls to {len(keys) // 100}"
    return out


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def show(title: str, r: dict) -> None:
    print(f"\n{title}")
    print(f"  time to first screen      {r['first_screen_s']:8.2f} s     (target <= 3 s)")
    print(f"  UI-thread time / refresh  {r['ui_per_refresh_ms']:8.1f} ms    (max {r['ui_per_refresh_max_ms']:.1f}; target <= 30 ms)")
    print(f"  key-to-screen p50 / p99   {r['key_p50_ms']:8.1f} / {r['key_p99_ms']:.1f} ms  over {r['keys']} keys (target p99 <= 50 ms)")
    print(f"  peak RSS so far           {r['rss_mb']:8.0f} MB    (target <= 400 MB)")
    if r.get("note"):
        print(f"  note: {r['note']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--refreshes", type=int, default=5)
    ap.add_argument("--no-datatable", action="store_true")
    ap.add_argument("--datatable-sample", type=int, default=20, help="update_cell calls measured per refresh")
    a = ap.parse_args()
    t = time.perf_counter()
    cj = ClusterJson(a.jobs, a.nodes)
    print(f"built {a.jobs} jobs / {a.nodes} nodes as 24.11 JSON in {time.perf_counter() - t:.1f} s "
          f"({len(cj.jobs_bytes()) / 1e6:.0f} MB squeue, {len(cj.nodes_bytes) / 1e6:.0f} MB nodes)")
    t = time.perf_counter()
    parse_squeue(cj.jobs_bytes())
    print(f"parse_squeue of {a.jobs} jobs: {time.perf_counter() - t:.2f} s (worker thread in the app)")
    r = asyncio.run(bench_vtable(cj, a.refreshes))
    r["rss_mb"] = rss_mb()
    show("cockpit VTable (virtual, render_line)", r)
    if not a.no_datatable:
        d = asyncio.run(bench_datatable(cj, a.refreshes, a.datatable_sample))
        d["rss_mb"] = rss_mb()
        show("Textual DataTable, same data (RSS is the process peak, so includes the run above)", d)


if __name__ == "__main__":
    main()
