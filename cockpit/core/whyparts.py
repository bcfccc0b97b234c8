"""The pure parts of "why is this job pending?": what the job asks for, the limits
it runs into, the reservations its time limit crosses, its dependencies and the
largest free block of the GPUs it asks for. No I/O, no Textual."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from cockpit.backends.accounting_text import parse_tres
from cockpit.backends.slurm_text import duration_minutes
from cockpit.errors import ParseError
from cockpit.hostlist import collapse, expand
from cockpit.models import Node, Topology
from cockpit.models.accounting import Limit, LimitsState, Reservation
from cockpit.models.accounting_reports import Dependency, FreeBlock, LimitFinding, ReservationFinding

_NULL = ("", "(null)", "N/A", "None")


@dataclass(frozen=True, slots=True)
class Asks:
    """What a pending job asks for, from ``scontrol show job``."""

    job_id: str
    user: str
    uid: str
    account: str
    qos: str
    partitions: tuple[str, ...]
    min_nodes: int
    gpus_per_node: int
    gpu_type: str | None
    time_limit: int | None  # minutes; None = unlimited
    req_tres: dict
    req_nodes: tuple[str, ...]
    exc_nodes: tuple[str, ...]
    reservation: str
    dependency: str
    reason: str
    state: str

    def describe(self) -> str:
        gpus = f" x {self.gpus_per_node} GPUs" + (f" ({self.gpu_type})" if self.gpu_type else "") if self.gpus_per_node else ""
        limit = "no time limit" if self.time_limit is None else f"time limit {_minutes(self.time_limit)}"
        return (f"{self.min_nodes} node(s){gpus}, {limit}, partition {','.join(self.partitions) or '?'}"
                + (f", QOS {self.qos}" if self.qos else "") + (f", account {self.account}" if self.account else ""))


_GPU_PER_NODE = re.compile(r"^gres[/:]gpu(?::([A-Za-z0-9_.-]+))?:(\d+)$")


def asks_from_detail(job_id: str, d: dict[str, str]) -> Asks:
    """Raises ParseError for values scontrol should not print."""
    per_node, gtype = 0, None
    for item in (d.get("TresPerNode") or "").split(","):
        m = _GPU_PER_NODE.match(item.strip())
        if m:
            gtype, per_node = m.group(1), per_node + int(m.group(2))
    # 24.11 prints ReqTRES for a pending job, 22.05 TRES.
    tres = _v(d.get("ReqTRES")) or _v(d.get("TRES"))
    req = parse_tres(tres, "scontrol show job")
    nodes_field = (d.get("NumNodes") or "1").split("-")[0]
    min_nodes = int(nodes_field) if nodes_field.isdecimal() else 1
    if not per_node and req.get("gres/gpu"):
        per_node = int(req["gres/gpu"] // max(min_nodes, 1))
    user, _, uid = (d.get("UserId") or "").partition("(")
    return Asks(
        job_id=job_id, user=user, uid=uid.rstrip(")"), account=_v(d.get("Account")), qos=_v(d.get("QOS")),
        partitions=tuple(p for p in _v(d.get("Partition")).split(",") if p), min_nodes=min_nodes,
        gpus_per_node=per_node, gpu_type=gtype, time_limit=duration_minutes(d.get("TimeLimit", "UNLIMITED")),
        req_tres=req, req_nodes=_nodes(d.get("ReqNodeList")), exc_nodes=_nodes(d.get("ExcNodeList")),
        reservation=_v(d.get("Reservation")), dependency=_v(d.get("Dependency")), reason=_v(d.get("Reason")),
        state=_v(d.get("JobState")).upper(),
    )


def _v(value: str | None) -> str:
    return "" if value is None or value.strip() in _NULL else value.strip()


def _nodes(value: str | None) -> tuple[str, ...]:
    v = _v(value)
    try:
        return expand(v) if v else ()
    except Exception:  # noqa: BLE001 - ClusterShell raises assorted errors
        raise ParseError("scontrol show job", f"bad node list {v[:40]!r}") from None


def _minutes(m: float) -> str:
    if m >= 1440 and m % 1440 == 0:
        return f"{m / 1440:.0f} d"
    if m >= 60:
        return f"{m / 60:.1f} h".replace(".0 h", " h")
    return f"{m:.0f} min"


def when(epoch: float, now: float) -> str:
    delta = epoch - now
    rel = f"in {_minutes(delta / 60)}" if delta >= 0 else f"{_minutes(-delta / 60)} ago"
    return f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(epoch))} ({rel})"


# -- limits ----------------------------------------------------------------------
_RES_WORDS = {"GRES": "gres/", "GPU": "gres/gpu", "Cpu": "cpu", "Mem": "mem", "Node": "node", "Billing": "billing", "Energy": "energy"}
_PER = {"PerUser": "PU", "PerAccount": "PA", "PerJob": "PJ", "PerNode": "PN"}


def reason_names(reason: str, scope: str, lim: Limit) -> bool:
    """Does Slurm's reason (``QOSMaxGRESPerUser``, ``AssocGrpCpuLimit`` ...) name this limit?"""
    if not reason.startswith(scope):
        return False
    r = reason[len(scope):]
    if r[:3] not in ("Grp", "Max", "Min") or r[:3] != lim.key[:3]:
        return False
    per = next((v for k, v in _PER.items() if k in r), "")
    key_per = lim.key[-2:] if lim.key[-2:] in _PER.values() else ""
    if per != key_per:
        return False
    if "Jobs" in r or "SubmitJob" in r or "Wall" in r:
        word = "Submit" if "SubmitJob" in r else "Wall" if "Wall" in r else "Jobs"
        return word in lim.key and not lim.tres
    if ("RunMin" in r) != ("RunMins" in lim.key) or (("Min" in r[3:] and "RunMin" not in r) != ("TRESMins" in lim.key)):
        return False
    res = next((v for k, v in _RES_WORDS.items() if k in r), None)
    return bool(res and lim.tres.startswith(res) and "TRES" in lim.key)


def _asks_for(lim: Limit, asks: Asks) -> float | None:
    if "Jobs" in lim.key or "Submit" in lim.key:
        return 1.0
    if "Wall" in lim.key:
        return None if asks.time_limit is None else float(asks.time_limit)
    if lim.tres and "Mins" not in lim.key:
        return asks.req_tres.get(lim.tres)
    return None


def limit_findings(state: LimitsState, asks: Asks) -> tuple[LimitFinding, ...]:
    """The set limits of the job's QOS and associations, each with its usage."""
    out = []
    groups = []
    for q in state.qos:
        if q.name == asks.qos:
            groups.append((f"QOS {q.name}", "QOS", "QOS", q.limits))
            # 24.11 names the user ("root(0)" -> root), 22.05 gives only the uid.
            mine = q.per_user.get(asks.user) or q.per_user.get(asks.uid, ())
            groups.append((f"QOS {q.name}", f"user {asks.user}", "QOS", mine))
            groups.append((f"QOS {q.name}", f"account {asks.account}", "QOS", q.per_account.get(asks.account, ())))
    for a in state.assocs:
        if a.account == asks.account and a.user in (asks.user, ""):
            who = f"{a.account}/{a.user}" if a.user else a.account
            groups.append((f"association {who}", "association", "Assoc", a.limits))
    for scope, per, word, limits in groups:
        for lim in limits:
            want = _asks_for(lim, asks)
            per_job = lim.key.endswith(("PJ", "PN"))
            over = (want or 0) > lim.limit if per_job else (lim.used or 0) + (want or 0) > lim.limit
            named = reason_names(asks.reason, word, lim)
            what = f"{lim.key} {lim.tres + '=' if lim.tres else ''}{lim.limit:g}"
            used = "" if lim.used is None or per_job else f", {per} uses {lim.used:g}"
            asked = "" if want is None else f", this job asks {want:g}"
            verdict = " -> holds it back" if (over or named) else ""
            out.append(LimitFinding(scope, per, lim, want, over or named, f"{scope}: {what}{used}{asked}{verdict}"))
    return tuple(sorted(out, key=lambda f: not f.blocks))


# -- reservations ------------------------------------------------------------------
def reservation_findings(res: tuple[Reservation, ...], candidates: tuple[str, ...], asks: Asks,
                         start_at: float, now: float) -> tuple[ReservationFinding, ...]:
    """Reservations on the job's candidate nodes that its time limit crosses."""
    out = []
    cand = set(candidates)
    job_end = float("inf") if asks.time_limit is None else start_at + asks.time_limit * 60
    for r in res:
        if r.name == asks.reservation or (r.end is not None and r.end <= now):
            continue
        covered = tuple(n for n in r.nodes if n in cand)
        if not covered:
            continue
        if r.start is not None and r.start >= job_end:
            continue
        kind = "maintenance reservation" if r.is_maintenance else "reservation"
        all_nodes = set(covered) >= cand
        span = f"{collapse(covered)}, from {when(r.start, now)}" if r.start else collapse(covered)
        if r.end:
            span += f" until {time.strftime('%H:%M', time.localtime(r.end))}"
        if r.start is not None and r.start > now:
            limit = "no time limit" if asks.time_limit is None else f"its time limit ({_minutes(asks.time_limit)})"
            head = f"{limit} crosses {kind} {r.name} ({span})"
            fix = (f": no node it may use is outside it, so it waits for the reservation's end, or starts now "
                   f"with a time limit under {_minutes(max(1, (r.start - now) // 60))}") if all_nodes else \
                f": it cannot run on {collapse(covered)} before the reservation"
        else:
            head = f"{kind} {r.name} holds {span}"
            fix = ": every node it may use is reserved" if all_nodes else ""
        out.append(ReservationFinding(r, covered, all_nodes, head + fix))
    return tuple(out)


# -- dependencies ------------------------------------------------------------------
_DEP = re.compile(r"(after\w*|singleton)(?::([\d_:+]+))?(?:\((\w+)\))?")


def parse_dependency(text: str) -> list[tuple[str, str, str]]:
    """``afterok:22(unfulfilled),afterany:23_1(unfulfilled)`` -> [(kind, job, status)]."""
    out = []
    for part in re.split(r"[,?]", text):
        m = _DEP.fullmatch(part.strip())
        if not m:
            continue
        kind, jobs, status = m.group(1), m.group(2) or "", m.group(3) or ""
        for job in (jobs.split(":") if jobs else [""]):
            if job:
                out.append((kind, job.split("+")[0], status))
            elif kind == "singleton":
                out.append((kind, "", status))
    return out


def dependency(kind: str, job: str, status: str, state: str) -> Dependency:
    done = status.lower() not in ("unfulfilled", "")
    if kind == "singleton":
        text = "singleton: waits until no other job of this user has its name"
    else:
        text = f"waits on job {job} ({kind}): " + (state.lower() if state else "state unknown")
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "GONE") and not done:
            text += " (the dependency can no longer be met: cancel or fix it)" if kind == "afterok" and state != "COMPLETED" else ""
    return Dependency(kind, job, state, done, text)


# -- free blocks -----------------------------------------------------------------------
def _free(node: Node, gtype: str | None) -> int:
    # Slurm gives a job asking gpu (or gpu:1g.10gb) a MIG slice as it gives a whole GPU
    return sum(g.count - g.alloc_count for g in node.gpus + node.mig if gtype is None or g.type == gtype)


def free_blocks(nodes: tuple[Node, ...], topology: Topology, candidates: tuple[str, ...],
                asks: Asks) -> tuple[FreeBlock, ...]:
    """Free GPUs of the asked type per leaf switch or block, and the best node (its
    NVLink domain), largest first."""
    cand = set(candidates)
    usable = {n.name: n for n in nodes if n.name in cand and not n.is_unavailable}
    groups: list[tuple[str, str, tuple[str, ...]]] = []
    if topology.blocks:
        groups = [("block", b.name, b.nodes) for b in topology.blocks]
    elif topology.switches:
        groups = [("leaf switch", s.name, s.nodes) for s in topology.switches if s.nodes]
    out = []
    need = max(asks.gpus_per_node, 1)
    for kind, name, members in groups:
        inside = [usable[n] for n in members if n in usable]
        if not inside:
            continue
        free = [_free(n, asks.gpu_type) for n in inside]
        fit = sum(1 for f in free if f >= need)
        out.append(FreeBlock(kind, name, tuple(n.name for n in inside), sum(free), fit, fit >= asks.min_nodes))
    if usable:
        best = max(usable.values(), key=lambda n: (_free(n, asks.gpu_type), n.name))
        f = _free(best, asks.gpu_type)
        out.append(FreeBlock("node", best.name, (best.name,), f, int(f >= need), f >= need and asks.min_nodes <= 1))
    return tuple(sorted(out, key=lambda b: (b.kind == "node", -b.nodes_that_fit, -b.free_gpus)))


def candidates(asks: Asks, partition_nodes: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The nodes the job may run on: its partitions' nodes, narrowed by -w and -x."""
    names: list[str] = []
    for p in asks.partitions:
        names += [n for n in partition_nodes.get(p, ()) if n not in names]
    if asks.req_nodes:
        names = [n for n in names if n in asks.req_nodes] or list(asks.req_nodes)
    return tuple(n for n in names if n not in asks.exc_nodes)
