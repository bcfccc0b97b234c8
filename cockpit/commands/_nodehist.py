"""``cockpit node history NODE [--since 14d] [--json]``: a node's drains, downs and
reboots from accounting (sacctmgr show event: reason, who, when), its recent
jobs, and one line such as "drained 3x in 14 d, 2x Xid 79, 4 of the last 10
jobs failed". Exit codes as for ``cockpit history``."""

from __future__ import annotations

import argparse
import re
import time
from typing import Any

from cockpit.errors import EXIT_OK, UsageError

_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``history`` under ``cockpit node``."""
    from cockpit.commands.history import add_window_flags

    p = sub.add_parser("history", help="a node's drain/down/reboot events (reason, who, when) and recent jobs")
    p.add_argument("node", metavar="NODE", help="one node name")
    add_window_flags(p, "14d")
    p.add_argument("--jobs", type=int, default=10, metavar="N", help="recent jobs to judge (default 10)")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/accounting-json.md)")
    p.set_defaults(func=node_history_cmd)


def event_rows(events) -> list[tuple]:
    from cockpit.commands._acct_out import clock, duration

    return [(e.kind, e.state, clock(e.start), clock(e.end) if e.end else "now",
             duration((e.end or time.time()) - e.start), e.user or "-", e.reason or "-") for e in events]


async def node_history_cmd(args: argparse.Namespace, session: Any) -> int:
    """Raises UsageError (2), AccountingUnavailable/BackendError (3)."""
    from cockpit.commands._acct_out import print_costs, print_json, print_lines, table
    from cockpit.commands.history import HEAD, history_rows
    from cockpit.core.accounting import failure_text, parse_since, require_accounting
    from cockpit.core.nodehistory import node_history
    from cockpit.models.accounting_serialize import node_history_to_dict

    if not _NODE.match(args.node):
        raise UsageError(f"node {args.node!r}: one node name, such as node03")
    if args.jobs < 0:
        raise UsageError(f"--jobs {args.jobs}: must be 0 or more")
    now = time.time()
    start = parse_since(args.since, now)
    acct = await require_accounting(session.backend)
    h = await node_history(acct, args.node, start, now, last_jobs=args.jobs)
    if args.json:
        print_json(node_history_to_dict(h, [failure_text(j) for j in h.recent_jobs]))
        return EXIT_OK
    flag = "  [flapping]" if h.flapping else ""
    print(f"{h.node}: {h.summary}{flag}")
    if h.events:
        print_lines(table(("EVENT", "STATE", "FROM", "UNTIL", "FOR", "BY", "REASON"), event_rows(h.events), {6: 80}))
    else:
        print("no events in the window")
    if h.recent_jobs:
        print(f"last {len(h.recent_jobs)} finished job(s) on {h.node}:")
        print_lines(table(HEAD, history_rows(h.recent_jobs), {1: 24, 7: 30, 10: 60}))
    print_costs(h.costs)
    return EXIT_OK
