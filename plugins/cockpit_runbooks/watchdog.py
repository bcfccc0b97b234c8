"""PyTorch ProcessGroupNCCL watchdog, heartbeat-monitor and flight-recorder
messages and NCCL WARN lines, per rank. Recorded forms:
tests/data/pytorch-nccl-timeout/SOURCES.md.

* timeouts: ``[Rank 1] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=.., OpType=.., [NumelIn=.., NumelOut=..,] Timeout(ms)=..) ran
  for N milliseconds``, behind any prefix: ``[rank9]:[E129 16:38:47.7 ...]``, a
  launcher's ``[80746]`` or ``(Worker[rank=9] pid=..)``, a progress bar;
* PG status: ``[PG 1 Rank 0] Exception ... detected by watchdog at work: W,
  last enqueued NCCL work: E, last completed NCCL work: C`` and ``[PG ID 12 PG
  GUID 100(EXPERT_MODEL_PARALLEL_GROUP) Rank 1]  failure detected by watchdog at
  work sequence id: W PG status: last enqueued work: E, last completed work: C``
  (the PG header may carry either wording), and torch 2.3's ``[PG 1 Rank 1]
  Timeout at NCCL work: W, last enqueued NCCL work: E, last completed NCCL work: C``;
* heartbeat monitor: ``Heartbeat monitor timed out!``, ``watchdog got stuck for
  600 seconds``, ``detected no heartbeat of its watchdog``;
* flight recorder: ``Received a dump signal due to a collective timeout from
  rank 8``, ``Observed flight recorder dump signal``, ``timed out after waiting
  for 60000ms flight recorder dumps to finish``, ``FlightRecorder is disabled``;
* the same timeout bare (an issue title, a log line cut before its prefix) with no
  ``[Rank N]``, and inside ``what():  [PG 3 Rank 5] Process group watchdog thread
  terminated with exception: [Rank 5] Watchdog caught ...``, whose PG header names the PG;
* NCCL: ``host:pid:tid [dev] [file.c|cc|h|cpp|cu:line ]NCCL WARN message``, also behind a
  ``[date] `` prefix and with a redacted ``host:XXXXXX``; IB/RoCE transport errors in
  those lines are decoded by nccl_ib.py.

``[Rank N]`` is the rank inside the process group; the ``[rankN]:`` prefix is
the global rank, and ranks are keyed by it where the log gives it. Lines a
terminal hard-wrapped (a number, or the message's own words, split over two or
three lines) are joined before matching.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from . import logjoin, nccl_ib

TIMEOUT_RE = re.compile(
    r"(?:\[Rank (\d+)\] )?Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r"(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?, Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds"
)
# "[PG 1 Rank 0]", torch 2.4's "[PG 0 (default_pg) Rank 7]" (nccl#1409, milabench#269) and
# 2.5's "[PG ID 0 PG GUID 0(default_pg) Rank 1]": group 1 the PG, 2 its GUID or "(name)", 3 the rank
_PG_HEAD = r"\[PG (?:ID )?(\S+)(?: (?:PG GUID )?(\S+))? Rank (\d+)\]"
_PG = _PG_HEAD + r"\s+"
PG_OLD_RE = re.compile(_PG + r"Exception \(either an error or timeout\) detected by watchdog at work: (-?\d+), "
                       r"last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)")
# torch 2.3-era wording of the same status
PG_AT_RE = re.compile(_PG + r"Timeout at NCCL work: (-?\d+), last enqueued NCCL work: (-?\d+), "
                      r"last completed NCCL work: (-?\d+)")
PG_NEW_RE = re.compile(_PG + r"failure detected by watchdog at work sequence id: (-?\d+) "
                       r"PG status: last enqueued work: (-?\d+), last completed work: (-?\d+)")
HEARTBEAT_RE = re.compile(_PG_HEAD + r".*?(Heartbeat monitor timed out|watchdog got stuck for (\d+) seconds"
                          r"|detected no heartbeat of its watchdog)")
DUMP_RE = re.compile(_PG_HEAD + r".*?(Received a dump signal due to a collective timeout from\s+(this local rank|rank \d+)"
                     r"|Observed flight recorder dump signal|timed out after waiting for \d+ms flight recorder dumps to finish)")
# the what() of the watchdog's exception: its PG header names the PG of the timeout after it
TERMINATED_RE = re.compile(_PG_HEAD + r"\s+Process group watchdog thread terminated")
GLOBAL_RANK_RE = re.compile(r"\[rank(\d+)\]:")
# NCCL's own log prefix: host:pid:tid [cudaDev] [src/file.c:line] NCCL WARN message. The
# pid:tid may be redacted ("host:XXXXXX"), a "[date] " may precede it, any source file
# (ibvwrap.c, ib_plugin.c, net_ib.cc, socket.h) may name the line; with no prefix at all
# the message is still a WARN (BARE_WARN_RE).
NCCL_WARN_RE = re.compile(r"(?:^|[\s\]])(?:(?P<host>[\w.-]+):(?P<ids>[\w:]+) )?\[(?P<dev>\d+)\] "
                          r"(?:(?P<src>[\w./-]+\.\w+:\d+) )?NCCL WARN (?P<msg>.*)$")
BARE_WARN_RE = re.compile(r"NCCL WARN (?P<msg>.*)$")
FLIGHT_RECORDER_OFF = "FlightRecorder is disabled"
# Words that start a message this module reads; a line holding one that matches
# nothing may be the first half of a hard-wrapped line.
_TRIGGERS = ("Watchdog caught", "detected by watchdog", "Timeout at NCCL work", "NCCL WARN", "watchdog got stuck", "Received a dump signal")
# A line that starts a new log record (so it does not continue a hard-wrapped NCCL WARN).
_RECORD_START = re.compile(r"^\s*$|^\S+:\d+:\d+ \[|^\S+:\w+ \[\d+\] |^\[|^\(|^\d{4}-\d\d-\d\d"
                           r"|^(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d+ \d\d:"
                           r"|^\s*(?:what|frame #)")
# Lines that show the log is about a NCCL/ProcessGroup failure at all.
NCCL_TRACE_RE = re.compile(r"ProcessGroupNCCL|NCCL (?:WARN|error)|c10::DistBackendError|ncclSystemError|ncclInternalError")


@dataclass(frozen=True, slots=True)
class Timeout:
    rank: int | None  # global rank where the log gives it, else the rank in the PG; None: no rank
    seq: int
    op: str
    timeout_ms: int
    ran_for_ms: int
    numel_in: int | None = None
    numel_out: int | None = None
    line_no: int = 0
    pg_rank: int | None = None
    pg: str | None = None  # from the what() line's PG header, when it has one
    pg_guid: str | None = None


@dataclass(frozen=True, slots=True)
class PgStatus:
    rank: int
    pg: str
    work: int
    last_enqueued: int
    last_completed: int
    line_no: int = 0
    guid: str | None = None  # "100(EXPERT_MODEL_PARALLEL_GROUP)"


@dataclass(frozen=True, slots=True)
class NcclWarn:
    host: str | None  # None: the line has no host prefix
    pid: int | None  # None: redacted ("XXXXXX") or absent
    device: int | None
    message: str
    line_no: int = 0
    source: str | None = None  # "ibvwrap.c:262"


@dataclass
class RankReport:
    """What one rank logged: its timeouts (deduplicated), PG status, heartbeat and dump lines."""

    rank: int
    timeouts: list[Timeout] = field(default_factory=list)
    status: list[PgStatus] = field(default_factory=list)
    heartbeat: list[str] = field(default_factory=list)  # heartbeat-monitor messages
    dumps: list[str] = field(default_factory=list)  # flight-recorder dump signals

    @property
    def seq(self) -> int | None:
        """The furthest SeqNum this rank timed out on."""
        return max((t.seq for t in self.timeouts), default=None)

    @property
    def last_completed(self) -> int | None:
        return max((s.last_completed for s in self.status), default=None)

    def pg_of(self, t: Timeout) -> str | None:
        return t.pg or next((s.pg for s in self.status if s.work == t.seq), None)

    def to_dict(self) -> dict:
        t = max(self.timeouts, key=lambda x: x.seq, default=None)
        s = next((x for x in self.status if t is not None and x.work == t.seq), self.status[-1] if self.status else None)
        pg, guid = (t.pg, t.pg_guid) if t is not None and t.pg else (s.pg, s.guid) if s else (None, None)
        return {
            "rank": self.rank, "pg": pg, "pg_guid": guid, "seq": t.seq if t else None,
            "op": t.op if t else None, "numel_in": t.numel_in if t else None,
            "numel_out": t.numel_out if t else None, "timeout_ms": t.timeout_ms if t else None,
            "ran_for_ms": t.ran_for_ms if t else None,
            "last_enqueued": s.last_enqueued if s else None,
            "last_completed": s.last_completed if s else None,
            "timeouts": len(self.timeouts), "heartbeat": len(self.heartbeat), "dumps": len(self.dumps),
        }


@dataclass
class WatchdogLog:
    ranks: dict[int, RankReport] = field(default_factory=dict)
    warns: list[NcclWarn] = field(default_factory=list)
    flight_recorder_off: bool = False
    unranked: list[Timeout] = field(default_factory=list)  # bare timeouts: no [Rank N], no PG header
    recognised: int = 0  # lines this module understood
    nccl_lines: int = 0  # lines that mention ProcessGroupNCCL / NCCL errors at all
    leftover: list[tuple[str, int, str]] = field(default_factory=list)  # (source, line, text) not understood

    @property
    def fault_read(self) -> bool:
        """Something in the log was understood as a fault (not only the flight-recorder note)."""
        return bool(self.unranked or self.warns or any(r.timeouts or r.status or r.heartbeat or r.dumps
                                                       for r in self.ranks.values()))

    def rank(self, r: int) -> RankReport:
        return self.ranks.setdefault(r, RankReport(r))


def _int(s: str | None) -> int | None:
    return int(s) if s is not None else None


def _global(line: str, pg_rank: int) -> int:
    m = GLOBAL_RANK_RE.search(line)
    return int(m.group(1)) if m else pg_rank


_ALL = (TIMEOUT_RE, PG_OLD_RE, PG_AT_RE, PG_NEW_RE, HEARTBEAT_RE, DUMP_RE, NCCL_WARN_RE, BARE_WARN_RE)


def _spans(text: str) -> list[tuple[int, int, str]]:
    return logjoin.spans(text, _ALL, _TRIGGERS, _RECORD_START, NCCL_WARN_RE, nccl_ib.MESSAGES)


def joined_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) with hard-wrapped pieces joined (see logjoin.py)."""
    return [(n, line) for n, _, line in _spans(text)]


def _attach_pg(log: WatchdogLog, rank: int, key: tuple, pg: str, guid: str | None) -> None:
    """A what() repeat names the PG of a timeout already counted: keep the PG on it."""
    rep = log.ranks.get(rank)
    for i, t in enumerate(rep.timeouts if rep else ()):
        if (t.seq, t.op, t.ran_for_ms) == key and t.pg is None:
            rep.timeouts[i] = replace(t, pg=pg, pg_guid=guid)


def _guid(m: re.Match) -> str | None:
    """The PG's GUID as 2.5+ prints it ("0(default_pg)"); 2.4's "(default_pg)" after the PG
    number is the same name, so it reads the same."""
    g = m.group(2)
    return f"{m.group(1)}{g}" if g and g.startswith("(") else g


def _timeout(log: WatchdogLog, line: str, n: int, m: re.Match, seen: set, by_pg_rank: dict) -> None:
    head = TERMINATED_RE.search(line)  # what():  [PG 3 Rank 5] Process group watchdog thread terminated ...
    pg, guid = (head.group(1), _guid(head)) if head else (None, None)
    pg_rank = _int(m.group(1)) if m.group(1) is not None else (int(head.group(3)) if head else None)
    prefixed = GLOBAL_RANK_RE.search(line) is not None
    t = Timeout(_global(line, pg_rank) if pg_rank is not None else None, int(m.group(2)), m.group(3),
                int(m.group(6)), int(m.group(7)), _int(m.group(4)), _int(m.group(5)), n, pg_rank, pg, guid)
    key = (t.seq, t.op, t.ran_for_ms)
    if t.rank is None:
        if key not in {(u.seq, u.op, u.ran_for_ms) for u in log.unranked}:
            log.unranked.append(t)
        return
    if not prefixed and (pg_rank, *key) in by_pg_rank:
        if pg is not None:
            _attach_pg(log, by_pg_rank[(pg_rank, *key)], key, pg, guid)
        return  # a what() repeat without a [rankN]: prefix: already counted under its global rank
    if (t.rank, *key) in seen:
        if pg is not None:
            _attach_pg(log, t.rank, key, pg, guid)
        return
    seen.add((t.rank, *key))
    by_pg_rank[(pg_rank, *key)] = t.rank
    log.rank(t.rank).timeouts.append(t)


def _warn(line: str, n: int) -> NcclWarn | None:
    m = NCCL_WARN_RE.search(line)
    if m:
        pid = next((int(x) for x in (m["ids"] or "").split(":") if x.isdecimal()), None)
        return NcclWarn(m["host"], pid, int(m["dev"]), m["msg"].strip(), n, m["src"])
    m = BARE_WARN_RE.search(line)
    return NcclWarn(None, None, None, m["msg"].strip(), n) if m else None


def _record(log: WatchdogLog, line: str, n: int, seen: set, by_pg_rank: dict) -> bool:
    """Add what ``line`` says to ``log``; False when it says nothing this module reads."""
    m = TIMEOUT_RE.search(line)
    if m:
        _timeout(log, line, n, m, seen, by_pg_rank)
        return True
    m = PG_OLD_RE.search(line) or PG_AT_RE.search(line) or PG_NEW_RE.search(line)
    if m:
        pg_rank = int(m.group(3))
        log.rank(_global(line, pg_rank)).status.append(
            PgStatus(_global(line, pg_rank), m.group(1), int(m.group(4)), int(m.group(5)), int(m.group(6)), n, _guid(m)))
        return True
    m = HEARTBEAT_RE.search(line)
    if m:
        log.rank(_global(line, int(m.group(3)))).heartbeat.append(m.group(4))
        return True
    m = DUMP_RE.search(line)
    if m:
        log.rank(_global(line, int(m.group(3)))).dumps.append(m.group(4)[:120])
        return True
    w = _warn(line, n)
    if w:
        log.warns.append(w)
        return True
    return False


def parse(text: str, log: WatchdogLog | None = None, source: str = "") -> WatchdogLog:
    """Add every watchdog/heartbeat/dump/NCCL WARN line of ``text`` to ``log`` (a new one by default).

    The same timeout is printed several times (the watchdog line, the thread
    exception, ``what():``): it counts once per (rank, SeqNum, OpType, ran for).
    Lines read as nothing are kept in ``log.leftover`` (unrecognised_nccl.py looks
    there for fault lines nothing understood)."""
    log = log or WatchdogLog()
    seen = {(t.rank, t.seq, t.op, t.ran_for_ms) for r in log.ranks.values() for t in r.timeouts}
    by_pg_rank = {(t.pg_rank, t.seq, t.op, t.ran_for_ms): t.rank for r in log.ranks.values() for t in r.timeouts}
    for n, _, line in _spans(text):
        if NCCL_TRACE_RE.search(line):
            log.nccl_lines += 1
        read = FLIGHT_RECORDER_OFF in line
        if read:
            log.flight_recorder_off = True
        read = _record(log, line, n, seen, by_pg_rank) or read
        if read:
            log.recognised += 1
        else:
            log.leftover.append((source, n, line))
    return log


@dataclass(frozen=True, slots=True)
class Verdict:
    """Who is behind, and why (one sentence per suspect)."""

    behind: tuple[int, ...]
    reasons: tuple[str, ...]
    in_sync: bool  # every rank stopped at the same place: the collective hung everywhere
    unheard: tuple[int, ...] = ()  # ranks of the assumed world that logged nothing, not called behind


def _by_pg(log: WatchdogLog) -> dict[str | None, dict[int, int]]:
    """{PG: {rank: furthest SeqNum}}: SeqNums count per process group, so they are compared per PG."""
    out: dict[str | None, dict[int, int]] = {}
    for r, rep in log.ranks.items():
        for t in rep.timeouts:
            pg = rep.pg_of(t)
            got = out.setdefault(pg, {})
            got[r] = max(got.get(r, t.seq), t.seq)
    return out


def compare(log: WatchdogLog, world: Iterable[int] | None = None) -> Verdict:
    """Compare ranks. ``world`` are the ranks expected (default: 0..max rank seen)."""
    if not log.ranks:
        return Verdict((), (), False)
    expected = sorted(set(world) if world is not None else range(max(log.ranks) + 1))
    behind: dict[int, str] = {}
    groups = _by_pg(log)
    for pg, seqs in groups.items():
        if len(set(seqs.values())) > 1:
            top, low = max(seqs.values()), min(seqs.values())
            for r, s in seqs.items():
                if s == low:
                    where = f" in PG {pg}" if pg is not None and len(groups) > 1 else ""
                    behind[r] = f"rank {r} timed out at SeqNum {s}{where}, others reached {top}"
    # Strongest evidence first: a SeqNum skew, then "last completed", then silence.
    done = {r: rep.last_completed for r, rep in log.ranks.items() if rep.last_completed is not None}
    if not behind and len(set(done.values())) > 1 and len(groups) <= 1:
        low = min(done.values())
        for r, c in done.items():
            if c == low:
                behind[r] = f"rank {r} last completed work {c}, others got further"
    timed = [r for r, rep in log.ranks.items() if rep.timeouts]
    # a rank whose own timeout line is there but cut (unreadable) is not silent
    partial = {int(m.group(1)) for _, _, line in log.leftover if any(t in line for t in _TRIGGERS)
               for m in [GLOBAL_RANK_RE.search(line)] if m}
    silent = [r for r in expected if r not in log.ranks and r not in partial]
    # Silence names a straggler only as the exception: when the world is assumed (0..max rank
    # seen) and most of it is silent, the text is part of a job's log (an excerpt, one node's
    # file), and calling the unseen ranks "behind" would be a guess (milabench#269: 4 of 16 logged).
    guess = world is None and len(silent) >= len(log.ranks)
    if not behind and silent and len(timed) >= 2 and not guess:
        for r in silent:
            behind[r] = f"rank {r} never logged a watchdog timeout while {len(log.ranks)} peers did"
    seqs_all = {s for g in groups.values() for s in g.values()}
    in_sync = (not behind and any(len(g) >= 2 for g in groups.values())
               and all(len(set(g.values())) <= 1 for g in groups.values()) and len(seqs_all) >= 1)
    ranks = tuple(sorted(behind))
    return Verdict(ranks, tuple(behind[r] for r in ranks), in_sync, tuple(silent) if guess and not behind else ())
