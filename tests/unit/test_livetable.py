"""LiveTable: incremental rows, filter and sort give the same table as a full
rebuild, and a refresh rebuilds only the rows whose object changed."""

from __future__ import annotations

import random
from array import array

import pytest

from cockpit.core.filtering import compile_query, natural_key
from cockpit.models import Job, record_replace
from cockpit.tui import livetable
from cockpit.tui.livetable import LiveTable
from cockpit.tui.rows import JOB_SCHEMA, job_row

STATES = ("RUNNING", "PENDING", "COMPLETING", "FAILED")


def make_jobs(rng, n, start=1):
    return [Job(i, name=f"job-{rng.randrange(50)}", user=f"u{rng.randrange(7)}", partition=rng.choice(("a", "b")),
                state=rng.choice(STATES), submit_time=rng.choice((None, rng.randrange(1000))))
            for i in range(start, start + n)]


def expected_order(jobs, query, field, reverse):
    pred = compile_query(query, JOB_SCHEMA.fields, JOB_SCHEMA.aliases)
    rows = [job_row(j) for j in jobs]
    kept = [r for r in rows if pred is None or pred(r.values, r.haystack)]
    if field is None:
        keys = [r.key for r in kept]
        return keys[::-1] if reverse else keys
    present = sorted((r for r in kept if natural_key(r.values[field])[0] != 2),
                     key=lambda r: (natural_key(r.values[field]), natural_key(r.key)))
    missing = sorted((r for r in kept if natural_key(r.values[field])[0] == 2), key=lambda r: natural_key(r.key))
    return [r.key for r in (present[::-1] if reverse else present)] + [r.key for r in missing]


def mutate(rng, jobs, next_id):
    jobs = list(jobs)
    for _ in range(rng.randrange(1, 6)):
        op = rng.randrange(3)
        if op == 0 and jobs:
            jobs.pop(rng.randrange(len(jobs)))
        elif op == 1 and jobs:
            i = rng.randrange(len(jobs))
            jobs[i] = record_replace(jobs[i], state=rng.choice(STATES), submit_time=rng.choice((None, rng.randrange(1000))))
        else:
            jobs.extend(make_jobs(rng, 1, next_id))
            next_id += 1
    return jobs, next_id


@pytest.mark.parametrize("query,field,reverse", [
    ("", None, False), ("", None, True), ("state:running,pending", None, False), ("", 5, False),
    ("", 11, True), ("u3", 4, False), ("-state:failed partition:a", 11, False), ("", 0, True),
])
@pytest.mark.parametrize("packed", [False, True], ids=["tuple", "array"])
def test_incremental_updates_match_a_full_rebuild(query, field, reverse, packed, monkeypatch):
    monkeypatch.setattr(livetable, "SORT_CHUNK", 7)  # exercise the chunked sort and merge
    monkeypatch.setattr(livetable, "BIG", 1 if packed else 10**9)  # the order as an array('q'), or a tuple
    rng = random.Random(hash((query, field, reverse)) & 0xFFFF)
    jobs = make_jobs(rng, 60)
    next_id = 61
    live = LiveTable(job_row, lambda j: j.job_id)
    live.configure(query, compile_query(query, JOB_SCHEMA.fields, JOB_SCHEMA.aliases), field, reverse)
    handed = []
    for _ in range(40):
        data = live.update(tuple(jobs))
        assert isinstance(data.order, array) == (packed and bool(jobs))
        assert list(data.order) == expected_order(jobs, query, field, reverse)
        assert set(data.rows) == {j.job_id for j in jobs} and data.total == len(jobs) == len(data.rows)
        assert all(data.rows[j.job_id].obj == j and data.rows.get(j.job_id).obj == j for j in jobs)  # equal: rebuilt ones keep the old
        assert data.rows.get(next_id) is None and next_id not in data.rows  # a key never seen, or gone
        some = set(list(data.rows)[:3])
        assert {next_id, *some} & data.rows.keys() == some  # what VTable.set_data does with its marks
        handed.append((data, {k: data.rows[k] for k in data.rows}))
        jobs, next_id = mutate(rng, jobs, next_id)
    for data, rows in handed:  # every table handed out still reads as it did
        assert {k: data.rows[k] for k in data.rows} == rows and len(data.rows) == len(rows)


def test_only_changed_rows_are_rebuilt_and_rows_keep_identity():
    rng = random.Random(3)
    jobs = make_jobs(rng, 200)
    built = []
    live = LiveTable(lambda j: built.append(j.job_id) or job_row(j), lambda j: j.job_id)
    live.configure("", None, 5, False)
    first = live.update(tuple(jobs))
    assert len(built) == 200
    built.clear()
    jobs[10] = record_replace(jobs[10], state="FAILED")
    jobs.append(Job(999, state="PENDING"))
    second = live.update(tuple(jobs[1:]))
    assert sorted(built) == [jobs[10].job_id, 999]
    assert 1 not in second.rows and second.rows[50] is first.rows[50]


def test_equal_but_rebuilt_objects_are_not_rebuilt_again():
    jobs = make_jobs(random.Random(4), 20)
    built = []
    live = LiveTable(lambda j: built.append(1) or job_row(j), lambda j: j.job_id)
    live.update(tuple(jobs))
    live.update(tuple(record_replace(j) for j in jobs))  # a backend that rebuilds every object
    assert len(built) == 20


def test_changing_filter_or_sort_reorders_without_rebuilding_rows():
    jobs = make_jobs(random.Random(5), 50)
    built = []
    live = LiveTable(lambda j: built.append(1) or job_row(j), lambda j: j.job_id)
    live.update(tuple(jobs))
    live.configure("state:running", compile_query("state:running", JOB_SCHEMA.fields, JOB_SCHEMA.aliases), 4, True)
    data = live.update(tuple(jobs))
    assert len(built) == 50
    assert list(data.order) == expected_order(jobs, "state:running", 4, True)


def test_data_handed_out_stays_as_it_was_and_positions_are_found_when_asked():
    rng = random.Random(7)
    jobs = make_jobs(rng, 200)
    lt = LiveTable(job_row, lambda j: j.job_id)
    first = lt.update(jobs)
    rows_before = dict(first.rows)
    assert lt.update(jobs).rows is first.rows  # nothing changed: nothing copied
    later = lt.update(mutate(rng, jobs, 201)[0])
    assert later.rows is not first.rows and first.rows == rows_before  # the table's copy never changes
    assert [first.index.get(k) for k in first.order] == list(range(len(first.order)))
    assert first.index.get("no such key") is None and "no such key" not in first.index
    assert {k: first.index[k] for k in first.order} == {k: i for i, k in enumerate(first.order)}


def test_a_refresh_hands_out_its_changes_over_the_rows_it_shares_until_they_reach_an_eighth(monkeypatch):
    """1% of the rows changing: a table's rows are the last full copy under the changes
    since, not a copy of every row each refresh; an eighth changed makes a new copy."""
    copies = []
    real_dict = dict

    class CountingDict(real_dict):  # dict(rows) in livetable: a copy of every row
        def __init__(self, *a, **kw):
            if a and len(a[0]) >= 1000:
                copies.append(len(a[0]))
            super().__init__(*a, **kw)

    monkeypatch.setattr(livetable, "dict", CountingDict, raising=False)
    rng = random.Random(3)
    jobs = make_jobs(rng, 2000)
    lt = LiveTable(job_row, lambda j: j.job_id)
    base = lt.update(jobs).rows
    assert copies == [2000]
    next_id, changed, compacted_at = 2001, set(), []
    for i in range(20):
        for _ in range(20):  # 20 of 2000 jobs change: 1%
            k = rng.randrange(len(jobs))
            jobs[k] = record_replace(jobs[k], name=f"renamed-{next_id}")
            changed.add(jobs[k].job_id)
            next_id += 1
        data = lt.update(list(jobs))
        if len(changed) * 8 <= 2000:
            assert len(copies) == 1 + len(compacted_at), i
            assert data.rows.base is base and set(data.rows.top) == changed  # shared: only the changes are new
        else:
            compacted_at.append(i)
            assert len(copies) == 1 + len(compacted_at) and type(data.rows) is CountingDict  # a new full copy
            base, changed = data.rows, set()
        assert all(data.rows[j.job_id].obj is j for j in jobs)
    assert copies == [2000, 2000] and 10 <= compacted_at[0] <= 14  # ~250 rows changed: an eighth of 2000, once


def _every_kind_of_job():
    """Jobs whose rows take each branch: arrays (a task, a pending range), het components,
    held, several nodes, an unread reason and GPU count, and the view's GPU% / LAST OUT."""
    from cockpit.models import JobGpus
    from cockpit.tui.rows import JobExtras
    plain = Job(7, name="train", user="alice", account="ml", partition="gpu", state="RUNNING",
                start_time=1000.0, nodes=("n1",), time_limit=60, submit_time=900.0)
    return [
        plain,
        record_replace(plain, job_id=8, array_job_id=5, array_task_id=3),
        record_replace(plain, job_id=9, array_job_id=5, array_task_string="4-9%2", state="PENDING",
                       reason="Resources", nodes=()),
        record_replace(plain, job_id=10, het_job_id=10, het_job_offset=1, held=True, state="PENDING",
                       reason="JobHeldUser"),
        record_replace(plain, job_id=11, nodes=("n1", "n2", "n3"), state="FAILED",
                       gpus=(JobGpus(node="n1", type="h100", count=8, indexes=tuple(range(8))),)),
        record_replace(plain, job_id=12, unknown=frozenset({"reason", "gpus"})),
        JobExtras(record_replace(plain, job_id=13), 42.4, 1234.5),
        JobExtras(record_replace(plain, job_id=14), None, None),
    ]


def test_a_job_row_makes_each_value_as_its_values_tuple_has_it():
    for obj in _every_kind_of_job():
        row = job_row(obj)
        assert len(row.values) == len(JOB_SCHEMA.fields)
        assert [row.value(i) for i in range(len(JOB_SCHEMA.fields))] == list(row.values), obj
        assert len(row.cells) == len(JOB_SCHEMA.columns)


def test_a_job_row_shows_what_the_job_says():
    rows = {r.key: r for r in map(job_row, _every_kind_of_job())}
    assert rows[7].cells == ("7", "alice", "gpu", "train", "▶ running", "", "0", "", "", "n1", "")
    assert rows[7].style == "running" and rows[7].extra == "ml" and "alice" in rows[7].haystack
    assert rows[8].cells[0] == "5_3" and rows[9].cells[0] == "5_[4-9%2]" and rows[10].cells[0] == "10+1"
    assert rows[9].cells[10] == "Resources" and rows[10].values[5] == "PENDING+HELD"
    assert rows[11].cells[6] == "8" and rows[11].cells[9] == "n[1-3]" and rows[11].style == "bad"
    assert rows[12].cells[6] == "?" and rows[12].cells[10] == "?"  # unread, never 0 or blank
    assert rows[13].cells[7] == "42" and rows[13].values[12:] == (42.4, 1234.5)
    assert rows[14].cells[7] == "" and rows[14].values[12:] == (None, None)


def test_a_job_row_keeps_the_job_and_no_tuples_of_its_own():
    """Cells and values are made when asked: a job's row holds no per-row tuple
    (1M of them at 500k jobs were what the first full collection after a load walked)."""
    import gc
    row = job_row(_every_kind_of_job()[0])
    assert not gc.is_tracked(row)
    assert not any(isinstance(r, tuple) for r in gc.get_referents(row))
    assert row.cells == row.cells and row.cells is not row.cells  # made on each ask


def test_widths_hold_every_cell_and_grow_only_with_the_rows_that_changed(monkeypatch):
    """A first load in parts widens the columns for each part's new rows (no pass over
    every row per part) and ends with the widths a full measure gives."""
    from cockpit.tui.columns import data_widths
    rng = random.Random(5)
    jobs = make_jobs(rng, 400)
    asked = []
    real = livetable.LiveTable._measure
    monkeypatch.setattr(livetable.LiveTable, "_measure", lambda self: asked.append(len(self._rows)) or real(self))
    live = LiveTable(job_row, lambda j: j.job_id)
    for end in (10, 60, 200, 400):  # each part more than FULL_REBUILD of what is there
        data = live.update(jobs[:end])
    assert asked == [10]  # measured once, when there were no widths yet
    assert list(data.widths) == data_widths([r.cells for r in data.rows.values()], len(JOB_SCHEMA.columns))
    data = live.update(jobs[:50])  # most rows went: measured again, and the widths may shrink
    assert asked == [10, 50]
    assert list(data.widths) == data_widths([r.cells for r in data.rows.values()], len(JOB_SCHEMA.columns))
