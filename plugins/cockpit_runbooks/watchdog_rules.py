"""Findings from a parsed watchdog log (watchdog.py): one rule per kind of line the
parser reads, so that every line it recognised yields a finding, and fault lines it
could not read make the log UNKNOWN (unrecognised_nccl.py). Table: docs/verdicts.md."""

from __future__ import annotations

from typing import Any

from cockpit.plugins.api import Severity, sanitize

from . import nccl_ib, unrecognised_nccl, watchdog
from .context import ProbeResult


def pg_name(r: dict) -> str:
    return f"PG {r['pg_guid'] or r['pg']}" if r.get("pg") is not None else "a PG the log does not name"


def _timeouts(res: ProbeResult, log: watchdog.WatchdogLog, ranks: list[dict]) -> list[dict]:
    timed = [r for r in ranks if r["seq"] is not None]
    if timed:
        top = [r for r in timed if r["seq"] == max(x["seq"] for x in timed)]
        t = next((r for r in top if r["pg"] is not None), top[0])  # the rank whose log names the PG
        res.add("CRIT", "watchdog.timeout",
                f"NCCL watchdog timeout on {len(timed)} rank(s): {t['op']} SeqNum {t['seq']} in {pg_name(t)} "
                f"after {t['timeout_ms']} ms", evidence=[e for e in res.evidence if e.startswith("rank ")])
        _op_mismatch(res, top)
    elif log.unranked:
        # a bare watchdog line (an issue title, a line cut before its prefix): what it states, no rank invented
        t = max(log.unranked, key=lambda x: x.seq)
        res.add("CRIT", "watchdog.timeout",
                f"NCCL watchdog timeout (the line names no rank): {t.op} SeqNum {t.seq} after {t.timeout_ms} ms "
                f"(ran for {t.ran_for_ms} ms)", evidence=[f"line {u.line_no}: SeqNum {u.seq} {u.op}" for u in log.unranked[:5]])
    return timed


def _op_mismatch(res: ProbeResult, top: list[dict]) -> None:
    """Ranks stopped at the same SeqNum in different collectives (nccl#1409: rank 3 in
    ALLREDUCE, rank 7 in BROADCAST, both SeqNum 80078): said, not hidden behind the first."""
    ops: dict[str, list[int]] = {}
    for r in top:
        ops.setdefault(r["op"], []).append(r["rank"])
    if len(ops) > 1:
        said = "; ".join(f"{op} on rank(s) {', '.join(map(str, rs[:8]))}" for op, rs in sorted(ops.items()))
        res.add("WARN", "watchdog.op_mismatch", f"at SeqNum {top[0]['seq']} the ranks were in different collectives: {said}",
                "in one process group that means the ranks issued different collectives (their code paths "
                "differ); SeqNums count per process group, and the log does not name every rank's")


def _failures(res: ProbeResult, ranks: list[dict], timed: list[dict]) -> None:
    """PG status lines without a timeout line: the watchdog still detected a failure."""
    status = [r for r in ranks if r["seq"] is None and r["last_completed"] is not None]
    if status and not timed:
        r = status[0]
        res.add("CRIT", "watchdog.failure",
                f"the watchdog detected a failure on {len(status)} rank(s) in {pg_name(r)}: "
                f"last completed work {r['last_completed']}, last enqueued {r['last_enqueued']}")


def _monitor(res: ProbeResult, log: watchdog.WatchdogLog, ranks: list[dict], timed: list[dict]) -> None:
    beat = [r for r in ranks if r["heartbeat"]]
    if beat:
        res.add("CRIT", "watchdog.heartbeat",
                f"watchdog heartbeat lost on {len(beat)} rank(s) ({', '.join(str(r['rank']) for r in beat[:8])}): "
                "the watchdog itself was stuck, so the process was aborted",
                "a NCCL/CUDA call hung the watchdog thread (or another thread held the GIL in a CUDA call)",
                fix="py-spy dump the ranks while hung; TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC sets the monitor's patience")
    dumps = [r for r in ranks if r["dumps"]]
    if dumps and not timed:
        res.add("CRIT", "watchdog.dump_signal",
                f"a collective timed out: flight-recorder dump signalled on {len(dumps)} rank(s)",
                evidence=[f"rank {r['rank']}: {m}" for r in dumps for m in log.ranks[r["rank"]].dumps[:1]])


def _compare(res: ProbeResult, log: watchdog.WatchdogLog, world: Any, timed: list[dict]) -> None:
    verdict = watchdog.compare(log, world)
    if verdict.behind:
        res.facts["straggler_ranks"] = list(verdict.behind)
        res.add("WARN", "straggler.logs", f"rank(s) behind by the logs: {', '.join(map(str, verdict.behind))}",
                evidence=verdict.reasons)
    elif verdict.in_sync and timed and verdict.unheard:
        res.add("WARN", "watchdog.in_sync", f"the {len(log.ranks)} rank(s) that logged a timeout stopped at the same "
                f"SeqNum; {len(verdict.unheard)} rank(s) ({', '.join(map(str, verdict.unheard[:8]))}"
                f"{', ...' if len(verdict.unheard) > 8 else ''}) logged nothing here",
                "the text holds part of the job's log: the other ranks' lines (or their absence) are not in it, "
                "so no straggler is named; give every rank's log")
    elif verdict.in_sync and timed:
        res.add("WARN", "watchdog.in_sync", "every rank stopped at the same SeqNum: the collective hung on all of them",
                "the logs cannot name a straggler; look at the stacks and the nodes' health")
    if log.flight_recorder_off:
        res.add("WARN", "flight_recorder.off", "the flight recorder was off, so no per-collective trace was kept",
                fix="set TORCH_NCCL_TRACE_BUFFER_SIZE (e.g. 2000) and TORCH_NCCL_DUMP_ON_TIMEOUT=1")


def _where(w: watchdog.NcclWarn) -> str:
    host = w.host or "a host the line does not name"
    bits = [f"pid {w.pid}" if w.pid is not None else "", f"GPU {w.device}" if w.device is not None else ""]
    bits = [b for b in bits if b]
    return host + (f" ({', '.join(bits)})" if bits else "")


def _warns(res: ProbeResult, log: watchdog.WatchdogLog) -> None:
    """IB/RoCE transport errors are CRIT (fatal to the communicator), grouped by host and
    error; any other WARN stays a WARN with its text."""
    ib: dict[tuple, list[tuple[watchdog.NcclWarn, nccl_ib.IbError]]] = {}
    plain = []
    for w in log.warns:
        e = nccl_ib.decode(w.message)
        if e is None:
            plain.append(w)
        else:
            ib.setdefault((w.host, e.key), []).append((w, e))
    for group in ib.values():
        w, e = group[0]
        more = f" ({len(group)} times)" if len(group) > 1 else ""
        res.add("CRIT", "nccl.ib", f"IB/RoCE transport error on {_where(w)}{more}: {sanitize(nccl_ib.sentence(e))[:300]}",
                "fatal to the NCCL communicator: its collectives fail or hang",
                evidence=[f"line {x.line_no}: {sanitize(x.message)[:200]}" for x, _ in group[:3]],
                fix="check the link and the peer (ibstat, ibv_devinfo, the switch port), GID index and NCCL_IB_HCA")
    for w in plain[:20]:
        res.add("WARN", "nccl.warn", f"NCCL WARN on {_where(w)}: {sanitize(w.message)[:200]}")


def findings(res: ProbeResult, log: watchdog.WatchdogLog, ranks: list[dict], world: Any) -> None:
    """Every finding of a watchdog log, the UNKNOWN for fault lines not understood included."""
    timed = _timeouts(res, log, ranks)
    _failures(res, ranks, timed)
    _monitor(res, log, ranks, timed)
    _compare(res, log, world, timed)
    _warns(res, log)
    unread = unrecognised_nccl.unread(log.leftover, log.fault_read)
    if unread:
        title, shown = unrecognised_nccl.describe(unread)
        res.add("UNKNOWN", "nccl.unread", title, "an input that was not read is never judged healthy", evidence=shown)
    if log.recognised and not any(f.severity != Severity.OK for f in res.findings):
        res.add("UNKNOWN", "watchdog.unjudged", f"{log.recognised} watchdog line(s) were recognised but no rule judged them")
