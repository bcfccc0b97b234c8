"""A node's GRES as the node detail lists them: each GPU type, MIG slice type, shards
and MPS, with what is in use. No Textual here (the detail screen renders the pairs)."""

from __future__ import annotations

from cockpit.models import Node
from cockpit.models.cluster import mig_profile
from cockpit.text import clean

_WHAT = {"shard": "shards", "mps": "MPS"}


def gres_pairs(node: Node) -> list[tuple[str, str]]:
    """(label, text) rows: ``GPU type h100`` ``3/8 in use``, ``MIG 1g.10gb`` ``0/7 slices in
    use``, ``shards`` ``4/16 in use (shard:h100)``. None when the node's GRES were not read
    (its GPUs row says so), nor for a node without GRES."""
    if "gpus" in node.unknown:
        return []
    out = [(f"GPU type {clean(g.type or 'untyped', 24)}", f"{g.alloc_count}/{g.count} in use")
           for g in node.gpus if len(node.gpus) > 1 or node.mig or node.sharing]
    for g in node.mig:
        profile = mig_profile(g.type)
        named = "" if g.type == profile else f" (type {clean(g.type or '', 60)})"
        out.append((f"MIG {clean(profile, 16)}", f"{g.alloc_count}/{g.count} slices in use{named}"))
    for s in node.sharing:
        used = "?" if s.used is None else str(s.used)
        why = ", use not read" if s.used is None else ""
        typed = f"{s.name}:{clean(s.type, 40)}" if s.type else s.name
        out.append((_WHAT.get(s.name, s.name), f"{used}/{s.total} in use ({typed}{why})"))
    return out
