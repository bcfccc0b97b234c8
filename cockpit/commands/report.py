"""``cockpit report utilization [--since 7d] [--partition P] [--account A] [--json|--csv]``:
GPU-hours allocated, idle inside allocations, unallocated and drained/down, per
partition and account, with the trend per day (per hour for windows under two
days), and where each figure came from. Judged against the 70-80% that clusters
with good scheduling reach, and the 50% below which renting beats owning.

Exit codes: 0 printed; 1 printed, but accounting records were left out (named on
stderr and in ``warnings``); 2 bad input; 3 no accounting (one line) or Slurm could
not be asked. JSON and CSV columns: docs/accounting-json.md.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from typing import Any

from cockpit.errors import EXIT_FAILED, EXIT_OK, UsageError

CSV_FIELDS = ("scope", "name", "start", "end", "capacity_gpu_h", "allocated_gpu_h", "idle_in_alloc_gpu_h",
              "drained_gpu_h", "unallocated_gpu_h", "utilization_pct", "jobs")


def register(sub) -> None:
    from cockpit.commands.history import add_window_flags

    p = sub.add_parser("report", help="reports from accounting: utilization")
    rsub = p.add_subparsers(dest="report", metavar="REPORT", required=True)
    u = rsub.add_parser("utilization", aliases=["utilisation"],
                        help="GPU-hours allocated, idle in allocations, unallocated, drained; per partition and account")
    add_window_flags(u, "7d")
    u.add_argument("--partition", metavar="P", help="only this partition")
    u.add_argument("--account", metavar="A", help="only this account")
    out = u.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object (docs/accounting-json.md)")
    out.add_argument("--csv", action="store_true", help="one CSV row per scope and per period")
    u.set_defaults(func=run_utilization)


def verdict(pct: float | None) -> str:
    from cockpit.core.utilization import GOOD_BAND, RENT_LINE

    if pct is None:
        return ""
    if pct < RENT_LINE:
        return f"below {RENT_LINE:g}%: at this rate renting beats owning"
    if pct < GOOD_BAND[0]:
        return f"under the {GOOD_BAND[0]:g}-{GOOD_BAND[1]:g}% that well-scheduled clusters reach"
    if pct <= GOOD_BAND[1]:
        return f"inside the {GOOD_BAND[0]:g}-{GOOD_BAND[1]:g}% band of well-scheduled clusters"
    return f"above the {GOOD_BAND[0]:g}-{GOOD_BAND[1]:g}% band"


def _h(v: float | None) -> str:
    return "not measured" if v is None else f"{v:,.1f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}%"


def report_lines(u) -> list[str]:
    from cockpit.commands._acct_out import clock, cell, short_clock, span, table

    head = u.rows[0]
    out = [f"GPU utilization {clock(u.start)} - {clock(u.end)} ({span(u.end - u.start)}), {u.jobs} job(s) with GPUs"]
    out.append(f"  {cell(head.name)}: {_pct(head.utilization)} allocated" + (f" ({verdict(head.utilization)})" if head.utilization is not None else ""))
    rows = [(r.scope, r.name, _h(r.capacity) if r.capacity is not None else "-", _h(r.allocated),
             _h(r.idle_in_alloc), _h(r.drained) if r.capacity is not None else "-",
             _h(r.unallocated) if r.capacity is not None else "-", _pct(r.utilization), r.jobs) for r in u.rows]
    out += table(("SCOPE", "NAME", "CAPACITY GPU-H", "ALLOCATED", "IDLE IN ALLOC", "DRAINED/DOWN", "UNALLOCATED",
                  "UTIL", "JOBS"), rows)
    per = "day" if u.bucket_s >= 86400 else "hour"
    out.append(f"trend per {per} (70-80% band of well-scheduled clusters; 50%: renting beats owning):")
    trend = [(short_clock(r.start), _h(r.allocated), _h(r.capacity) if r.capacity is not None else "-",
              _pct(r.utilization), _bar(r.utilization)) for r in u.trend]
    out += table(("FROM", "ALLOCATED", "CAPACITY", "UTIL", ""), trend)
    out.append("where the figures come from:")
    out += [f"  {k}: {cell(v, 200)}" for k, v in u.sources.items()]
    return out


def _bar(pct: float | None, width: int = 40) -> str:
    """A text bar with the 50% line (|) and the 70-80% band ([ ]) marked."""
    if pct is None:
        return ""
    cells = ["#" if i < round(min(pct, 100) * width / 100) else "." for i in range(width)]
    for mark, at in (("|", 50), ("[", 70), ("]", 80)):
        i = min(width - 1, at * width // 100)
        cells[i] = mark if cells[i] == "." else cells[i]
    return "".join(cells)


async def run_utilization(args: argparse.Namespace, session: Any) -> int:
    """Raises UsageError (2), AccountingUnavailable/BackendError (3)."""
    from cockpit.commands._acct_out import print_costs, print_json, print_lines
    from cockpit.core.accounting import names_arg, parse_since, require_accounting
    from cockpit.core.utilization import utilization
    from cockpit.models.accounting_serialize import util_row_to_dict, utilization_to_dict

    now = time.time()
    start = parse_since(args.since, now)
    partition = (names_arg(args.partition, "--partition") or ("",))[0]
    account = (names_arg(args.account, "--account") or ("",))[0]
    acct = await require_accounting(session.backend)
    snap = await session.backend.snapshot()
    if partition and partition not in {p.name for p in snap.partitions}:
        known = ", ".join(sorted(p.name for p in snap.partitions)) or "none"
        raise UsageError(f"--partition {partition!r}: no such partition (known: {known})")
    from cockpit.telemetry.promsource import job_utils_provider

    u = await utilization(acct, snap, start, now, partition=partition, account=account,
                          tracked=getattr(acct, "tracked_tres", ""), gpu_utils=job_utils_provider(session.config))
    if args.json:
        print_json(utilization_to_dict(u))
    elif args.csv:
        w = csv.DictWriter(sys.stdout, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in u.rows + u.trend:
            w.writerow(util_row_to_dict(r))
    else:
        print_lines(report_lines(u))
        print_costs(u.costs)
    # Records left out are named; the figures stand without them, the exit code says so.
    for w in u.warnings:
        print(f"cockpit: warning: {w}", file=sys.stderr)
    return EXIT_FAILED if u.warnings else EXIT_OK
