"""Reaching a backend's accounting, reading the user's window and state filters,
and the finished-jobs history. No Textual; used by the headless commands and the TUI.

- ``require_accounting(backend)``: the capability, or AccountingUnavailable
  (exit 3) whose message is one line saying why (no slurmdbd, a replay ...).
- ``scheduling_of(backend)``: sprio/reservations/job detail, or None.
- ``parse_since("7d", now)``, ``parse_states("failed,to")``: UsageError naming the bad value.
- ``history(acct, query)``: finished jobs, newest first, with what the query cost.
- ``failure_text(job)``: why a finished job did not complete, in a few words.
"""

from __future__ import annotations

import re
import signal as _signal
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cockpit.backends.accounting import NOT_CONFIGURED, AccountingUnavailable, Answer, JobQuery
from cockpit.backends.base import Backend
from cockpit.errors import UsageError
from cockpit.models.accounting import FINISHED_STATES, JobRecord, QueryCost

__all__ = ["AccountingUnavailable", "History", "JobQuery", "failure_text", "history", "parse_since",
           "parse_states", "require_accounting", "scheduling_of"]

_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SPAN = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)$")
# sacct's abbreviations and cockpit's lower-case words for the finished states.
_STATE_WORDS = {
    "cd": "COMPLETED", "completed": "COMPLETED", "f": "FAILED", "failed": "FAILED",
    "ca": "CANCELLED", "cancelled": "CANCELLED", "canceled": "CANCELLED", "to": "TIMEOUT",
    "timeout": "TIMEOUT", "nf": "NODE_FAIL", "node_fail": "NODE_FAIL", "oom": "OUT_OF_MEMORY",
    "out_of_memory": "OUT_OF_MEMORY", "pr": "PREEMPTED", "preempted": "PREEMPTED", "bf": "BOOT_FAIL",
    "boot_fail": "BOOT_FAIL", "dl": "DEADLINE", "deadline": "DEADLINE",
}
MAX_WINDOW_S = 366 * 86400  # a longer window is refused: sacct would read the whole database


async def require_accounting(backend: Backend) -> Any:
    """The backend's accounting capability. Raises AccountingUnavailable (one line)."""
    offer = backend.capabilities().accounting
    if offer is None:
        raise AccountingUnavailable(f"{NOT_CONFIGURED}: the {backend.name} backend offers no accounting")
    cap = await offer.accounting()
    if cap is None:
        raise AccountingUnavailable(offer.accounting_why or NOT_CONFIGURED)
    return cap


async def scheduling_of(backend: Backend) -> Any:
    """sprio, reservations and job detail, or None where the backend has none."""
    offer = backend.capabilities().scheduling
    return None if offer is None else await offer.scheduling()


def parse_span(text: str, flag: str = "--since") -> int:
    """``7d``, ``12h``, ``30m``, ``2w``, ``90s`` -> seconds. Raises UsageError."""
    m = _SPAN.match(text.strip().lower())
    if not m:
        raise UsageError(f"{flag} {text!r}: expected a span such as 30m, 12h, 7d, 2w or a date (2026-11-30)")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def parse_since(text: str, now: float, flag: str = "--since") -> int:
    """A start time: a span back from now (``7d``) or a local date/time
    (``2026-11-30``, ``2026-11-30T08:00``). Raises UsageError naming the value."""
    value = text.strip()
    if value and value[0].isdigit() and "-" in value:
        try:
            start = int(datetime.fromisoformat(value).timestamp())
        except ValueError:
            raise UsageError(f"{flag} {text!r}: not a date (use 2026-11-30 or 2026-11-30T08:00)") from None
    else:
        start = int(now) - parse_span(value, flag)
    if start >= now:
        raise UsageError(f"{flag} {text!r} is not in the past")
    if now - start > MAX_WINDOW_S:
        raise UsageError(f"{flag} {text!r}: a window over a year would read the whole accounting database")
    return start


def parse_states(text: str | None) -> tuple[str, ...]:
    """``failed,timeout`` or sacct's ``F,TO`` -> ("FAILED", "TIMEOUT"); None: every
    finished state. Raises UsageError naming the unknown word."""
    if not text:
        return FINISHED_STATES
    out = []
    for word in text.split(","):
        w = word.strip().lower()
        if not w:
            continue
        if w not in _STATE_WORDS:
            known = ", ".join(s.lower() for s in FINISHED_STATES)
            raise UsageError(f"--state {word.strip()!r}: not a finished state (one of {known})")
        out.append(_STATE_WORDS[w])
    return tuple(dict.fromkeys(out)) or FINISHED_STATES


def names_arg(text: str | None, flag: str) -> tuple[str, ...]:
    """``a,b`` -> ("a", "b"). Raises UsageError for a word that is not a Slurm name."""
    out = tuple(p.strip() for p in (text or "").split(",") if p.strip())
    for name in out:
        if not re.fullmatch(r"[A-Za-z0-9_.@-]+", name):
            raise UsageError(f"{flag} {name!r}: not a Slurm name")
    return out


def job_query(start: int, *, states: str | None = None, users: str | None = None,
              partitions: str | None = None, accounts: str | None = None) -> JobQuery:
    """The bounded query for a history. Raises UsageError for a bad name or state."""
    return JobQuery(start=start, states=parse_states(states), users=names_arg(users, "--user"),
                    partitions=names_arg(partitions, "--partition"), accounts=names_arg(accounts, "--account"))


@dataclass(frozen=True, slots=True)
class History:
    jobs: tuple[JobRecord, ...]  # newest end first
    costs: tuple[QueryCost, ...]
    start: int
    end: int
    source: str


async def history(acct: Any, query: JobQuery, now: float) -> History:
    """Finished jobs in the window. Raises BackendError/ParseError (one line)."""
    answer: Answer = await acct.jobs(query)
    jobs = tuple(sorted(answer.items, key=lambda j: (j.end_time or 0, j.job_id_raw), reverse=True))
    return History(jobs, answer.costs, query.start, int(now), getattr(acct, "source", ""))


def _signame(num: int) -> str:
    try:
        return _signal.Signals(num).name.removeprefix("SIG")
    except ValueError:
        return str(num)


def failure_text(job: JobRecord) -> str:
    """Why a finished job did not complete ("" when it did): exit code, signal,
    time limit, node failure, memory, and Slurm's own reason where it gave one."""
    s = job.state
    if s == "COMPLETED":
        return ""
    parts = []
    if s == "FAILED":
        code = job.exit_code if job.exit_code else job.derived_exit_code
        parts.append(f"exit {code}" if code else "failed")
    elif s == "TIMEOUT":
        parts.append(f"time limit {job.time_limit} min" if job.time_limit else "time limit")
    elif s == "NODE_FAIL":
        parts.append("node failure" + (f" ({', '.join(job.nodes[:3])})" if job.nodes else ""))
    elif s == "OUT_OF_MEMORY":
        parts.append("out of memory")
    elif s == "CANCELLED":
        parts.append("cancelled" + ("" if job.start_time else " before it started"))
    else:
        parts.append(s.lower())
    if job.exit_signal:
        parts.append(f"signal {job.exit_signal} ({_signame(job.exit_signal)})")
    if job.reason and job.reason not in ("None",):
        parts.append(job.reason)
    return ", ".join(parts)
