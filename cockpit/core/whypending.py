"""Why is this job pending? Slurm's reason, explained with the sprio breakdown,
the limits it hits (with their current usage), a reservation or maintenance
window its time limit crosses, the dependency it waits on, and where the
largest free block of the GPUs it asks for is. ``squeue --start`` (a backfill
simulation in the controller) only when asked. No Textual.

Each part that cannot be asked (no slurmdbd, priority/basic, a command that
failed) becomes one line in ``notes``; the rest is still explained.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cockpit.core.accounting import AccountingUnavailable, require_accounting, scheduling_of
from cockpit.core.whyparts import (
    Asks, asks_from_detail, candidates, dependency, free_blocks, limit_findings, parse_dependency,
    reservation_findings, when,
)
from cockpit.errors import BackendError, CommandFailed, ParseError, UsageError
from cockpit.hostlist import collapse
from cockpit.models.accounting_reports import WhyPending

_HELD = {"JobHeldUser": "held by its user", "JobHeldAdmin": "held by an operator"}


async def _detail(sched: Any, job_id: str) -> dict[str, str]:
    try:
        return await sched.job_detail(job_id)
    except CommandFailed as err:
        if "invalid job id" in err.stderr.lower():
            raise UsageError(f"job {job_id}: Slurm does not know it (finished over MinJobAge ago? try cockpit job show {job_id})") from None
        raise


async def why_pending(backend: Any, job_id: str, now: float, *, start_estimate: bool = False) -> WhyPending:
    """Explain one pending job. Raises UsageError for an unknown or non-pending job,
    BackendError when Slurm cannot be asked at all."""
    if not job_id.replace("_", "").isdecimal():
        raise UsageError(f"job id {job_id!r}: expected a number such as 123 or 123_4")
    sched = await scheduling_of(backend)
    if sched is None:
        raise UsageError(f"the {backend.name} backend cannot ask Slurm why a job waits")
    asks = asks_from_detail(job_id, await _detail(sched, job_id))
    if asks.state != "PENDING":
        raise UsageError(f"job {job_id} is {asks.state or 'not known'}, not pending: nothing to explain"
                         f" (cockpit job show {job_id})")
    nodes, parts, topo = await asyncio.gather(backend.fetch_nodes(), backend.fetch_partitions(), backend.fetch_topology())
    notes: list[str] = []
    costs: list = []
    cand = candidates(asks, {p.name: p.nodes for p in parts})
    prio, ahead, weights = await _priority(sched, job_id, asks, notes, costs)
    limits = await _limits(backend, asks, notes, costs)
    try:
        res = await sched.reservations()
        costs += res.costs
        reservations = reservation_findings(res.items, cand, asks, now, now)
    except (BackendError, ParseError) as err:
        notes.append(f"reservations: {err}")
        reservations = ()
    deps = tuple([dependency(k, j, st, await _state(backend, j)) for k, j, st in parse_dependency(asks.dependency)])
    blocks = free_blocks(nodes, topo, cand, asks) if asks.gpus_per_node else ()
    est, est_nodes = None, ""
    if start_estimate:
        try:
            est, est_nodes, cost = await sched.start_estimate(job_id)
            costs.append(cost)
        except (BackendError, ParseError) as err:
            notes.append(f"start estimate: {err}")
    summary = _summary(asks, limits, reservations, deps, blocks, ahead, now)
    return WhyPending(job_id=job_id, state=asks.state, reason=asks.reason, summary=summary, asks=asks.describe(),
                      priority=prio, ahead=ahead, weights=weights, limits=limits, reservations=reservations,
                      dependencies=deps, free_blocks=blocks, start_estimate=est, start_nodes=est_nodes,
                      notes=tuple(notes), costs=tuple(costs))


async def _priority(sched, job_id, asks: Asks, notes, costs):
    try:
        mine = await sched.priority((int(job_id.split("_")[0]),))
        costs += mine.costs
        prio = next((p for p in mine.items if str(p.job_id) == job_id.split("_")[0]), None)
        if prio is None:
            notes.append(f"priority: sprio lists no factors for it (not eligible yet: {asks.reason or '?'})")
        ahead = None
        if prio is not None and asks.partitions:
            everyone = await sched.priority(partition=asks.partitions[0])
            costs += everyone.costs
            ahead = sum(1 for p in everyone.items if p.priority > prio.priority and p.job_id != prio.job_id)
        return prio, ahead, await sched.weights()
    except (BackendError, ParseError) as err:
        notes.append(f"priority: {err}")
        return None, None, {}


async def _limits(backend, asks: Asks, notes, costs):
    try:
        acct = await require_accounting(backend)
    except AccountingUnavailable as err:
        notes.append(f"limits: {err}")
        return ()
    try:
        state, cost = await acct.limits(qos=(asks.qos,) if asks.qos else (), users=(asks.user,) if asks.user else (),
                                        accounts=(asks.account,) if asks.account else ())
    except (BackendError, ParseError) as err:
        notes.append(f"limits: {err}")
        return ()
    costs += cost
    return limit_findings(state, asks)


async def _state(backend, job: str) -> str:
    ask = backend.capabilities().inspection
    if not job or ask is None:
        return ""
    try:
        return (await ask.job_state(job))[0]
    except (BackendError, ParseError):
        return ""


def _summary(asks: Asks, limits, reservations, deps, blocks, ahead, now) -> str:
    r = asks.reason
    blocking = [f for f in limits if f.blocks]
    if r.startswith(("QOS", "Assoc")) and blocking:
        return f"held back by a limit: {blocking[0].text.removesuffix(' -> holds it back')}"
    if r.startswith(("QOS", "Assoc")):
        return f"held back by a limit ({r}); the limits that apply are listed below"
    if r == "Dependency" and deps:
        return "; ".join(d.text for d in deps)
    if r in _HELD:
        return f"{_HELD[r]}: it starts only once released (cockpit job release {asks.job_id})"
    # A reservation is the cause where it covers every node the job may use, or where
    # Slurm's reason says a node is not available; elsewhere it is one more finding.
    everywhere = [f for f in reservations if f.all_nodes]
    if everywhere and (r.startswith("ReqNodeNotAvail") or "Reserv" in r or r in ("Resources", "Priority")):
        return everywhere[0].text
    if reservations and (r.startswith("ReqNodeNotAvail") or "Reserv" in r):
        return reservations[0].text
    if r == "Priority":
        return f"{ahead} job(s) of higher priority wait in partition {asks.partitions[0]}" if ahead is not None \
            else "jobs of higher priority wait before it"
    if r in ("Resources", "Nodes_required") or r.startswith("ReqNodeNotAvail"):
        fits = [b for b in blocks if b.fits and b.kind != "node"] or [b for b in blocks if b.fits]
        if asks.gpus_per_node and not fits:
            best = blocks[0] if blocks else None
            where = f"; the largest free block: {best.kind} {best.name} with {best.free_gpus} GPU(s) free" \
                f" ({best.nodes_that_fit} node(s) with {asks.gpus_per_node})" if best else "; no usable node has GPUs free"
            return f"not enough free GPUs: it asks {asks.min_nodes} node(s) x {asks.gpus_per_node}{where}"
        if fits:
            return f"waits for the scheduler ({r}): {fits[0].kind} {fits[0].name} ({collapse(fits[0].nodes)}) has room now"
    if r == "BeginTime":
        return "not eligible before its begin time"
    return f"Slurm's reason: {r or 'none given'}"


__all__ = ["why_pending", "when"]
