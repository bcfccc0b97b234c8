"""One view's rows, kept up to date by key: work per refresh follows what changed.

No Textual here; a view calls :meth:`LiveTable.update` in a worker thread and
hands the returned :class:`~cockpit.tui.rows.TableData` to its VTable.

Per refresh, with 100k jobs of which 1% changed:

* what changed is what the store's change log says changed, when the objects
  are a store's values tuple and the table read that store's values last
  (cockpit/changelog.py): no pass over every row at all. Otherwise (a first load,
  a reset, objects the view made itself) it is found with C-level passes
  (``map``/``compress`` over the object identities the backend keeps for
  unchanged objects), not a Python loop over every row; a backend that rebuilds
  every object falls back to ``==``;
* only changed objects get a new Row;
* the filter is evaluated for changed rows only;
* the widest cell of each column (what the table's layout needs) grows with the
  changed rows and is measured again over every row only on a full rebuild;
* the sorted order is kept as a list maintained with ``bisect`` (ties broken by
  the row key, so every position is unique); a full re-sort (a new sort column
  or filter, or a refresh that changed most rows) sorts in chunks and merges
  them, so no single C call holds the GIL for long while keys wait;
* the table handed out shares every unchanged row with the one before
  (rows.Layered): the rows are copied whole only once an eighth of them changed.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left, insort
from collections.abc import Callable, Mapping, Sequence
from itertools import chain, compress, islice
from operator import is_not
from typing import Any

from cockpit.changelog import Follower
from cockpit.core.filtering import natural_key
from cockpit.heap import BIG, built_outside_gc
from cockpit.tui.columns import data_widths, grow_widths
from cockpit.tui.gilshare import key_set, mapped, missing_from
from cockpit.tui.rows import GONE, Layered, Positions, Row, TableData

FULL_REBUILD = 0.2  # above this fraction of changed rows, rebuild the order from scratch
COMPACT_SHARE = 8  # the changes handed out under the base become a new base at 1/8 of the rows
SORT_CHUNK = 4096


class LiveTable:
    """Rows by key with a filtered and sorted order; not thread-safe (one builder at a time)."""

    __slots__ = ("build", "key", "_objs", "_rows", "_pred", "_field", "_reverse", "_config",
                 "_kept", "_present", "_missing", "_stale_order", "_widths", "_base", "_top", "_top_shared",
                 "_follow")

    def __init__(self, build: Callable[[Any], Row], key: Callable[[Any], Any]) -> None:
        self.build, self.key = build, key
        self._objs: dict[Any, Any] = {}
        self._rows: dict[Any, Row] = {}
        self._pred: Any = None
        self._field: int | None = None
        self._reverse = False
        self._config: tuple = ("", None, False)
        self._kept: set[Any] | None = set()  # keys passing the filter; None: every key (no filter)
        self._present: list[Any] = []  # sorted mode: keys with a value, ascending
        self._missing: list[Any] = []  # sorted mode: keys without a value (always last)
        self._stale_order = True
        self._widths: list[int] = []
        # What data() hands out: _base (never changed once made) under _top, the rows
        # changed since (copied before it changes once a table holds it: _top_shared).
        # _rows stays this table's own, changed in place.
        self._base: dict[Any, Row] = {}
        self._top: dict[Any, Any] = {}
        self._top_shared = False
        self._follow = Follower()  # where the objects came from: the store's changes (cockpit.changelog)

    # -- configuration ------------------------------------------------------
    def configure(self, query: str, predicate: Any, field: int | None, reverse: bool) -> None:
        """Set the filter (its text and compiled predicate) and the sort; a change
        re-evaluates the order on the next :meth:`update`."""
        config = (query, field, reverse)
        if config != self._config:
            self._config = config
            self._pred, self._field, self._reverse = predicate, field, reverse
            self._stale_order = True

    # -- updating -----------------------------------------------------------
    def update(self, objects: Sequence[Any]) -> TableData:
        """Take the current objects and return what the table shows (its lists
        of every key and its order built out of the cyclic GC's walks: cockpit.heap)."""
        with self._follow.taking(), built_outside_gc(len(objects)):
            return self._update(objects)

    def _update(self, objects: Sequence[Any]) -> TableData:
        changed, removed = self._diff(objects)
        if self._stale_order or len(changed) + len(removed) > FULL_REBUILD * max(len(self._rows), 1):
            self._apply_rows(changed, removed)
            self._reorder()
            if not self._widths or len(removed) > FULL_REBUILD * max(len(self._rows), 1):
                self._measure()  # widths shrink only here: when many rows went
            else:
                self._grow(changed)
        else:
            self._apply_incremental(changed, removed)
            if self._widths:
                self._grow(changed)
            elif changed:
                self._measure()
        return self.data()

    def _grow(self, changed: list[tuple[Any, Any]]) -> None:
        """Widen the columns for the changed rows only: a job row makes its cells when
        asked, so measuring every row at each partial snapshot of a first load was
        quadratic in the load."""
        rows, widths = self._rows, self._widths
        for k, _obj in changed:
            grow_widths(widths, rows[k].cells)

    def _measure(self) -> None:
        """The widest cell of each column over every row (zip and map: C-level passes),
        a chunk of rows at a time: GPU rows make their cells when asked, and all 160k
        at once (20k nodes) were a 39 MB peak."""
        rows, widths = iter(self._rows.values()), []
        while cells := [r.cells for r in islice(rows, SORT_CHUNK)]:
            part = data_widths(cells, len(cells[0]))
            widths = list(map(max, widths, part)) if widths else part
        self._widths = widths

    def _diff(self, objects: Sequence[Any]) -> tuple[list[tuple[Any, Any]], list[Any]]:
        """(changed or new (key, object) pairs, removed keys)."""
        changed, rebuilt, removed = find_changes(objects, self.key, self._objs, self._follow)
        for k, obj in rebuilt:  # equal but rebuilt: remember the new identity only
            self._objs[k] = obj
        pairs: list[Any] = changed  # made pairs in place, as each triple is freed: a first load's
        for i, (k, _old, obj) in enumerate(changed):  # 500k triples and 500k pairs were ~35 MB more
            pairs[i] = (k, obj)
        return pairs, removed

    def _apply_rows(self, changed: list[tuple[Any, Any]], removed: list[Any]) -> None:
        if not (changed or removed):
            return
        if self._top_shared:  # copy on write: a table handed out holds it (the changes only)
            self._top, self._top_shared = dict(self._top), False
        rows, base, top = self._rows, self._base, self._top
        for k in removed:
            del self._objs[k], rows[k]
            if k in base:
                top[k] = GONE
            else:
                top.pop(k, None)
        for k, obj in changed:
            self._objs[k] = obj
            rows[k] = top[k] = self.build(obj)

    def _apply_incremental(self, changed: list[tuple[Any, Any]], removed: list[Any]) -> None:
        rows = self._rows
        for k in removed:  # take out of the order while the old rows still say where they are
            self._unplace(k)
        for k, _obj in changed:
            if k in rows:
                self._unplace(k)
        self._apply_rows(changed, removed)
        for k, _obj in changed:
            self._place(k)

    # -- order --------------------------------------------------------------
    def _passes(self, row: Row) -> bool:
        return self._pred is None or self._pred(row.values, row.haystack)

    def _sort_key(self, k: Any) -> tuple:
        return natural_key(self._rows[k].value(self._field)), natural_key(k)  # type: ignore[index]

    def _place(self, k: Any) -> None:
        if not self._passes(self._rows[k]):
            return
        if self._kept is not None:
            self._kept.add(k)
        if self._field is None:
            return
        if natural_key(self._rows[k].value(self._field))[0] == 2:
            insort(self._missing, k, key=natural_key)
        else:
            insort(self._present, k, key=self._sort_key)

    def _unplace(self, k: Any) -> None:
        if self._kept is not None:
            if k not in self._kept:
                return
            self._kept.discard(k)
        if self._field is None:
            return
        sk = self._sort_key(k)
        lst, probe = (self._missing, sk[1]) if sk[0][0] == 2 else (self._present, sk)
        i = bisect_left(lst, probe, key=natural_key if lst is self._missing else self._sort_key)
        if i < len(lst) and lst[i] == k:
            del lst[i]
        else:  # cannot happen while rows and order agree; stay correct if they ever do not
            lst.remove(k)

    def _reorder(self) -> None:
        """Filter and sort every row (a new filter/sort, or most rows changed)."""
        self._stale_order = False
        rows = self._rows
        pred = self._pred
        if pred is None:
            self._kept = None  # a set of 500k keys cost ~30 MB for nothing
        else:
            self._kept = {k for k, r in rows.items() if pred(r.values, r.haystack)}
        self._present, self._missing = [], []
        if self._field is None:
            return
        f, present, missing, kept = self._field, [], [], self._kept
        for k in rows:
            if kept is None or k in kept:
                nk = natural_key(rows[k].value(f))
                (missing if nk[0] == 2 else present).append((nk, natural_key(k), k))
        self._present = _chunked_sort(present)
        self._missing = [k for _nk, _t, k in _chunked_sort([(t, t, k) for _nk, t, k in missing])]
        self._present = [k for _nk, _t, k in self._present]

    def data(self) -> TableData:
        """An immutable view for the UI thread. Its rows are the base dict under the
        changes since it was made (rows.Layered); when the changes reach 1/COMPACT_SHARE
        of the rows they become a new base, one copy of every row (at 1% of the jobs
        changing a refresh: one refresh in ~12, where each refresh copied them all)."""
        rows = self._rows
        if len(self._top) * COMPACT_SHARE > len(rows):  # (with no base yet, _top holds every row)
            self._base, self._top, self._top_shared = dict(rows), {}, False
        if self._top:
            shown: Mapping[Any, Row] = Layered(self._base, self._top, len(rows))
            self._top_shared = True
        else:
            shown = self._base
        if self._field is not None:
            order = _packed(self._present, self._reverse, self._missing)
        else:
            keys = list(rows) if self._pred is None else list(filter(self._kept.__contains__, rows))
            order = _packed(keys, self._reverse)
        return TableData(shown, order, Positions(order), len(rows), tuple(self._widths))


def find_changes(objects: Sequence[Any], key: Callable[[Any], Any], objs: dict[Any, Any],
                 follow: Follower) -> tuple[list[tuple[Any, Any, Any]], list[tuple[Any, Any]], list[Any]]:
    """What ``objects`` changed against ``objs`` (key -> the object taken last):
    (changed or new as (key, old or None, new), rebuilt equal as (key, new), removed keys).

    When ``objects`` is a store's values tuple and ``follow`` read the store's values
    last time, the store's change log says which objects to look at
    (cockpit.changelog): work follows what changed. Otherwise a pass over every object,
    C-level, in slices. Either way ``objs`` is not changed here."""
    delta = follow.changes(objects)
    if delta is not None:
        candidates: Sequence[Any] = list(delta.upserts.values())
        keys: list[Any] = list(map(key, candidates))
        olds = list(map(objs.get, keys))
        back = delta.upserts  # gone and back: changed, where it was (as a full pass finds it)
        removed = [k for sk, o in delta.gone.items() if sk not in back and (k := key(o)) in objs]
    else:
        candidates = objects
        keys = mapped(key, objects)  # in slices: the UI thread can take the GIL between them
        olds = mapped(objs.get, keys)
        removed = []
    changed, rebuilt = [], []
    new = 0
    for i in compress(range(len(keys)), map(is_not, olds, candidates)):
        old, obj = olds[i], candidates[i]
        if old is None:
            new += 1
        elif old == obj:
            rebuilt.append((keys[i], obj))
            continue
        changed.append((keys[i], old, obj))
    if delta is None and len(objs) + new != len(keys):
        removed = missing_from(objs, key_set(keys))
    return changed, rebuilt, removed


def _packed(keys: list[Any], reverse: bool = False, last: Sequence[Any] = ()) -> Sequence[Any]:
    """The order as the table keeps it: ``keys`` (reversed when ``reverse``), then
    ``last``. A long order of int keys (job ids) as an ``array('q')``, 8 bytes a key
    and nothing the cyclic GC walks (a 500k-key tuple was walked by every young
    collection until frozen, and by every thaw: three passes over half a million
    objects); other keys (node names) as a tuple. Made from the lists themselves,
    reversed and extended in place: no reversed copy or concatenation of every key
    first (two more 500k-key lists a refresh at 500k jobs)."""
    if len(keys) + len(last) >= BIG:
        try:
            order = array("q", keys)
            if reverse:
                order.reverse()
            order.extend(last)
            return order
        except (TypeError, OverflowError):
            pass
    return tuple(chain(reversed(keys) if reverse else keys, last))


def _chunked_sort(items: list[tuple]) -> list[tuple]:
    """``sorted(items)``, as short sorts and a merge: one big ``list.sort`` would hold
    the GIL for its whole duration (~0.2 s at 100k rows)."""
    if len(items) <= SORT_CHUNK:
        return sorted(items)
    chunks = [sorted(items[i:i + SORT_CHUNK]) for i in range(0, len(items), SORT_CHUNK)]
    return list(heapq.merge(*chunks))
