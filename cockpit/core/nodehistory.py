"""A node's event history (sacctmgr show event) with its recent jobs, summed up in
one line such as "drained 3x in 14 d, 2x Xid 79, 4 of the last 10 jobs failed",
and whether it flaps. No Textual."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from cockpit.backends.accounting import JobQuery
from cockpit.models.accounting import FAILED_STATES, FINISHED_STATES, JobRecord, NodeEvent
from cockpit.models.accounting_reports import NodeHistory

_XID = re.compile(r"\bxid\s*[:#]?\s*(\d+)", re.I)
FLAP_EVENTS = 3  # drains + downs in the window that make a node "flapping"
LAST_JOBS = 10


def _days(seconds: float) -> str:
    d = seconds / 86400
    return f"{d:.0f} d" if d >= 1 else f"{seconds / 3600:.0f} h"


def summarize(events: tuple[NodeEvent, ...], recent: tuple[JobRecord, ...], span_s: float) -> tuple[str, dict, dict, int]:
    """(line, counts per kind, Xid counts, failed jobs) for the window."""
    counts = Counter(e.kind for e in events)
    xids = Counter(int(x) for e in events for x in set(_XID.findall(e.reason)))
    failed = sum(1 for j in recent if j.state in FAILED_STATES)
    parts = []
    words = {"drain": "drained", "down": "down", "reboot": "rebooted"}
    for kind in ("drain", "down", "reboot"):
        if counts.get(kind):
            parts.append(f"{words[kind]} {counts[kind]}x")
    head = (", ".join(parts) if parts else "no drain, down or reboot") + f" in {_days(span_s)}"
    line = [head]
    line += [f"{n}x Xid {x}" for x, n in sorted(xids.items(), key=lambda kv: (-kv[1], kv[0]))]
    line.append(f"{failed} of the last {len(recent)} jobs failed" if recent else "no finished jobs")
    return ", ".join(line), dict(counts), dict(xids), failed


def flapping(counts: dict[str, int]) -> bool:
    return counts.get("drain", 0) + counts.get("down", 0) >= FLAP_EVENTS


async def node_history(acct: Any, node: str, start: int, now: float, last_jobs: int = LAST_JOBS) -> NodeHistory:
    """Events and recent jobs of one node. Raises BackendError/ParseError (one line)."""
    ev = await acct.node_events(node, start)
    jobs = await acct.jobs(JobQuery(start=start, states=FINISHED_STATES, nodes=node))
    recent = tuple(sorted(jobs.items, key=lambda j: (j.end_time or 0, j.job_id_raw), reverse=True)[:last_jobs])
    events = tuple(e for e in ev.items if e.node == node)
    line, counts, xids, failed = summarize(events, recent, now - start)
    return NodeHistory(node=node, start=start, end=int(now), events=events, recent_jobs=recent, summary=line,
                       flapping=flapping(counts), counts=counts, xids=xids, failed_jobs=failed,
                       costs=ev.costs + jobs.costs)


async def flapping_nodes(acct: Any, start: int) -> tuple[frozenset[str], tuple]:
    """(the nodes drained or down FLAP_EVENTS times or more since ``start``, the query's
    costs): one sacctmgr query for every node. Raises BackendError/ParseError."""
    ev = await acct.node_events("", start)
    counts: Counter = Counter(e.node for e in ev.items if e.kind in ("drain", "down"))
    return frozenset(n for n, c in counts.items() if c >= FLAP_EVENTS), ev.costs
