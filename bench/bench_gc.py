"""What the cyclic garbage collector costs the UI process at a queue's size, side by side.

    .venv/bin/python bench/bench_gc.py [--jobs 500000] [--runs 3]

The jobs come the way the app gets them: bench_tui's Slurm 24.11 JSON records,
parsed by the parse worker's differ (cockpit.backends.slurm_delta), pickled in
Deltas and unpickled into the DeltaStore, then turned into the Jobs view's rows
(RowCache + job_row). Two forms of the same data are measured in one run:

* cockpit: Job, JobGpus, Row and JobExtras are msgspec Structs with
  ``gc=False`` (never tracked by the cyclic GC), state-flag frozensets shared;
* alternative: the same records as frozen slots dataclasses (what they were
  until 2026-12-02), one frozenset per job as pickle delivers it.

Figures: objects the GC tracks per job, one full collection (``gc.collect()``,
what settle_heap's periodic thaw runs), one youngest-generation collection after
a 1% refresh's new objects, and the bytes per job the records and rows hold
(RSS growth). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tui import ClusterJson  # noqa: E402

from cockpit.backends import slurm_delta  # noqa: E402
from cockpit.models import Job, JobGpus, record_fields  # noqa: E402
from cockpit.tui import rows as R  # noqa: E402


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _as_dataclass(cls: type) -> type:
    """A frozen slots dataclass with the fields, defaults and properties of msgspec Struct ``cls``."""
    defaults = dict(zip(cls.__struct_fields__[len(cls.__struct_fields__) - len(cls.__struct_defaults__):],
                        cls.__struct_defaults__))
    spec = [(n, Any, dataclasses.field(default=defaults[n])) if n in defaults else (n, Any)
            for n in record_fields(cls)]
    props = {k: v for k, v in vars(cls).items() if isinstance(v, property)}  # gpu_count, display_id ...
    return dataclasses.make_dataclass(cls.__name__ + "DC", spec, frozen=True, slots=True, namespace=props)


JobDC, GpusDC, RowDC = _as_dataclass(Job), _as_dataclass(JobGpus), _as_dataclass(R.Row)


def _to_dataclasses(jobs: tuple[Job, ...]) -> list[Any]:
    get = [*record_fields(Job)]
    out = []
    for j in jobs:
        v = {n: getattr(j, n) for n in get}
        v["gpus"] = tuple(GpusDC(g.node, g.type, g.count, g.indexes) for g in j.gpus)
        v["state_flags"] = frozenset(j.state_flags)  # one per job, as unpickling gave it
        out.append(JobDC(**v))
    return out


def _row_dc(job: Any) -> Any:
    r = R.job_row(job)
    return RowDC(r.key, r.cells, r.values, r.style, r.extra)


def _timed_full() -> float:
    start = time.perf_counter()
    gc.collect()
    return (time.perf_counter() - start) * 1000


def _unpickled(blobs: list[bytes]) -> tuple[Job, ...]:
    store = slurm_delta.store_for("jobs")
    for b in blobs:
        store.apply(pickle.loads(b))
    return store.values()


def measure(label: str, make_jobs: Any, build: Any, runs: int) -> dict[str, float]:
    gc.collect()
    base_objs, base_rss = len(gc.get_objects()), _rss_mb()
    jobs = make_jobs()
    store = {j.job_id: j for j in jobs}
    cache = R.RowCache(build)
    rows = cache.rows(list(store.values()), lambda j: j.job_id)
    del jobs
    gc.collect()
    n = len(store)
    tracked = (len(gc.get_objects()) - base_objs) / n
    per_job = (_rss_mb() - base_rss) * 2**20 / n
    full = statistics.median(_timed_full() for _ in range(runs))
    young = []
    for _ in range(runs):  # a 1% refresh: new rows for 1% of the jobs, then a generation-0 collection
        gc.collect()
        changed = list(store.values())[: n // 100]
        fresh = [build(j) for j in changed]
        start = time.perf_counter()
        gc.collect(0)
        young.append((time.perf_counter() - start) * 1000)
        del fresh
    out = {"tracked": tracked, "full": full, "young": statistics.median(young), "bytes": per_job}
    del rows, cache, store
    gc.collect()
    print(f"  {label:<52} {tracked:8.2f} {full:10.0f} {out['young']:10.2f} {per_job:10.0f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--form", choices=("alternative", "cockpit"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.form is None:  # each form in a fresh process: RSS a form freed would flatter the next
        print(f"{args.jobs:,} jobs, Python {sys.version.split()[0]}, medians of {args.runs}")
        print(f"  {'form':<52} {'tracked/job':>8} {'full GC ms':>10} {'gen0 ms':>10} {'B/job':>10}", flush=True)
        for form in ("alternative", "cockpit"):
            subprocess.run([sys.executable, __file__, "--jobs", str(args.jobs), "--runs", str(args.runs),
                            "--form", form], check=True)
        return
    cj = ClusterJson(args.jobs, max(args.jobs // 25, 100))
    differ = slurm_delta.JobsDiffer()
    blobs = [slurm_delta.dumps(d) for d in differ.feed(cj.jobs_bytes(), reset=True)]
    del cj, differ
    if args.form == "alternative":
        measure("alternative: frozen slots dataclasses", lambda: _to_dataclasses(_unpickled(blobs)), _row_dc, args.runs)
    else:
        measure("cockpit: msgspec Structs, gc=False", lambda: list(_unpickled(blobs)), R.job_row, args.runs)


if __name__ == "__main__":
    main()
