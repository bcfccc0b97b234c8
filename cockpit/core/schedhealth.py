"""Is slurmctld healthy? Judges :class:`~cockpit.backends.slurm_sdiag.SchedStats`
(and, where known, pending jobs by reason). No Textual, no I/O.

Each threshold is in docs/verdicts.md ("Scheduler health") with where it comes
from. ``judge()`` returns one :class:`Judged` per thing judged; a value the
statistics do not carry is not judged (no entry), so a caller that gets an empty
list has judged nothing and must not say OK.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from cockpit.backends.slurm_sdiag import SchedStats

# slurmctld serves at most MAX_SERVER_THREADS (256, src/slurmctld/slurmctld.h) RPCs at once;
# sdiag(1): "if this is often close to MAX_SERVER_THREADS it could point to a potential bottleneck".
MAX_SERVER_THREADS = 256
THREADS_WARN, THREADS_CRIT = 128, 240
# Outgoing RPCs waiting to be sent (to slurmd's): sdiag(1) "Agent queue size".
AGENT_WARN, AGENT_CRIT = 1_000, 10_000
# Messages waiting for slurmdbd. slurmctld logs "agent queue filling (N), MaxDBDMsgs=M, RESTART
# SLURMDBD NOW" at half of MaxDBDMsgs (recorded: 25430 of 50860); MaxDBDMsgs is at least 10000 (slurm.conf(5)).
DBD_WARN, DBD_CRIT = 1_000, 5_000
# SchedulerParameters bf_interval defaults to 30 s (slurm.conf(5)).
BF_INTERVAL_S = 30
BF_STALE_CYCLES = 10  # no backfill cycle for 10 intervals: the backfill thread is stuck or starved
# One user sending most RPCs (a polling loop: squeue in a `watch`) loads slurmctld for everyone.
USER_RPC_SHARE, USER_RPC_MIN = 0.5, 10_000
RPC_SLOW_US = 1_000_000  # an RPC type averaging a second or more
# Pending reasons that say something is broken rather than busy (squeue(1) JOB REASON CODES).
TROUBLE_REASONS = ("ReqNodeNotAvail", "Nodes required for job are DOWN", "PartitionDown", "PartitionInactive",
                   "launch failed requeued held", "BadConstraints", "NodeDown", "JobLaunchFailure",
                   "InvalidQOS", "InvalidAccount", "SystemFailure")
_SYSTEM_USERS = {"root", "slurm", "slurmrestd"}


@dataclass(frozen=True, slots=True)
class Judged:
    severity: str  # OK, WARN, CRIT
    code: str
    title: str
    detail: str = ""


def _level(value: int, warn: int, crit: int) -> str:
    return "CRIT" if value >= crit else "WARN" if value >= warn else "OK"


def _queues(s: SchedStats) -> list[Judged]:
    out = []
    if s.server_threads is not None:
        out.append(Judged(_level(s.server_threads, THREADS_WARN, THREADS_CRIT), "sched.threads",
                          f"slurmctld server threads: {s.server_threads} of {MAX_SERVER_THREADS}",
                          f"WARN from {THREADS_WARN}, CRIT from {THREADS_CRIT}"))
    if s.agent_queue is not None:
        out.append(Judged(_level(s.agent_queue, AGENT_WARN, AGENT_CRIT), "sched.agent-queue",
                          f"agent queue (RPCs waiting to go out to nodes): {s.agent_queue}",
                          f"WARN from {AGENT_WARN}, CRIT from {AGENT_CRIT}"))
    if s.dbd_queue is not None:
        out.append(Judged(_level(s.dbd_queue, DBD_WARN, DBD_CRIT), "sched.dbd-queue",
                          f"slurmdbd agent queue (messages waiting for slurmdbd): {s.dbd_queue}",
                          f"WARN from {DBD_WARN}, CRIT from {DBD_CRIT}"))
    return out


def _backfill(s: SchedStats, bf_interval_s: int) -> list[Judged]:
    if not s.bf_cycles:
        return []  # sched/builtin, or no cycle since the statistics were reset: nothing to judge
    out = []
    if s.bf_cycle_last_us is not None:
        last_s = s.bf_cycle_last_us / 1e6
        sev = "WARN" if last_s > bf_interval_s else "OK"
        out.append(Judged(sev, "sched.bf-cycle", f"last backfill cycle took {last_s:.1f} s (interval {bf_interval_s} s)",
                          "a cycle longer than bf_interval delays every next one"))
    if s.bf_last_when and s.taken_at:
        age = s.taken_at - s.bf_last_when
        # backfill skips a cycle when nothing changed (no job, node or partition update): an old cycle with
        # nothing pending is a quiet cluster, with jobs pending it is a backfill that does not get to them
        stale = age > BF_STALE_CYCLES * bf_interval_s and bool(s.jobs_pending)
        out.append(Judged("WARN" if stale else "OK", "sched.bf-age",
                          f"last backfill cycle {age} s before the statistics were taken, {s.jobs_pending or 0} job(s) pending",
                          f"WARN beyond {BF_STALE_CYCLES} intervals ({BF_STALE_CYCLES * bf_interval_s} s) with jobs "
                          "pending; backfill skips cycles when nothing changed, so a quiet cluster can show this"))
    return out


def _rpcs(s: SchedStats) -> list[Judged]:
    out = []
    total = sum(c for _, c, _ in s.rpc_by_user)
    for user, count, _avg in s.rpc_by_user:
        if user not in _SYSTEM_USERS and count >= USER_RPC_MIN and count >= USER_RPC_SHARE * total:
            out.append(Judged("WARN", "sched.rpc-user", f"user {user} sent {count} of {total} RPCs "
                              f"({100 * count // max(total, 1)} %)", "a client polling in a loop loads slurmctld"))
    for kind, count, avg in s.rpc_by_type:
        if avg >= RPC_SLOW_US and count >= 10:
            out.append(Judged("WARN", "sched.rpc-slow", f"{kind}: {count} RPCs averaging {avg / 1e6:.1f} s"))
    if s.rpc_by_user and not out:
        top = max(s.rpc_by_user, key=lambda r: r[1])
        out.append(Judged("OK", "sched.rpc", f"{total} RPCs from {len(s.rpc_by_user)} user(s); most from {top[0]} ({top[1]})"))
    return out


def pending_by_reason(reasons: Iterable[str]) -> list[Judged]:
    """Pending jobs counted by reason: WARN for a reason that says something is broken."""
    counts = Counter((r or "None").replace("_", " ") for r in reasons)  # scontrol writes the reason with _
    out = []
    for reason, n in counts.most_common():
        bad = any(reason.startswith(t) or t in reason for t in TROUBLE_REASONS)
        out.append(Judged("WARN" if bad else "OK", "sched.pending", f"{n} job(s) pending: {reason}"))
    return out


def judge(s: SchedStats, *, bf_interval_s: int = BF_INTERVAL_S) -> list[Judged]:
    """Everything judged in these statistics, worst first."""
    out = _queues(s) + _backfill(s, bf_interval_s) + _rpcs(s)
    rank = {"CRIT": 0, "WARN": 1, "OK": 2}
    return sorted(out, key=lambda j: rank[j.severity])


def headline(judged: list[Judged]) -> str | None:
    """One line for the Pulse when the controller is unhealthy; None when it is not (or nothing was judged)."""
    bad = [j for j in judged if j.severity in ("CRIT", "WARN")]
    if not bad:
        return None
    more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
    return f"controller {bad[0].severity}: {bad[0].title}{more}"
