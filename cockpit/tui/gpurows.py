"""The GPUs view's rows: one per GPU, kept small because there are many of them.

10k nodes are 80k GPU rows. As a :class:`~cockpit.tui.rows.Row` each carried its
own cells and values tuples (13 entries each) and a copy of the GPU type: ~590 B
a GPU, 47 MB at 10k nodes (tracemalloc, the bench's data). A :class:`GpuRow`
keeps what differs per GPU and points at a tuple shared by its node's GPUs of one
type; ``cells`` and ``values`` are made when asked (a drawn line, a filter, a
sort, the widths measured on a full rebuild): ~150 B a GPU. No Textual here; built
in the view's worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec

from cockpit.models import Job, Node
from cockpit.text import clean
from cockpit.tui.rows import KEEP, TELEMETRY_FIELDS, node_state_text

_NO_TELEMETRY = (("",) * len(TELEMETRY_FIELDS), (None,) * len(TELEMETRY_FIELDS))
_INDEX_TEXT = tuple(str(i) for i in range(64))  # one "12" for every node's GPU 12
_NOTES: dict[str, str] = {}  # "on drained node" ...: one string for all such GPUs


def telemetry_cells(t: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """(cells, values) of a GPU's telemetry columns; one shared pair when there is none."""
    if not t:
        return _NO_TELEMETRY
    vals = tuple(t.get(f) for f in TELEMETRY_FIELDS)
    cells = tuple("" if v is None else clean(f"{v:.0f}" if isinstance(v, float) else v, 10) for v in vals)
    return cells, vals


class GpuRow(msgspec.Struct, frozen=True, gc=False):
    """One GPU's row; reads like a :class:`~cockpit.tui.rows.Row` (key, cells, values,
    style, extra, haystack). ``shared`` is (node cell, type cell, state cell, node
    name, type, display state), one tuple for a node's GPUs of one type. Untracked
    by the cyclic GC, as Row is: 160k GPU rows at 20k nodes are not walked by a
    full collection."""

    key: str
    shared: tuple
    index: int
    job_id: str
    user: str
    user_cell: str
    note: str
    telemetry: tuple
    style: str
    extra: ClassVar[str] = ""

    @property
    def cells(self) -> tuple[str, ...]:
        s, i = self.shared, self.index
        return (s[0], _INDEX_TEXT[i] if i < 64 else str(i), s[1], s[2], self.job_id, self.user_cell, self.note,
                *self.telemetry[0])

    @property
    def values(self) -> tuple[Any, ...]:
        s = self.shared
        return (s[3], self.index, s[4], s[5], self.job_id, self.user, self.note, *self.telemetry[1])

    def value(self, i: int) -> Any:
        return self.values[i]

    @property
    def haystack(self) -> str:
        return " ".join(self.cells).lower()

    def __repr__(self) -> str:
        return f"GpuRow({self.key!r}, {self.cells!r}, {self.style!r})"


def _note(node: Node, held: bool, busy_node: bool) -> str:
    if node.is_unavailable:
        text = f"on {node.display_state} node"
        return _NOTES.setdefault(text, text) if len(_NOTES) < 64 else text
    if not held and busy_node:
        return "idle in alloc node"
    return "" if held else "free"


def gpu_rows(node: Node, holders: Mapping[tuple[str, int], Job],
             telemetry: Mapping[tuple[str, int], Mapping[str, Any]], width: int = KEEP) -> list[GpuRow]:
    """One row per GPU index of ``node``."""
    rows: list[GpuRow] = []
    idx = 0
    busy_node = node.gpu_alloc > 0
    state, name = node_state_text(node), clean(node.name, width)
    ids: dict[int, tuple[str, str, str]] = {}  # a job's id and user strings, shared by its GPUs here
    for group in node.gpus:
        shared = (name, clean(group.type or "", 6), state, node.name, group.type or "", node.display_state)
        for _ in range(group.count):
            job = holders.get((node.name, idx))
            held = job is not None or idx in group.alloc_indexes
            note = _note(node, held, busy_node)
            if job is not None:
                jid, user, ucell = ids.get(id(job)) or ids.setdefault(id(job), (job.display_id, job.user,
                                                                                 clean(job.user, width)))
            else:
                jid, user, ucell = ("?" if held else ""), "", ""
            style = "drain" if node.is_unavailable else ("idlegpu" if note == "idle in alloc node" else ("alloc" if held else "idle"))
            rows.append(GpuRow(f"{node.name}:{idx}", shared, idx, jid, user, ucell, note,
                               telemetry_cells(telemetry.get((node.name, idx))), style))
            idx += 1
    return rows
