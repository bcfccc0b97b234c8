"""Fold identical outputs by node set, the way ClusterShell's clubak does.

Hosts whose output (stdout + stderr, exit code) is byte-identical are printed
once under their folded node set (``node[01-03,07]``); failures are grouped
by their error text. Output is plain text: cluster data, never markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ClusterShell.NodeSet import NodeSet

from cockpit.remote.fanout import HostResult


@dataclass(frozen=True, slots=True)
class Fold:
    nodes: str  # folded node set, e.g. node[01-04]
    count: int
    output: str
    returncode: int | None
    error: str | None


def _fold_key(r: HostResult) -> tuple:
    if r.error is not None:
        # errors name the host ("ssh node04: ..."); strip it so equal causes fold
        return ("error", r.error.replace(r.host, "%h"))
    return ("out", r.stdout + r.stderr, r.returncode)


def fold(results: Mapping[str, HostResult]) -> list[Fold]:
    """Group results into Folds; largest groups first, then by node set."""
    groups: dict[tuple, list[HostResult]] = {}
    for r in results.values():
        groups.setdefault(_fold_key(r), []).append(r)
    out = []
    for key, rs in groups.items():
        ns = str(NodeSet.fromlist([r.host for r in rs]))
        first = rs[0]
        if key[0] == "error":
            out.append(Fold(ns, len(rs), "", None, key[1].replace("%h", ns)))
        else:
            text = (first.stdout + first.stderr).decode("utf-8", "replace")
            out.append(Fold(ns, len(rs), text, first.returncode, None))
    out.sort(key=lambda f: (f.error is not None, -f.count, f.nodes))
    return out


def render(folds: list[Fold]) -> str:
    """clubak-style text: a header per node set, then its output."""
    lines: list[str] = []
    for f in folds:
        if f.error is not None:
            lines.append(f"{f.nodes}: error: {f.error}")
            continue
        bar = "-" * 15
        lines += [bar, f"{f.nodes} ({f.count})", bar]
        body = f.output if f.output.endswith("\n") or not f.output else f.output + "\n"
        lines.append(body.rstrip("\n"))
        if f.returncode:
            lines.append(f"{f.nodes}: exited with exit code {f.returncode}")
    return "\n".join(lines) + ("\n" if lines else "")
