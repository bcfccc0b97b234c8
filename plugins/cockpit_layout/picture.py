"""Draw a layout as text: switches above their nodes, a nodes x GPUs grid.

Each GPU cell reads ``<PP stage>.<DP replica>`` and is coloured by its TP group.
When the nodes do not fit the height, consecutive nodes under the same leaf
are folded into one row (``node[01-04]``) whose cells show the range of PP
stages held there. Pure Rich (no Textual), so it is tested without an app;
cluster strings go in as plain Text, never as markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from cockpit.plugins.api import collapse

# Readable on dark and light terminals; TP groups cycle through them.
PALETTE = (
    "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#d62728",
    "#3b5b92", "#4c8c2b", "#7b4f9d", "#b5651d", "#c2185b", "#00838f", "#827717", "#ad1457",
)
LEVEL_STYLE = {"nvlink": "green", "node": "yellow", "leaf": "cyan", "spine": "red", "network": "magenta"}


def _rows(nodes: Sequence[Mapping[str, Any]], budget: int) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Group nodes per leaf into at most ``budget`` rows (leaf headings included)."""
    leaves: dict[Any, list[Mapping[str, Any]]] = {}
    for n in nodes:
        leaves.setdefault(n.get("leaf"), []).append(n)
    per = 1
    while sum(1 + -(-len(v) // per) for v in leaves.values()) > budget and per < len(nodes):
        per *= 2
    out: list[tuple[str, list[Mapping[str, Any]]]] = []
    for leaf, members in leaves.items():
        out.append((f"leaf:{leaf}", []))
        for i in range(0, len(members), per):
            chunk = members[i : i + per]
            out.append((collapse(m["name"] for m in chunk) if len(chunk) > 1 else chunk[0]["name"], chunk))
    return out


def _span(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def draw(layout: Mapping[str, Any], topology: Mapping[str, Any], width: int, height: int) -> Text:
    """The picture of one layout dict (``layout_to_dict``) in ``width`` x ``height`` cells."""
    out = Text(no_wrap=True, overflow="ellipsis")
    sizes = layout["sizes"]
    head = f"TP={sizes['tp']} PP={sizes['pp']} DP={sizes['dp']}"
    head += f" CP={sizes['cp']}" if sizes["cp"] > 1 else ""
    head += f" EP={sizes['ep']}" if sizes["ep"] > 1 else ""
    out.append(f"{head}  order {layout['order']}  {layout['distribution']}\n", style="bold")
    out.append("cell = PP stage.DP replica, colour = TP group\n", style="dim")
    by_slot = {(r["node"], r["gpu"]): r for r in layout["ranks"]}
    tp_of: dict[int, int] = {}
    for g in layout["groups"].get("tp", []):
        for r in g["ranks"]:
            tp_of[r] = g["index"]
    tops = sorted({v for v in topology.get("leaves", {}).values() if v})
    budget = max(1, height - 3 - (1 if tops else 0))
    rows = _rows(layout["nodes"], budget)
    name_w = min(16, max(len(name) for name, _ in rows if not name.startswith("leaf:")) if rows else 6)
    gpn = max(len(n["gpus"]) for n in layout["nodes"])
    cell = max(2, min(6, (width - name_w - 4) // max(gpn, 1)))
    if tops:
        out.append(" ".join(t for t in tops if t not in topology.get("leaves", {})) or tops[0], style="bold")
        out.append("\n")
    for name, chunk in rows:
        if name.startswith("leaf:"):
            leaf = name[5:]
            out.append(("└ " if tops else "") + (leaf if leaf != "None" else "(switch unknown)") + "\n", style="cyan")
            continue
        out.append("  " + name[:name_w].ljust(name_w) + " ")
        for i in range(gpn):
            ranks = [by_slot.get((n["name"], n["gpus"][i])) for n in chunk if i < len(n["gpus"])]
            ranks = [r for r in ranks if r is not None]
            if not ranks:
                out.append("·".center(cell), style="dim")
                continue
            first = ranks[0]
            if len(chunk) == 1:
                label = f"{first['pp']}.{first['dp']}"
            else:
                label = f"{_span([r['pp'] for r in ranks])}.{_span([r['dp'] for r in ranks])}"
                if len(label) > cell - 1:
                    label = _span([r["pp"] for r in ranks])
            colour = PALETTE[tp_of.get(first["rank"], 0) % len(PALETTE)]
            out.append(label[: cell - 1].center(cell - 1) + " ", style=f"bold white on {colour}")
        out.append("\n")
    return out


def summary_lines(layout: Mapping[str, Any]) -> Text:
    """One line per group kind: how many groups land at each level."""
    out = Text()
    for kind, counts in layout.get("summary", {}).items():
        out.append(f"{kind.upper():<5}")
        for level, n in counts.items():
            out.append(f" {n}x{level}", style=LEVEL_STYLE.get(level, ""))
        out.append("\n")
    return out
