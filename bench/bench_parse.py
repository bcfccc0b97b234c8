"""How long does parse_squeue take on 100k jobs in the Slurm 24.11 shape?

The job records are the real 24.11 records from tests/data/slurm-json (a running
2-node GPU job and a pending job), copied with only ids, names, users and node
lists varied. Prints sizes and wall times; asserts nothing.

    .venv/bin/python bench/bench_parse.py [--jobs 100000] [--repeat 3] [--stdlib]
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

from cockpit.backends import slurm_json_fast
from cockpit.backends.slurm_json import parse_squeue
from cockpit.backends.slurm_json_common import load_json

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "slurm-json"
RUNNING = "slurm-24.11_data_parser-v0.0.41_restd-job-gpus-multi-nodes_slurmweb.json"
PENDING = "slurm-24.11_data_parser-v0.0.41_restd-job-pending_slurmweb.json"


def build(n_jobs: int, n_nodes: int = 4096) -> bytes:
    """A squeue --json body with n_jobs records: 70% running, 30% pending."""
    run_doc = json.loads((DATA / RUNNING).read_bytes())
    pend = json.loads((DATA / PENDING).read_bytes())["jobs"][0]
    run = run_doc["jobs"][0]
    jobs = []
    for i in range(n_jobs):
        if i % 10 < 7:
            j = copy.copy(run)
            first = (i * 2) % (n_nodes - 1) + 1
            j["nodes"] = f"gpu[{first:04d}-{first + 1:04d}]"
            j["job_resources"] = run["job_resources"]  # shared: only parsing cost matters
        else:
            j = copy.copy(pend)
        j["job_id"] = 1_000_000 + i
        j["name"] = f"train-{i % 977}"
        j["user_name"] = f"user{i % 211}"
        jobs.append(j)
    run_doc["jobs"] = jobs
    return json.dumps(run_doc).encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stdlib", action="store_true", help="also time json.loads on the same bytes")
    args = ap.parse_args()

    t0 = time.perf_counter()
    data = build(args.jobs)
    print(f"generated {args.jobs} jobs, {len(data) / 1e6:.1f} MB of JSON in "
          f"{time.perf_counter() - t0:.2f} s")
    decoder = "msgspec" if slurm_json_fast.available() else "json (msgspec not installed)"
    for r in range(args.repeat):
        t0 = time.perf_counter()
        jobs = parse_squeue(data)
        t_all = time.perf_counter() - t0
        gpus = sum(j.gpu_count for j in jobs)
        print(f"run {r + 1}: parse_squeue {t_all:.2f} s ({1e6 * t_all / len(jobs):.1f} us/job, "
              f"decoder {decoder}), {len(jobs)} jobs, {gpus} GPUs")
    if args.stdlib:
        t0 = time.perf_counter()
        load_json(data, "bench")
        print(f"for comparison: json.loads alone {time.perf_counter() - t0:.2f} s")

if __name__ == "__main__":
    main()
