"""Slurm's text outputs -> cockpit.models. Pure functions, no I/O.

Public API (all raise only :class:`cockpit.errors.ParseError`):

- ``parse_topology(text, source="scontrol show topology") -> Topology``
  tree (``SwitchName=s0 Level=0 LinkSpeed=1 Nodes=tux[0-3]`` / ``Switches=...``)
  or block (``BlockName=b1 BlockIndex=0 Nodes=... BlockSize=32``, also
  ``AggregatedBlock=``). Empty output or none of those lines -> kind "none".
- ``parse_topology_conf(text, source="topology.conf") -> Topology`` for the file.
- ``parse_scontrol_kv(text, source="scontrol show") -> tuple[dict[str, str], ...]``
  one dict per record of ``scontrol [-d] show job|node``; a key repeated inside
  a record keeps its first value (use ``scontrol_lines`` for every line).
- ``scontrol_lines(text, source) -> list[list[list[tuple[str, str]]]]``
  records -> lines -> (key, value) pairs, in order; ``scontrol_records`` the
  same, keeping the other records when one cannot be read (named, with why).
- ``parse_scontrol_partitions(text, source) -> tuple[Partition, ...]`` from
  ``scontrol show partition`` (the only 23.02+ source of the Default flag: the
  grouped ``sinfo --json`` partition objects lack it).
- ``duration_minutes(text) -> int | None``: ``UNLIMITED``/``1-02:03:04``/``01:00:00``.
- ``gres_from_scontrol_detail(text, source) -> ScontrolGres``: job GPU indexes
  per node from ``scontrol -d show job`` (``Nodes=... GRES=gpu:h100:2(IDX:0-1)``
  lines) and node GPUs from ``scontrol -d show node`` (``Gres=``, ``GresUsed=``).
"""

from __future__ import annotations

import re
from typing import Any
from dataclasses import dataclass, field

from cockpit.backends.slurm_json_common import expand_nodes, read_each
from cockpit.backends.slurm_json_gres import gpu_items
from cockpit.backends.slurm_json_nodes import gpu_groups
from cockpit.errors import ParseError
from cockpit.models.cluster import Block, GpuGroup, JobGpus, Partition, Switch, Topology

# Keys whose value runs to the end of the line (they may contain spaces and '=').
_REST_OF_LINE = frozenset(
    {"Reason", "Command", "WorkDir", "StdErr", "StdIn", "StdOut", "Comment",
     "AdminComment", "SystemComment", "OS", "Extra", "Dependency", "Comment"}
)
_KEY_AT = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/.]*)=")
# A line that is one CamelCase key, ':' and a value without spaces or '=': some Slurm
# versions print "NtasksPerTRES:0" so (tests/data/slurm-text/scontrol-show-job-bih-4011580-*;
# the current source prints "NtasksPerTRES=%u").
_COLON_PAIR = re.compile(r"^([A-Z][A-Za-z]+):([^\s=:]+)$")


def _line_pairs(line: str, source: str) -> list[tuple[str, str]]:
    s = line.strip()
    if not s:
        return []
    key, eq, rest = s.partition("=")
    if eq and key in _REST_OF_LINE:
        return [(key, rest)]
    slip = _COLON_PAIR.match(s)
    if slip:  # Slurm's own "NtasksPerTRES:0" (a ':' for the '='): read as the pair it means
        return [(slip.group(1), slip.group(2))]
    marks = list(_KEY_AT.finditer(s))
    if not marks or marks[0].start(1) != 0:
        raise ParseError(source, f"line is not Key=Value: {s[:80]!r}")
    pairs = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(s)
        pairs.append((m.group(1), s[m.end():end].strip()))
    return pairs


def _raw_records(text: str) -> list[list[str]]:
    out: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith("No ") and "=" not in line:
            continue  # "No jobs in the system" and the like
        if not out or not line[0].isspace():
            out.append([])
        out[-1].append(line)
    return out


def scontrol_records(text: str, source: str = "scontrol show"
                     ) -> tuple[list[list[list[tuple[str, str]]]], list[tuple[str, str]]]:
    """:func:`scontrol_lines` one record at a time: a record with a line that is not
    ``Key=Value`` costs that record only. Returns the records read and, for each one
    left out, (its name: the value of its first key, ``7`` of ``JobId=7``; and why)."""
    if not isinstance(text, str):
        raise ParseError(source, f"expected text, got {type(text).__name__}")
    good: list[list[list[tuple[str, str]]]] = []
    bad: list[tuple[str, str]] = []
    for raw in _raw_records(text):
        try:
            good.append([_line_pairs(line, source) for line in raw])
        except ParseError as exc:
            bad.append((raw[0].split()[0].split("=", 1)[-1][:60], exc.detail))
    return good, bad


def scontrol_lines(text: str, source: str = "scontrol show") -> list[list[list[tuple[str, str]]]]:
    """Records -> lines -> (key, value) pairs. Raises ParseError for a line
    that is not ``Key=Value`` (:func:`scontrol_records` keeps the other records).

    A record starts at a line without indentation (``JobId=``, ``NodeName=``);
    indented lines continue it. Blank lines are ignored rather than trusted as
    separators: 24.11 puts a whitespace-only line inside a node record, before
    ``Reason=``. This also reads ``scontrol -o`` (one record per line).
    """
    good, bad = scontrol_records(text, source)
    if bad:
        raise ParseError(source, bad[0][1])
    return good


def first_values(rec: list[list[tuple[str, str]]]) -> dict[str, str]:
    """One record's keys -> values; a key repeated inside the record keeps its first value."""
    d: dict[str, str] = {}
    for line in rec:
        for k, v in line:
            d.setdefault(k, v)
    return d


def parse_scontrol_kv(text: str, source: str = "scontrol show") -> tuple[dict[str, str], ...]:
    """One dict per ``scontrol show`` record; the first value of a key wins."""
    return tuple(first_values(rec) for rec in scontrol_lines(text, source))


@dataclass(frozen=True)
class ScontrolGres:
    """GPUs read from ``scontrol -d show job`` / ``-d show node`` text."""

    jobs: dict[int, tuple[JobGpus, ...]] = field(default_factory=dict)
    nodes: dict[str, tuple[GpuGroup, ...]] = field(default_factory=dict)


def gres_from_scontrol_detail(text: str, source: str = "scontrol -d show") -> ScontrolGres:
    """Job GPU indexes per node and node GPU totals/use from ``-d`` text.

    Works on ``scontrol -d show job`` and ``scontrol -d show node`` output (or
    both concatenated). Raises ParseError for malformed records.
    """
    jobs: dict[int, tuple[JobGpus, ...]] = {}
    nodes: dict[str, tuple[GpuGroup, ...]] = {}
    for rec in scontrol_lines(text, source):
        first = rec[0][0][0] if rec and rec[0] else ""
        if first == "JobId":
            job_id, gpus = _job_detail(rec, source)
            jobs[job_id] = gpus
        elif first == "NodeName":
            d = {k: v for line in rec for k, v in line}
            name = d["NodeName"]
            nodes[name] = gpu_groups(d.get("Gres", ""), d.get("GresUsed", ""), source)
    return ScontrolGres(jobs=jobs, nodes=nodes)


def _job_detail(rec: list[list[tuple[str, str]]], source: str) -> tuple[int, tuple[JobGpus, ...]]:
    raw_id = rec[0][0][1]
    if not raw_id.isdecimal():
        raise ParseError(source, f"JobId is not a number: {raw_id!r}")
    out: list[JobGpus] = []
    for line in rec:
        d = dict(line)
        if "Nodes" not in d or "GRES" not in d:
            continue
        items = gpu_items(d["GRES"], source)
        for node in expand_nodes(d["Nodes"], "Nodes", source):
            for it in items:
                idx = it.indexes or ()
                count = it.count if it.count is not None else len(idx)
                if count or idx:  # "gpu:1g.10gb:0(IDX:)": a type of the node the job holds none of
                    out.append(JobGpus(node=node, type=it.type, count=count, indexes=idx))
    return int(raw_id), tuple(out)


def _int(value: str | None, key: str, source: str) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdecimal():
        raise ParseError(source, f"{key}={value!r} is not a number")
    return int(value)


def _topology_records(text: str, source: str) -> list[dict[str, str]]:
    if not isinstance(text, str):
        raise ParseError(source, f"expected text, got {type(text).__name__}")
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if "=" not in line:
            continue
        rec: dict[str, str] = {}
        for tok in line.split():
            k, eq, v = tok.partition("=")
            if not eq:
                raise ParseError(source, f"token {tok!r} is not Key=Value in line {line[:80]!r}")
            rec[k.lower()] = v
        out.append(rec)
    return out


def parse_topology(text: str, source: str = "scontrol show topology") -> Topology:
    """A :class:`Topology` from ``scontrol show topology`` (tree or block)."""
    recs = _topology_records(text, source)
    if any("blockname" in r or "aggregatedblock" in r for r in recs):
        return _blocks(recs, source)
    switches = [r for r in recs if "switchname" in r]
    if not switches:
        return Topology()
    return _tree(switches, source)


def parse_topology_conf(text: str, source: str = "topology.conf") -> Topology:
    """A :class:`Topology` from a topology.conf file (tree or block plugin).

    Levels are not in the file: leaves are level 0, a parent one above its
    highest child.
    """
    return parse_topology(text, source)


def _tree(recs: list[dict[str, str]], source: str) -> Topology:
    raw = []
    for r in recs:
        name = r["switchname"]
        if not name:
            raise ParseError(source, "SwitchName is empty")
        raw.append((
            name,
            _int(r.get("level"), "Level", source),
            expand_nodes(r.get("nodes", ""), "Nodes", source),
            expand_nodes(r.get("switches", ""), "Switches", source),
            _int(r.get("linkspeed"), "LinkSpeed", source),
        ))
    children = {name: sws for name, _, _, sws, _ in raw}
    direct = {name: nodes for name, _, nodes, _, _ in raw}
    levels = _levels(children, source)
    out = []
    for name, level, nodes, sws, speed in raw:
        # scontrol lists every node below an upper switch; keep direct ones only
        below = {n for c in sws for n in _all_nodes(c, children, direct, set())}
        own = tuple(n for n in nodes if n not in below)
        out.append(Switch(name=name, level=level if level is not None else levels[name],
                          nodes=own, switches=sws, link_speed=speed))
    return Topology(kind="tree", switches=tuple(out))


def _all_nodes(sw: str, children: dict, direct: dict, seen: set) -> set[str]:
    if sw in seen:
        return set()
    seen.add(sw)
    out = set(direct.get(sw, ()))
    for c in children.get(sw, ()):
        out |= _all_nodes(c, children, direct, seen)
    return out


def _levels(children: dict[str, tuple[str, ...]], source: str) -> dict[str, int]:
    memo: dict[str, int] = {}

    def level(name: str, path: tuple[str, ...]) -> int:
        if name in path:
            raise ParseError(source, f"switch loop through {name!r}")
        if name not in memo:
            kids = [k for k in children.get(name, ()) if k in children]
            memo[name] = 1 + max((level(k, path + (name,)) for k in kids), default=-1)
        return memo[name]

    for n in children:
        level(n, ())
    return memo


def _blocks(recs: list[dict[str, str]], source: str) -> Topology:
    base, agg = [], []
    for r in recs:
        name = r.get("blockname") or r.get("aggregatedblock")
        if not name:
            continue
        blk = Block(
            name=name,
            nodes=expand_nodes(r.get("nodes", ""), "Nodes", source),
            index=_int(r.get("blockindex"), "BlockIndex", source),
            size=_int(r.get("blocksize"), "BlockSize", source),
        )
        (base if "blockname" in r else agg).append(blk)
    # Base blocks first: Topology.leaf_of returns the first block holding a node.
    return Topology(kind="block", blocks=tuple(base + agg))


def duration_minutes(value: str, source: str = "scontrol") -> int | None:
    """Slurm's ``[days-]hours:minutes:seconds`` (or ``minutes``) in whole
    minutes; ``UNLIMITED``/``INFINITE``/``NONE``/``N/A`` give None. Raises ParseError."""
    v = value.strip()
    if v.upper() in ("UNLIMITED", "INFINITE", "NONE", "N/A", ""):
        return None
    days, dash, rest = v.partition("-")
    if not dash:
        days, rest = "0", v
    parts = rest.split(":")
    if not days.isdecimal() or not all(p.isdecimal() for p in parts) or len(parts) > 3:
        raise ParseError(source, f"bad time {value!r}")
    nums = [int(p) for p in parts]
    if len(parts) == 1 and not dash:
        return nums[0]  # plain minutes
    if not dash and len(nums) == 2:
        h, m, sec = 0, nums[0], nums[1]  # MM:SS
    else:
        h, m, sec = (nums + [0, 0])[:3]
    del sec  # limits are whole minutes in the models; seconds are dropped
    return int(days) * 1440 + h * 60 + m


def parse_scontrol_partitions(text: str, source: str = "scontrol show partition",
                              warnings: list[str] | None = None) -> tuple[Partition, ...]:
    """Partitions from ``scontrol show partition`` text. Raises ParseError; with a
    ``warnings`` list, a partition that cannot be read is one warning naming it."""
    return read_scontrol(text, "partition", "PartitionName", source, _partition_of, warnings)


def read_scontrol(text: str, kind: str, key: str, source: str, build: Any,
                  warnings: list[str] | None) -> tuple[Any, ...]:
    """``build(name, record, source)`` for each ``scontrol show`` record named by
    ``key``; one that cannot be read costs that record only (see ``read_each``)."""
    def one(rec: dict[str, str]) -> Any:
        name = rec.get(key)
        if not name:
            raise ParseError(source, f"a record has no {key}")
        try:
            return build(name, rec, source)
        except ParseError as exc:
            raise ParseError(source, f"{kind} {name}: {exc.detail}") from None

    return read_each(list(parse_scontrol_kv(text, source)), kind, source, one, warnings, key)


def _partition_of(name: str, rec: dict[str, str], source: str) -> Partition:
    nodes = rec.get("Nodes", "")
    return Partition(
        name=name,
        nodes=expand_nodes(nodes if nodes != "(null)" else "", "Nodes", source),
        state=rec.get("State", "UP").upper(),
        is_default=rec.get("Default", "NO").upper() == "YES",
        max_time=duration_minutes(rec.get("MaxTime", "UNLIMITED"), source),
        total_cpus=_int(rec.get("TotalCPUs", "0"), "TotalCPUs", source) or 0,
    )
