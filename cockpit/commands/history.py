"""``cockpit history [--since 1d] [--state S] [--user U] [--partition P] [--account A] [--json]``:
finished jobs from Slurm's accounting (slurmdbd), newest first: state, exit code,
elapsed, nodes, GPUs, why it failed, and what the query cost.

Exit codes: 0 printed; 2 bad input (one line naming the value); 3 no accounting
(one line: "accounting is not configured ...") or Slurm could not be asked.
The JSON is documented in docs/accounting-json.md.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from cockpit.errors import EXIT_OK, UsageError


def add_window_flags(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--since", default=default, metavar="WHEN",
                   help=f"start of the window: a span back from now (30m, 12h, 7d, 2w) or a date (default {default})")


def register(sub) -> None:
    p = sub.add_parser("history", help="finished jobs from accounting (slurmdbd): state, exit code, elapsed, why it failed")
    add_window_flags(p, "1d")
    p.add_argument("--state", metavar="S,...", help="only these states: completed, failed, cancelled, timeout, "
                   "node_fail, out_of_memory ... (or sacct's CD,F,CA,TO,NF,OOM)")
    p.add_argument("--user", metavar="U,...", help="only jobs of these users")
    p.add_argument("--partition", metavar="P,...", help="only jobs of these partitions")
    p.add_argument("--account", metavar="A,...", help="only jobs of these accounts")
    p.add_argument("-n", "--limit", type=int, default=200, metavar="N", help="print the newest N jobs (default 200; 0 = all)")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/accounting-json.md)")
    p.set_defaults(func=run)


def history_rows(jobs) -> list[tuple]:
    from cockpit.commands._acct_out import duration, short_clock
    from cockpit.core.accounting import failure_text
    from cockpit.hostlist import collapse

    rows = []
    for j in jobs:
        code = "-" if j.exit_code is None else f"{j.exit_code}" + (f":{j.exit_signal}" if j.exit_signal else "")
        rows.append((j.job_id, j.name, j.user, j.partition, j.state, code, duration(j.elapsed_s),
                     collapse(j.nodes) or "-", j.gpus or "-", short_clock(j.end_time), failure_text(j)))
    return rows


HEAD = ("JOBID", "NAME", "USER", "PARTITION", "STATE", "EXIT", "ELAPSED", "NODES", "GPUS", "ENDED", "WHY")


async def run(args: argparse.Namespace, session: Any) -> int:
    """Raises UsageError (2), AccountingUnavailable/BackendError (3)."""
    from cockpit.commands._acct_out import clock, print_costs, print_json, print_lines, span, table
    from cockpit.core.accounting import failure_text, history, job_query, parse_since, require_accounting
    from cockpit.models.accounting_serialize import history_to_dict

    if args.limit < 0:
        raise UsageError(f"--limit {args.limit}: must be 0 or more")
    now = time.time()
    start = parse_since(args.since, now)
    query = job_query(start, states=args.state, users=args.user, partitions=args.partition, accounts=args.account)
    acct = await require_accounting(session.backend)
    found = await history(acct, query, now)
    shown = found.jobs if not args.limit else found.jobs[:args.limit]
    if args.json:
        print_json(history_to_dict(shown, [failure_text(j) for j in shown], found.start, found.end,
                                   found.source, found.costs))
        return EXIT_OK
    more = f" (newest {len(shown)} shown: --limit)" if len(shown) < len(found.jobs) else ""
    print(f"{len(found.jobs)} finished job(s) in {span(now - start)} ({clock(start)} - {clock(now)}){more}, "
          f"from {found.source}")
    if shown:
        print_lines(table(HEAD, history_rows(shown), {1: 24, 7: 30, 10: 60}))
    print_costs(found.costs)
    return EXIT_OK
