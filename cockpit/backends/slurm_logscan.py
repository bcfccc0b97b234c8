"""slurmctld / slurmd / slurmstepd log excerpts -> events. Pure, no I/O.

Each pattern is a line Slurm writes (the source file named beside it) and at
least three recordings in tests/data/slurm-text show it. Lines may carry a
``[2020-12-14T09:43:55.500]`` prefix, a syslog prefix (``Feb 16 19:30:06 HOST
slurmd[53634]: ``) or none (slurmstepd's lines in a job's output).

``scan_log(text) -> LogScan``: the events in order, and whether any line looked
like a Slurm daemon line at all (a text with none is refused by the caller).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cockpit.errors import UsageError
from cockpit.hostlist import expand

# syslog: "Feb 16 19:30:06 ip-10-1-101-117 slurmd[53634]: ..." or
# "2024-03-13T11:33:13.042151-07:00 sh02-01n60 spank-epilog[27186]: ..."
_SYSLOG = re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) (\S+) [\w.-]+(?:\[\d+\])?: ")
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT[\d:.]+)\] ")
_DAEMONISH = re.compile(r"slurm|spank|\bsched\b|_rpc_|\bJobId=|\bStepId=", re.I)


@dataclass(frozen=True, slots=True)
class Pattern:
    code: str
    severity: str  # OK, WARN, CRIT
    regex: re.Pattern[str]
    what: str  # format(**groupdict(), host=...) -> the finding's title


# Ordered: the first pattern that matches a line wins.
PATTERNS: tuple[Pattern, ...] = (
    # slurmctld/ping_nodes.c
    Pattern("slurm.log.not-responding-down", "CRIT", re.compile(r"Nodes? (?P<node>\S+) not responding, setting DOWN"),
            "{node} stopped answering slurmctld and was set DOWN"),
    Pattern("slurm.log.not-responding", "WARN", re.compile(r"error: Nodes? (?P<node>\S+) not responding$"),
            "{node} did not answer slurmctld's ping"),
    Pattern("slurm.log.responding", "OK", re.compile(r"Node (?P<node>\S+) now responding"), "{node} answers again"),
    # slurmctld: "slurmd error running JobId=N on node(s)=X: Kill task failed"; slurmd/slurmstepd: unkillable
    # step, which slurmstepd names "STEP J.S", "JOB J" (the batch step), "EXTERN STEP FOR J" (slurmstepd/req.c)
    Pattern("slurm.log.kill-task-failed", "WARN",
            re.compile(r"(?:on node\(s\)=(?P<node>\S+): Kill task failed)"
                       r"|(?:(?:JOB|STEP(?: FOR)?) (?P<step>\S+) STEPD TERMINATED ON (?P<node2>\S+) AT \S+ DUE TO JOB NOT ENDING WITH SIGNALS)"),
            "Kill task failed on {node}: a job's processes did not end after SIGKILL (UnkillableStepTimeout); "
            "Slurm drains the node"),
    # pyxis / other SPANK plugins in the epilog or prolog (slurmd's spank-epilog helper)
    Pattern("slurm.log.spank-failed", "WARN",
            re.compile(r"spank-(?P<phase>prolog|epilog).*required plugin (?P<plugin>\S+): job_(?:prolog|epilog)\(\) failed"),
            "the {phase} of SPANK plugin {plugin} failed on {host}: Slurm drains the node"),
    Pattern("slurm.log.spank-error", "WARN",
            re.compile(r"spank-(?P<phase>prolog|epilog)(?:\[\d+\])?: error: (?P<plugin>\w+): (?P<msg>.*\S)"),
            "{plugin} {phase} error on {host}: {msg}"),
    # slurmd "error: prolog failed: rc:...", srun "... failed on node X: Job prolog failed",
    # salloc "Prolog failure on node X"; the node is named before or after the words (_node_named)
    Pattern("slurm.log.prolog-failed", "WARN",
            re.compile(r"(?P<phase>[Pp]rolog|[Ee]pilog) (?:failed|failure|error)"),
            "a {phase} failed on {node}: Slurm drains the node"),
    # slurmctld/node_mgr.c: registration checks
    Pattern("slurm.log.registration-rejected", "WARN",
            # "node=X: MSG"; an older proc_req.c writes "node=X, time=N, error=MSG" (a copy in the search index)
            re.compile(r"_slurm_rpc_node_registration node=(?P<node>[^\s,:]+)(?:: |, time=\d+, error=)(?P<msg>.*\S)"),
            "slurmctld rejected the registration of {node}: {msg}"),
    Pattern("slurm.log.low-memory", "WARN",
            # "(63622 < 64000)" up to 20.02; "(63622 / 64000) < 100.00%" from 20.11 (node_mgr.c, RealMemory percent)
            re.compile(r"Node (?P<node>\S+) has low real_memory size \((?P<have>\d+) [</] (?P<want>\d+)\)"),
            "{node} registered {have} MB, less than its RealMemory={want}: Slurm drains it"),
    # node_mgr.c's other registration checks: "has low socket*core*thread count (1 < 20)",
    # "has low cpu count (1 < 20)", "has low tmp_disk size (...)"
    Pattern("slurm.log.low-resources", "WARN",
            re.compile(r"Node (?P<node>\S+) has low (?P<what>socket\*core\*thread count|cpu count|tmp_disk size)"
                       r" \((?P<have>\d+) < (?P<want>\d+)\)"),
            "{node} registered a {what} of {have}, less than slurm.conf's {want}: Slurm drains it"),
    Pattern("slurm.log.config-differs", "WARN", re.compile(r"Node configuration differs from hardware: (?P<msg>.*\S)"),
            "a node's slurm.conf definition differs from its hardware on {host}: {msg}"),
    # "transition requested for node" (node_mgr.c); "transition request for node" in a 2026 slurmctld
    # log (tests/data/slurm-text/slurmctld-nhc-176-*)
    Pattern("slurm.log.invalid-transition", "WARN",
            re.compile(r"Invalid node state transition request(?:ed)? for node (?P<node>\S+) from=(?P<src>\S+) to=(?P<dst>\S+)"),
            "an update of {node} from {src} to {dst} was refused (invalid state transition)"),
    # slurmstepd: "*** JOB J ON node CANCELLED AT T DUE TO TIME LIMIT ***"; slurmctld/job_mgr.c
    Pattern("slurm.log.time-limit", "WARN",
            re.compile(r"\*\*\* (?:JOB|STEP) (?P<job>\S+) ON (?P<node>\S+) CANCELLED AT \S+ DUE TO TIME LIMIT"),
            "job {job} on {node} hit its time limit"),
    Pattern("slurm.log.time-limit", "WARN", re.compile(r"Time limit exhausted for JobId=(?P<job>\S+)"),
            "job {job} hit its time limit"),
    # slurmstepd (task/cgroup): "Detected 1 oom_kill event in StepId=N.batch."
    Pattern("slurm.log.oom", "WARN", re.compile(r"Detected (?P<n>\d+) oom_kill events? in StepId=(?P<job>[\w.]+?)\.?(?:\s|$)"),
            "step {job} had {n} process(es) OOM-killed"),
    # slurmctld/agent.c: the DBD agent queue
    Pattern("slurm.log.agent-queue", "CRIT", re.compile(r"agent queue filling \((?P<n>\d+)\)(?:, MaxDBDMsgs=(?P<max>\d+))?"),
            "slurmctld's queue to slurmdbd holds {n} messages (limit {max}): slurmdbd is not keeping up"),
)


@dataclass(frozen=True, slots=True)
class LogEvent:
    code: str
    severity: str
    title: str
    line: str
    node: str | None = None


@dataclass
class LogScan:
    events: list[LogEvent] = field(default_factory=list)
    daemon_lines: int = 0  # lines that looked like Slurm's at all


# "failed on node hpc:", "failure on node k003-006", "node=c001": where a line names its node
# outside the words a pattern matched
_NODE_NAMED = re.compile(r"\bon node[= ](?P<node>[\w.\[\],-]*\w\]?)|\bnode=(?P<node2>[\w.\[\],-]*\w\]?)")


def _node_named(line: str) -> str | None:
    m = _NODE_NAMED.search(line)
    return (m.group("node") or m.group("node2")) if m else None


def _nodes(node: str | None) -> tuple[str | None, ...]:
    """Slurm logs several nodes as one hostlist ("Nodes q2-st-t2large-[1-2] not responding"):
    each is a node of its own. A name that is no hostlist stays as written."""
    if not node or not any(c in node for c in "[,"):
        return (node,)
    try:
        return expand(node) or (node,)
    except UsageError:
        return (node,)


def _events(p: Pattern, m: re.Match[str], host: str | None, line: str) -> list[LogEvent]:
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    if "phase" in g:
        g["phase"] = g["phase"].lower()  # salloc writes "Prolog failure", slurmd "prolog failed"
    g.setdefault("host", host or "the node")
    g.setdefault("max", "?")
    out = []
    for node in _nodes(g.get("node") or g.get("node2") or _node_named(line) or host):
        g["node"] = node or "a node"
        out.append(LogEvent(p.code, p.severity, p.what.format(**g), line, node))
    return out


def scan_log(text: str) -> LogScan:
    out = LogScan()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        sm = _SYSLOG.match(line)
        host = sm.group(1) if sm else None
        hit = next(((p, m) for p in PATTERNS if (m := p.regex.search(line))), None)
        if hit or _DAEMONISH.search(line) or _STAMP.match(line):
            out.daemon_lines += 1
        if hit:
            out.events.extend(_events(hit[0], hit[1], host, line))
    return out
