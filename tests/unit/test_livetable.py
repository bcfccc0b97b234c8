"""LiveTable: incremental rows, filter and sort give the same table as a full
rebuild, and a refresh rebuilds only the rows whose object changed."""

from __future__ import annotations

import random

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
def test_incremental_updates_match_a_full_rebuild(query, field, reverse, monkeypatch):
    monkeypatch.setattr(livetable, "SORT_CHUNK", 7)  # exercise the chunked sort and merge
    rng = random.Random(hash((query, field, reverse)) & 0xFFFF)
    jobs = make_jobs(rng, 60)
    next_id = 61
    live = LiveTable(job_row, lambda j: j.job_id)
    live.configure(query, compile_query(query, JOB_SCHEMA.fields, JOB_SCHEMA.aliases), field, reverse)
    for _ in range(40):
        data = live.update(tuple(jobs))
        assert list(data.order) == expected_order(jobs, query, field, reverse)
        assert set(data.rows) == {j.job_id for j in jobs} and data.total == len(jobs)
        assert all(data.index[k] == i for i, k in enumerate(data.order))
        jobs, next_id = mutate(rng, jobs, next_id)


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
