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
* NCCL: ``host:pid:tid [dev] [file.cc:line ]NCCL WARN message``.

``[Rank N]`` is the rank inside the process group; the ``[rankN]:`` prefix is
the global rank, and ranks are keyed by it where the log gives it. Lines a
terminal hard-wrapped (a number split over two lines) are joined before matching.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

TIMEOUT_RE = re.compile(
    r"\[Rank (\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r"(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?, Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds"
)
_PG_HEAD = r"\[PG (?:ID )?(\S+)(?: PG GUID (\S+))? Rank (\d+)\]"
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
GLOBAL_RANK_RE = re.compile(r"\[rank(\d+)\]:")
# NCCL's own log prefix: host:pid:tid [cudaDev] [src/file.cc:line] NCCL WARN message
NCCL_WARN_RE = re.compile(r"(?:^|\s)([\w.-]+):(\d+):(\d+) \[(\d+)\] (?:[\w./-]+\.(?:cc|h|cpp|cu):\d+ )?NCCL WARN (.*)$")
FLIGHT_RECORDER_OFF = "FlightRecorder is disabled"
# Words that start a message this module reads; a line holding one that matches
# nothing may be the first half of a hard-wrapped line.
_TRIGGERS = ("Watchdog caught", "detected by watchdog", "Timeout at NCCL work", "NCCL WARN", "watchdog got stuck", "Received a dump signal")
# A line that starts a new log record (so it does not continue a hard-wrapped NCCL WARN).
_RECORD_START = re.compile(r"^\s*$|^\S+:\d+:\d+ \[|^\[|^\(|^\d{4}-\d\d-\d\d|^\w{3} +\d+ |^\s*(?:what|frame #)")
# Lines that show the log is about a NCCL/ProcessGroup failure at all.
NCCL_TRACE_RE = re.compile(r"ProcessGroupNCCL|NCCL (?:WARN|error)|c10::DistBackendError|ncclSystemError|ncclInternalError")


@dataclass(frozen=True, slots=True)
class Timeout:
    rank: int  # global rank where the log gives it, else the rank in the PG
    seq: int
    op: str
    timeout_ms: int
    ran_for_ms: int
    numel_in: int | None = None
    numel_out: int | None = None
    line_no: int = 0
    pg_rank: int | None = None


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
    host: str
    pid: int
    device: int
    message: str
    line_no: int = 0


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
        return next((s.pg for s in self.status if s.work == t.seq), None)

    def to_dict(self) -> dict:
        t = max(self.timeouts, key=lambda x: x.seq, default=None)
        s = next((x for x in self.status if t is not None and x.work == t.seq), self.status[-1] if self.status else None)
        return {
            "rank": self.rank, "pg": s.pg if s else None, "pg_guid": s.guid if s else None, "seq": t.seq if t else None,
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
    recognised: int = 0  # lines this module understood
    nccl_lines: int = 0  # lines that mention ProcessGroupNCCL / NCCL errors at all

    def rank(self, r: int) -> RankReport:
        return self.ranks.setdefault(r, RankReport(r))


def _int(s: str | None) -> int | None:
    return int(s) if s is not None else None


def _global(line: str, pg_rank: int) -> int:
    m = GLOBAL_RANK_RE.search(line)
    return int(m.group(1)) if m else pg_rank


def _matches(line: str) -> bool:
    return any(rx.search(line) for rx in (TIMEOUT_RE, PG_OLD_RE, PG_AT_RE, PG_NEW_RE, HEARTBEAT_RE, DUMP_RE, NCCL_WARN_RE))


def joined_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) with hard-wrapped halves joined: a line holding a trigger
    that matches nothing is tried joined to the next one, without and with a space."""
    lines = text.splitlines()
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and any(t in line for t in _TRIGGERS) and not _matches(line):
            for glue in ("", " "):
                both = line + glue + lines[i + 1]
                if _matches(both):
                    out.append((i + 1, both))
                    i += 2
                    break
            else:
                out.append((i + 1, line))
                i += 1
            continue
        if NCCL_WARN_RE.search(line) and i + 1 < len(lines) and not _RECORD_START.match(lines[i + 1]) \
                and len(lines[i + 1]) < 200:
            out.append((i + 1, line.rstrip() + " " + lines[i + 1].strip()))  # a WARN the terminal wrapped
            i += 2
            continue
        out.append((i + 1, line))
        i += 1
    return out


def _timeout(log: WatchdogLog, line: str, n: int, m: re.Match, seen: set, by_pg_rank: dict) -> None:
    pg_rank = int(m.group(1))
    prefixed = GLOBAL_RANK_RE.search(line) is not None
    t = Timeout(_global(line, pg_rank), int(m.group(2)), m.group(3), int(m.group(6)), int(m.group(7)),
                _int(m.group(4)), _int(m.group(5)), n, pg_rank)
    key = (t.seq, t.op, t.ran_for_ms)
    if not prefixed and (pg_rank, *key) in by_pg_rank:
        return  # a what() repeat without a [rankN]: prefix: already counted under its global rank
    if (t.rank, *key) in seen:
        return
    seen.add((t.rank, *key))
    by_pg_rank[(pg_rank, *key)] = t.rank
    log.rank(t.rank).timeouts.append(t)


def parse(text: str, log: WatchdogLog | None = None) -> WatchdogLog:
    """Add every watchdog/heartbeat/dump/NCCL WARN line of ``text`` to ``log`` (a new one by default).

    The same timeout is printed several times (the watchdog line, the thread
    exception, ``what():``): it counts once per (rank, SeqNum, OpType, ran for)."""
    log = log or WatchdogLog()
    seen = {(t.rank, t.seq, t.op, t.ran_for_ms) for r in log.ranks.values() for t in r.timeouts}
    by_pg_rank = {(t.pg_rank, t.seq, t.op, t.ran_for_ms): t.rank for r in log.ranks.values() for t in r.timeouts}
    for n, line in joined_lines(text):
        if NCCL_TRACE_RE.search(line):
            log.nccl_lines += 1
        if FLIGHT_RECORDER_OFF in line:
            log.flight_recorder_off = True
            log.recognised += 1
        m = TIMEOUT_RE.search(line)
        if m:
            _timeout(log, line, n, m, seen, by_pg_rank)
            log.recognised += 1
            continue
        m = PG_OLD_RE.search(line) or PG_AT_RE.search(line) or PG_NEW_RE.search(line)
        if m:
            pg_rank = int(m.group(3))
            log.rank(_global(line, pg_rank)).status.append(
                PgStatus(_global(line, pg_rank), m.group(1), int(m.group(4)), int(m.group(5)), int(m.group(6)), n, m.group(2)))
            log.recognised += 1
            continue
        m = HEARTBEAT_RE.search(line)
        if m:
            log.rank(_global(line, int(m.group(3)))).heartbeat.append(m.group(4))
            log.recognised += 1
            continue
        m = DUMP_RE.search(line)
        if m:
            log.rank(_global(line, int(m.group(3)))).dumps.append(m.group(4)[:120])
            log.recognised += 1
            continue
        m = NCCL_WARN_RE.search(line)
        if m:
            log.warns.append(NcclWarn(m.group(1), int(m.group(2)), int(m.group(4)), m.group(5).strip(), n))
            log.recognised += 1
    return log


@dataclass(frozen=True, slots=True)
class Verdict:
    """Who is behind, and why (one sentence per suspect)."""

    behind: tuple[int, ...]
    reasons: tuple[str, ...]
    in_sync: bool  # every rank stopped at the same place: the collective hung everywhere


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
    silent = [r for r in expected if r not in log.ranks]
    if not behind and silent and len(timed) >= 2:
        for r in silent:
            behind[r] = f"rank {r} never logged a watchdog timeout while {len(log.ranks)} peers did"
    seqs_all = {s for g in groups.values() for s in g.values()}
    in_sync = (not behind and any(len(g) >= 2 for g in groups.values())
               and all(len(set(g.values())) <= 1 for g in groups.values()) and len(seqs_all) >= 1)
    ranks = tuple(sorted(behind))
    return Verdict(ranks, tuple(behind[r] for r in ranks), in_sync)
