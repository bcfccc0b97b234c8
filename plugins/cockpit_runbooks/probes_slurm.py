"""Saved Slurm outputs in a post-mortem (--slurm-file FILE): how the job ended
(seff, sacct), fair share (sshare), controller load (sdiag text, --json or
/metrics), the reservations that held nodes (scontrol show reservation), and
the text operators paste into tickets: sinfo, squeue, sprio, scontrol show
node|job|partition, slurmctld/slurmd log excerpts (probes_slurmtext). The live
versions belong to the backend; this probe reads copies only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cockpit.plugins.api import ParseError, UsageError, expand

from . import probes_slurmtext, slurmfiles
from .context import NotApplicable, ProbeResult, RunContext
from .probes_node import read_files

# Job end states and what they say (sacct(1) JOB STATE CODES).
_ENDS = {
    "COMPLETED": ("OK", "completed"),
    "FAILED": ("WARN", "failed (non-zero exit)"),
    "TIMEOUT": ("WARN", "hit its time limit"),
    "OUT_OF_MEMORY": ("WARN", "ran out of memory"),
    "CANCELLED": ("WARN", "was cancelled"),
    "PREEMPTED": ("WARN", "was preempted"),
    "NODE_FAIL": ("CRIT", "ended because a node failed"),
    "BOOT_FAIL": ("CRIT", "could not boot its nodes"),
    "DEADLINE": ("WARN", "passed its deadline"),
}


def _jobs(res: ProbeResult, f: slurmfiles.SlurmFile) -> None:
    for j in f.jobs:
        if "." in j.job_id and j.state == "COMPLETED":
            continue  # completed steps add nothing to their job's line
        sev, what = _ENDS.get(j.state.rstrip("+"), ("UNKNOWN", f"is in state {j.state}"))
        code = f" (exit code {j.exit_code})" if j.exit_code else ""
        res.add(sev, f"slurm.job.{j.state.lower().rstrip('+')}", f"job {j.job_id} {what}{code}" + (f" on {j.nodes}" if j.nodes and j.nodes != "None assigned" else ""),
                evidence=[f"{k}: {v}" for k, v in j.extra[:8]])
        if sev == "CRIT" and j.nodes:
            res.facts.setdefault("failed_nodes", j.nodes)


def _reservations(rc: RunContext, res: ProbeResult, f: slurmfiles.SlurmFile) -> None:
    maint = [r for r in f.reservations if "MAINT" in r.flags]
    node = rc.node
    for r in f.reservations:
        res.evidence.append(f"reservation {r.name}: {r.start} .. {r.end} flags {','.join(r.flags) or '-'} nodes {r.nodes or '-'}")
    if node:
        try:
            held = [r for r in f.reservations if r.nodes and node in expand(r.nodes)]
        except UsageError:
            held = []
        for r in held:
            sev = "WARN" if "MAINT" in r.flags else "OK"
            res.add(sev, "slurm.reservation", f"{node} is in reservation {r.name} ({r.start} .. {r.end}, {','.join(r.flags) or 'no flags'})")
        if not held:
            res.add("OK", "slurm.reservation.none", f"{node} is in none of {len(f.reservations)} reservation(s)")
    else:
        res.add("OK", "slurm.reservations", f"{len(f.reservations)} reservation(s), {len(maint)} for maintenance (MAINT)")


_NODE_KEYS = ("NODELIST", "HOSTNAMES", "NodeName")


def _row_names(row: Mapping[str, str]) -> set[str] | None:
    """The nodes a table row is about; None for a row that names none (squeue, sprio ...)."""
    value = next((row[k] for k in _NODE_KEYS if row.get(k)), None)
    if value is None:
        return None
    try:
        return set(expand(value))
    except UsageError:
        return {value}


def _about_node(res: ProbeResult, f: slurmfiles.SlurmFile, node: str) -> slurmfiles.SlurmFile | None:
    """The rows and log lines of ``f`` about ``node`` (a node runbook judges that node, not the
    whole cluster the copy shows); the others are counted as evidence only. None: the
    table names only other nodes, which is said here."""
    if f.capture is not None:
        named = [(r, _row_names(r)) for r in f.capture.rows]
        mine = [r for r, names in named if names is None or node in names]
        if len(mine) < len(named):
            res.evidence.append(f"{f.kind}: {len(named) - len(mine)} row(s) about other nodes than {node}, not judged")
        if not mine and named:
            if f.capture.kind == "sinfo -R":  # not listed there: no reason set on it
                res.add("OK", "slurm.node.no-reason", f"{node} is not listed by sinfo -R (no down or drain reason)")
            else:
                res.add("UNKNOWN", "slurm.node.absent", f"the saved {f.kind} does not list {node}", "not judged")
            return None
        return replace(f, capture=replace(f.capture, rows=mine))
    if f.log is not None:
        mine_ev = [ev for ev in f.log.events if not ev.node or node in _row_names({"NodeName": ev.node})]
        if len(mine_ev) < len(f.log.events):
            res.evidence.append(f"log: {len(f.log.events) - len(mine_ev)} line(s) about other nodes than {node}, not judged")
            if not mine_ev:
                res.add("UNKNOWN", "slurm.log.absent", f"the saved Slurm log says nothing cockpit judges about {node}",
                        "not judged")
                return None
        return replace(f, log=replace(f.log, events=mine_ev))
    return f


async def slurm_records(rc: RunContext, args: Mapping[str, Any]) -> ProbeResult:
    """Read each --slurm-file and say what it shows; n/a without one. With ``node_only``
    (the node runbooks) and ``--node``, only what the files say about that node is judged."""
    if not rc.slurm_files:
        raise NotApplicable("no --slurm-file given (saved seff, sacct, sshare, sdiag, sinfo, squeue, scontrol show, "
                            "slurmctld/slurmd log)")
    res = ProbeResult()
    for path, text in read_files(rc.slurm_files, "--slurm-file").items():
        try:
            f = slurmfiles.read(text)
        except ParseError as exc:
            res.sources.append(f"{path}: not read ({exc})")
            res.add("UNKNOWN", "slurm.unreadable", f"a --slurm-file was not read: {exc}")
            continue
        res.sources.append(f"{path}: {f.kind}")
        if args.get("node_only") and rc.node:
            f = _about_node(res, f, rc.node)
            if f is None:
                continue
        if f.jobs:
            _jobs(res, f)
        elif f.kind == "reservations":
            _reservations(rc, res, f)
        elif f.sched is not None:
            probes_slurmtext.sched_findings(res, f.sched)
        elif f.capture is not None:
            probes_slurmtext.capture_findings(res, f.capture)
        elif f.log is not None:
            probes_slurmtext.log_findings(res, f.log)
        elif f.shares:
            low = min(f.shares, key=lambda r: float(r.get("FairShare") or 1))
            res.add("UNKNOWN", "slurm.sshare", f"{len(f.shares)} association(s); lowest fair share {low.get('FairShare')} "
                    f"({(low.get('Account') or '').strip()} {low.get('User') or ''})".rstrip(), "recorded; not judged")
        else:
            res.add("UNKNOWN", "slurm.empty", f"a --slurm-file ({f.kind}) holds no record")
        if f.cut:
            res.add("UNKNOWN", "slurm.cut", f"{f.cut} {f.kind} row(s) end before their last column: the copy was cut")
        for name, why in f.capture.unread if f.capture is not None else ():
            # the words of cockpit.models.unread: one record left out, every other one read
            res.add("WARN", "slurm.unread", f"{f.kind.removeprefix('scontrol show ')} {name} not understood: {why} "
                    "(left out, the others are shown)")
    return res
