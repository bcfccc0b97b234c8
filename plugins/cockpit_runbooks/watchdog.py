"""PyTorch ProcessGroupNCCL watchdog messages and NCCL WARN lines, per rank.

Formats (shared/REFERENCE.md section 2, fixtures/pytorch-nccl-timeout):

* legacy: ``[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective
  operation timeout: WorkNCCL(SeqNum=.., OpType=.., Timeout(ms)=..) ran for N
  milliseconds before timing out.``
* current: the same with ``NumelIn=, NumelOut=`` and a ``[rank0]:[E321 ...]``
  prefix (sometimes behind a launcher's ``[pid]``);
* follow-ups: ``[PG 1 Rank 0] Exception (either an error or timeout) detected
  by watchdog at work: W, last enqueued NCCL work: E, last completed NCCL work:
  C.`` or ``[PG ID 1 PG GUID 1 Rank 0]  failure detected by watchdog at work
  sequence id: W PG status: last enqueued work: E, last completed work: C``.

The comparison (:func:`compare`) names the rank behind: the rank whose SeqNum
or last completed work is lowest, or a rank that never logged the timeout
while its peers did (the triage hint in REFERENCE.md, marked inferred there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

TIMEOUT_RE = re.compile(
    r"\[Rank (\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r"(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?, Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds"
)
PG_OLD_RE = re.compile(
    r"\[PG (\S+) Rank (\d+)\]\s+Exception \(either an error or timeout\) detected by watchdog at work: (-?\d+), "
    r"last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)"
)
PG_NEW_RE = re.compile(
    r"\[PG ID (\S+)(?: PG GUID (\S+))? Rank (\d+)\]\s+failure detected by watchdog at work sequence id: (-?\d+) "
    r"PG status: last enqueued work: (-?\d+), last completed work: (-?\d+)"
)
# NCCL's own log prefix: host:pid:tid [cudaDev] NCCL WARN message
NCCL_WARN_RE = re.compile(r"(?:^|\s)([\w.-]+):(\d+):(\d+) \[(\d+)\] NCCL WARN (.*)$")
FLIGHT_RECORDER_OFF = "FlightRecorder is disabled"


@dataclass(frozen=True, slots=True)
class Timeout:
    rank: int
    seq: int
    op: str
    timeout_ms: int
    ran_for_ms: int
    numel_in: int | None = None
    numel_out: int | None = None
    line_no: int = 0


@dataclass(frozen=True, slots=True)
class PgStatus:
    rank: int
    pg: str
    work: int
    last_enqueued: int
    last_completed: int
    line_no: int = 0


@dataclass(frozen=True, slots=True)
class NcclWarn:
    host: str
    pid: int
    device: int
    message: str
    line_no: int = 0


@dataclass
class RankReport:
    """What one rank logged: its timeouts (deduplicated) and PG status lines."""

    rank: int
    timeouts: list[Timeout] = field(default_factory=list)
    status: list[PgStatus] = field(default_factory=list)

    @property
    def seq(self) -> int | None:
        """The furthest SeqNum this rank timed out on."""
        return max((t.seq for t in self.timeouts), default=None)

    @property
    def last_completed(self) -> int | None:
        return max((s.last_completed for s in self.status), default=None)

    def to_dict(self) -> dict:
        t = max(self.timeouts, key=lambda x: x.seq, default=None)
        s = self.status[-1] if self.status else None
        return {
            "rank": self.rank, "pg": s.pg if s else None, "seq": t.seq if t else None,
            "op": t.op if t else None, "numel_in": t.numel_in if t else None,
            "numel_out": t.numel_out if t else None, "timeout_ms": t.timeout_ms if t else None,
            "ran_for_ms": t.ran_for_ms if t else None,
            "last_enqueued": s.last_enqueued if s else None,
            "last_completed": s.last_completed if s else None,
            "timeouts": len(self.timeouts),
        }


@dataclass
class WatchdogLog:
    ranks: dict[int, RankReport] = field(default_factory=dict)
    warns: list[NcclWarn] = field(default_factory=list)
    flight_recorder_off: bool = False

    def rank(self, r: int) -> RankReport:
        return self.ranks.setdefault(r, RankReport(r))


def _int(s: str | None) -> int | None:
    return int(s) if s is not None else None


def parse(text: str, log: WatchdogLog | None = None) -> WatchdogLog:
    """Add every watchdog/NCCL WARN line of ``text`` to ``log`` (a new one by default).

    The same timeout is printed several times (the watchdog line, the thread
    exception, ``what():``): it counts once per (rank, SeqNum, OpType, ran for)."""
    log = log or WatchdogLog()
    seen = {(t.rank, t.seq, t.op, t.ran_for_ms) for r in log.ranks.values() for t in r.timeouts}
    for n, line in enumerate(text.splitlines(), 1):
        if FLIGHT_RECORDER_OFF in line:
            log.flight_recorder_off = True
        m = TIMEOUT_RE.search(line)
        if m:
            t = Timeout(int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(6)), int(m.group(7)),
                        _int(m.group(4)), _int(m.group(5)), n)
            key = (t.rank, t.seq, t.op, t.ran_for_ms)
            if key not in seen:
                seen.add(key)
                log.rank(t.rank).timeouts.append(t)
            continue
        m = PG_OLD_RE.search(line)
        if m:
            log.rank(int(m.group(2))).status.append(
                PgStatus(int(m.group(2)), m.group(1), int(m.group(3)), int(m.group(4)), int(m.group(5)), n))
            continue
        m = PG_NEW_RE.search(line)
        if m:
            log.rank(int(m.group(3))).status.append(
                PgStatus(int(m.group(3)), m.group(1), int(m.group(4)), int(m.group(5)), int(m.group(6)), n))
            continue
        m = NCCL_WARN_RE.search(line)
        if m:
            log.warns.append(NcclWarn(m.group(1), int(m.group(2)), int(m.group(4)), m.group(5).strip(), n))
    return log


@dataclass(frozen=True, slots=True)
class Verdict:
    """Who is behind, and why (one sentence per suspect)."""

    behind: tuple[int, ...]
    reasons: tuple[str, ...]
    in_sync: bool  # every rank stopped at the same place: the collective hung everywhere


def compare(log: WatchdogLog, world: Iterable[int] | None = None) -> Verdict:
    """Compare ranks. ``world`` are the ranks expected (default: 0..max rank seen)."""
    if not log.ranks:
        return Verdict((), (), False)
    expected = sorted(set(world) if world is not None else range(max(log.ranks) + 1))
    behind: dict[int, str] = {}
    seqs = {r: rep.seq for r, rep in log.ranks.items() if rep.seq is not None}
    if len(set(seqs.values())) > 1:
        top = max(seqs.values())
        low = min(seqs.values())
        for r, s in seqs.items():
            if s == low:
                behind[r] = f"rank {r} timed out at SeqNum {s}, others reached {top}"
    # Strongest evidence first: a SeqNum skew, then "last completed", then silence.
    done = {r: rep.last_completed for r, rep in log.ranks.items() if rep.last_completed is not None}
    if not behind and len(set(done.values())) > 1:
        low = min(done.values())
        for r, c in done.items():
            if c == low:
                behind[r] = f"rank {r} last completed work {c}, others got further"
    silent = [r for r in expected if r not in log.ranks]
    if not behind and silent:
        for r in silent:
            behind[r] = f"rank {r} never logged a watchdog timeout while {len(log.ranks)} peers did"
    in_sync = not behind and len(set(seqs.values())) <= 1
    ranks = tuple(sorted(behind))
    return Verdict(ranks, tuple(behind[r] for r in ranks), in_sync)
