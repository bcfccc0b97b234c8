"""Findings from saved Slurm text (--slurm-file): sinfo, squeue, sprio,
scontrol show node|job|partition, slurmctld/slurmd log excerpts and sdiag.
Called by probes_slurm.slurm_records; the readers live in cockpit (through
cockpit.plugins.api). Every file read adds a finding; what is recorded but
not judged is UNKNOWN, never OK (docs/verdicts.md)."""

from __future__ import annotations

import re
from typing import Any

from cockpit.plugins.api import UsageError, expand, judge_scheduler, pending_by_reason

from .context import ProbeResult

# sinfo's state suffixes (sinfo(1) NODE STATE CODES): * not responding, ~ powered off, # powering up,
# ! powering down, % powering down, $ maintenance reservation, @ pending reboot, ^ rebooting, - planned
_SUFFIX = "*~#!%$@^-+"
_CRIT_STATES = {"down", "fail", "inval", "invalid"}
_WARN_STATES = {"drain", "drng", "drained", "draining", "failing", "npc", "unk", "unknown"}
_OK_STATES = {"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing", "resv", "reserved", "maint",
              "plnd", "planned", "boot", "booting", "pow_up", "powered_down", "power_down", "futr", "future",
              "blocked", "block"}
# What a drain/down reason means (slurmctld's own reasons, and the usual admin ones)
_CAUSES = (
    (re.compile(r"^Not responding", re.I), "slurmd does not answer slurmctld (past SlurmdTimeout)"),
    # unanchored, and "fail" not "failed": sinfo cuts reasons at 20 characters ("rec: Kill task faile")
    (re.compile(r"Kill task fail", re.I),
     "a job's processes outlived SIGKILL past UnkillableStepTimeout: look for processes in D state "
     "(often a hung filesystem) before resuming"),
    (re.compile(r"^Low (RealMemory|socket|CPUs|TmpDisk)", re.I),
     "the node registered less than slurm.conf gives it (compare `slurmd -C` with its NodeName line)"),
    (re.compile(r"(Prolog|Epilog) (error|failed)", re.I), "the node's prolog/epilog exited non-zero (see slurmd's log)"),
    (re.compile(r"^gres/gpu", re.I), "the GPUs the node found differ from gres.conf (count or cores)"),
    (re.compile(r"unexpectedly rebooted", re.I), "the node rebooted without being asked (ReturnToService)"),
    (re.compile(r"^NHC", re.I), "the node health check failed"),
)


def _cause(reason: str) -> str:
    return next((c for rx, c in _CAUSES if rx.search(reason)), "")


def _state_sev(state: str) -> tuple[str, str]:
    """(severity, what) of one sinfo STATE / scontrol State= value."""
    s = state.lower()
    flags = set(re.split(r"[+]", s))
    base = re.sub(f"[{re.escape(_SUFFIX)}]+$", "", s.split("+")[0])
    if state.rstrip().endswith("*") or "not_responding" in flags:
        return "CRIT", "not responding"
    if base in _CRIT_STATES:
        return "CRIT", base
    if base in _WARN_STATES or "drain" in flags:
        return "WARN", "drained" if "drain" in base or "drain" in flags else base
    if base in _OK_STATES:
        return "OK", base
    return "UNKNOWN", f"in state {state}"


def _node_row(res: ProbeResult, nodes: str, count: str, state: str, reason: str) -> str:
    sev, what = _state_sev(state)
    if sev != "OK":
        cause = _cause(reason)
        res.add(sev, f"slurm.node.{what.replace(' ', '-')}", f"{count} node(s) {state} ({what}): {nodes}"
                + (f" - reason {reason!r}" if reason and reason != "none" else ""), cause)
    return sev


def _names(nodelist: str) -> set[str]:
    try:
        return set(expand(nodelist))
    except UsageError:  # a hostlist cockpit cannot expand still names something
        return {nodelist}


_STATE_COLS = ("STATE", "STATELONG", "STATECOMPACT")


def _sinfo(res: ProbeResult, cap: Any) -> None:
    if cap.kind != "sinfo -R" and cap.rows and not any(c in cap.rows[0] for c in _STATE_COLS):
        # a custom -o without %t/%T (GRES use, node sizes): the nodes' health is not in it
        res.add("UNKNOWN", "slurm.recorded", f"{cap.kind} table without a STATE column: {len(cap.rows)} row(s) "
                f"({', '.join(cap.rows[0])}) recorded, node states not judged")
        return
    up: set[str] = set()
    seen: set[tuple[str, str]] = set()  # a node is listed once per partition it is in
    for r in cap.rows:
        nodes = r.get("NODELIST") or r.get("HOSTNAMES") or "?"
        if cap.kind == "sinfo -R":
            reason = r.get("REASON", "")
            sev = "CRIT" if reason.lower().startswith("not responding") else "WARN"
            # `sinfo -R --Format=reason,nodelist` has no USER/TIMESTAMP: say only what the table holds
            who = f" (set by {r['USER']} at {r.get('TIMESTAMP', '?')})" if "USER" in r else ""
            res.add(sev, "slurm.node.reason", f"{nodes}: {reason!r}{who}", _cause(reason))
            continue
        state = next((r[c] for c in _STATE_COLS if r.get(c)), "?")
        if (nodes, state) in seen:
            continue
        seen.add((nodes, state))
        count = r.get("NODES") or str(len(_names(nodes)))
        if _node_row(res, nodes, count, state, r.get("REASON", "")) == "OK":
            up |= _names(nodes)
    if up:
        res.add("OK", "slurm.nodes.up", f"{len(up)} node(s) idle, mixed or allocated ({cap.kind})")
    if cap.kind == "sinfo -R" and not cap.rows:
        res.add("OK", "slurm.nodes.no-reason", "sinfo -R lists no node down, drained or failing")


def _scontrol_nodes(res: ProbeResult, cap: Any) -> None:
    ok = 0
    for r in cap.rows:
        if _node_row(res, r.get("NodeName", "?"), "1", r.get("State", "?"), r.get("Reason", "")) == "OK":
            ok += 1
    if ok:
        res.add("OK", "slurm.nodes.up", f"{ok} node(s) in service (scontrol show node)")


def _pending(res: ProbeResult, reasons: list[str]) -> None:
    for j in pending_by_reason(reasons):
        res.add(j.severity, j.code, j.title, j.detail)


def _squeue(res: ProbeResult, cap: Any) -> None:
    rows = cap.rows
    pend = [r["NODELIST(REASON)"].strip("()") for r in rows if r.get("ST") == "PD"]
    run = sum(1 for r in rows if r.get("ST") in ("R", "CG"))
    res.add("OK", "slurm.jobs.running", f"{run} job(s) running or completing, {len(pend)} pending ({len(rows)} in the table)")
    _pending(res, pend)


def _scontrol_jobs(res: ProbeResult, cap: Any) -> None:
    from .probes_slurm import _ENDS

    pend, by_state = [], {}
    for r in cap.rows:
        state = r.get("JobState", "?")
        if state == "PENDING":
            pend.append(r.get("Reason", "None"))
        else:
            by_state.setdefault(state, []).append(r.get("JobId", "?"))
    for state, ids in by_state.items():  # one finding per state: a queue of 10k jobs is 10k ids, not findings
        shown = ",".join(ids[:10]) + (f" (+{len(ids) - 10})" if len(ids) > 10 else "")
        if state in _ENDS:
            sev, what = _ENDS[state]
        elif state in ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"):
            sev, what = "OK", state.lower()
        else:
            sev, what = "UNKNOWN", f"in state {state}"
        res.add(sev, f"slurm.job.{state.lower()}", f"{len(ids)} job(s) {state}: {shown}", f"the job {what}")
    _pending(res, pend)


def _scontrol_partitions(res: ProbeResult, cap: Any) -> None:
    for r in cap.rows:
        state = r.get("State", "?")
        sev = "OK" if state == "UP" else "WARN"
        res.add(sev, "slurm.partition", f"partition {r.get('PartitionName')} is {state} (nodes {r.get('Nodes', '?')})")


def capture_findings(res: ProbeResult, cap: Any) -> None:
    """Findings of one table read by cockpit's text readers."""
    if cap.kind.startswith("sinfo"):
        _sinfo(res, cap)
    elif cap.kind == "squeue":
        _squeue(res, cap)
    elif cap.kind == "scontrol show node":
        _scontrol_nodes(res, cap)
    elif cap.kind == "scontrol show job":
        _scontrol_jobs(res, cap)
    elif cap.kind == "scontrol show partition":
        _scontrol_partitions(res, cap)
    else:  # sprio: the priority factors are a policy, not a fault
        w = ", ".join(f"{k} {v}" for k, v in cap.weights.items())
        res.add("UNKNOWN", "slurm.recorded", f"{cap.kind}: {len(cap.rows)} row(s)" + (f"; weights {w}" if w else ""),
                "recorded; not judged")


def log_findings(res: ProbeResult, scan: Any) -> None:
    """One finding per (pattern, node); for a node's ping state only the last line counts."""
    last: dict[tuple[str, str], Any] = {}
    for ev in scan.events:
        key = ("ping" if ev.code.startswith(("slurm.log.not-responding", "slurm.log.responding")) else ev.code,
               ev.node or "")
        prev = last.pop(key, None)
        lines = (prev[1] if prev else []) + [ev.line]
        last[key] = (ev if key[0] == "ping" or prev is None else prev[0], lines)
    for ev, lines in last.values():
        res.add(ev.severity, ev.code, ev.title, f"{len(lines)} line(s)" if len(lines) > 1 else "", evidence=lines[:5])
    if not last:
        res.add("UNKNOWN", "slurm.log.none", f"{scan.daemon_lines} Slurm log line(s), none that cockpit judges",
                "recorded; not judged")


def sched_findings(res: ProbeResult, stats: Any) -> None:
    judged = judge_scheduler(stats)
    for j in judged:
        res.add(j.severity, j.code, j.title, j.detail)
    if not judged:
        res.add("UNKNOWN", "sched.none", f"{stats.source}: read, but it carries nothing cockpit judges")
