"""The job store's change log (cockpit/changelog.py): a view that follows the store
finds what changed from the store's own record of it, and ends up where a full
pass over every object would: random runs of Deltas (upserts, removals, resets,
refreshes too big to record), views that skip some of the store's values or are
handed a list of their own, compared with views that always make a full pass."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from cockpit import changelog
from cockpit.backends.slurm_delta import Delta, DeltaStore, store_for
from cockpit.changelog import NOTHING, ChangeLog, Follower
from cockpit.models import Job, JobGpus
from cockpit.tui import rows as R
from cockpit.tui.livetable import LiveTable, find_changes
from cockpit.tui.pulseindex import JobIndex

NODES = ("n0", "n1", "n2")


def job(jid: int, state: str, name: int) -> Job:
    running = state == "RUNNING"
    return Job(job_id=jid, state=state, user=f"u{name % 2}", name=f"job{name}",
               reason="" if running else f"R{name % 3}", nodes=(NODES[jid % 3],) if running else (),
               node_count=1, start_time=1000 if running else None,
               gpus=(JobGpus(NODES[jid % 3], "h100", 2, (0, 1)),) if running else ())


def store_with(*jobs: Job) -> DeltaStore:
    store = store_for("jobs")
    store.apply(Delta("jobs", upserts=jobs, reset=True, done=True))
    return store


# -- the log itself ----------------------------------------------------------------
def test_a_follower_is_told_what_changed_and_nothing_else():
    store = store_with(job(1, "PENDING", 0), job(2, "PENDING", 1), job(3, "RUNNING", 2))
    follow = Follower()
    first = store.values()
    assert follow.changes(first) is None  # read whole the first time
    assert follow.changes(first) is NOTHING  # the same values again
    new2 = job(2, "RUNNING", 1)
    store.apply(Delta("jobs", upserts=(new2, job(4, "PENDING", 3)), removed=(3,), done=True))
    second = store.values()
    got = follow.changes(second)
    assert dict(got.upserts) == {2: new2, 4: second[-1]}
    assert list(got.gone) == [3] and got.gone[3].state == "RUNNING"  # the job as it was


def test_steps_a_follower_skipped_are_merged_and_a_job_gone_and_back_is_a_change():
    store = store_with(job(1, "PENDING", 0), job(2, "PENDING", 1))
    follow = Follower()
    follow.changes(store.values())
    store.apply(Delta("jobs", removed=(1,), upserts=(job(5, "PENDING", 0),), done=True))
    store.values()  # a snapshot the follower never read
    back = job(1, "RUNNING", 0)
    store.apply(Delta("jobs", removed=(5,), upserts=(back,), done=True))
    got = follow.changes(store.values())
    assert dict(got.upserts) == {1: back}
    assert set(got.gone) == {1, 5}  # 5 new and gone meanwhile: named, though the follower never had it
    assert list(store.values()) == [store.objects[2], back]  # 1 went and came back: at the end


@pytest.mark.parametrize("how", ["reset", "replace", "too many", "too old", "own list", "other store"])
def test_whatever_is_not_known_for_sure_is_read_whole(how, monkeypatch):
    store = store_with(*(job(i, "PENDING", i) for i in range(1, 11)))
    follow = Follower()
    follow.changes(store.values())
    values: object = None
    if how == "reset":
        store.apply(Delta("jobs", upserts=(job(1, "RUNNING", 1),), reset=True, done=True))
    elif how == "replace":
        store.replace((job(1, "RUNNING", 1),))
    elif how == "too many":
        monkeypatch.setattr(changelog, "MIN_RECORDED", 2)
        store.apply(Delta("jobs", upserts=tuple(job(i, "RUNNING", i) for i in range(1, 5)), done=True))
    elif how == "too old":
        for i in range(changelog.DEPTH + 1):
            store.apply(Delta("jobs", upserts=(job(1, ("RUNNING", "PENDING")[i % 2], 1),), done=True))
            store.values()
    elif how == "own list":
        store.apply(Delta("jobs", upserts=(job(1, "RUNNING", 1),), done=True))
        values = list(store.values())
    elif how == "other store":
        other = store_with(job(1, "PENDING", 1))
        values = other.values()
    if values is None:
        values = store.values()
    assert follow.changes(values) is None
    if how != "own list":
        assert follow.changes(values) is NOTHING  # and from there it follows again


def test_a_tuple_the_store_no_longer_holds_is_read_whole():
    """The snapshot a view builds from may be a refresh old by the time it builds."""
    store = store_with(job(1, "PENDING", 0))
    follow = Follower()
    old = store.values()
    store.apply(Delta("jobs", upserts=(job(1, "RUNNING", 0),), done=True))
    store.values()
    assert follow.changes(old) is None


def test_a_log_whose_store_is_gone_is_not_found_by_its_tuple():
    import gc

    store = store_with(job(1, "PENDING", 0))
    values = store.values()
    log_count = len(changelog._CURRENT)
    del store
    gc.collect()
    assert len(changelog._CURRENT) == log_count - 1
    assert Follower().changes(values) is None


def test_a_view_that_fails_midway_reads_whole_next_time():
    store = store_with(job(1, "PENDING", 0))
    table = LiveTable(R.job_row, lambda j: j.job_id)
    table.update(store.values())
    store.apply(Delta("jobs", upserts=(job(2, "PENDING", 0),), done=True))
    broken = LiveTable(lambda j: 1 / 0, lambda j: j.job_id)
    broken._follow = table._follow
    with pytest.raises(ZeroDivisionError):
        broken.update(store.values())
    assert table._follow.changes(store.values()) is None


# -- views that follow against views that pass over everything --------------------
ids = st.integers(1, 25)
a_job = st.builds(job, ids, st.sampled_from(("RUNNING", "PENDING", "COMPLETED")), st.integers(0, 4))
a_delta = st.builds(lambda ups, rm: Delta("jobs", upserts=tuple(ups), removed=tuple(rm)),
                    st.lists(a_job, max_size=8), st.lists(ids, max_size=4))
# one refresh: its Deltas, whether the store is reset first, whether the views read it
# (the store's tuple, or a list of their own) or skip it
a_step = st.tuples(st.lists(a_delta, min_size=1, max_size=3), st.sampled_from((False, False, False, True)),
                   st.sampled_from(("tuple", "tuple", "tuple", "skip", "list")))


def full_pass(values, field, reverse):
    table, index = LiveTable(R.job_row, lambda j: j.job_id), JobIndex()
    table.configure("", None, field, reverse)
    return table, table.update(list(values)), index, index.update(list(values))


def views(field, reverse):
    table, index = LiveTable(R.job_row, lambda j: j.job_id), JobIndex()
    table.configure("", None, field, reverse)
    return table, index


@settings(max_examples=150, deadline=None)
@given(st.lists(a_step, min_size=1, max_size=10), st.sampled_from((None, 0)), st.booleans(), st.integers(2, 50))
def test_views_that_follow_the_store_end_where_a_full_pass_does(steps, field, reverse, min_recorded):
    """Against two references: views handed a list each time (the pass over every job
    the views made before the log: the same order, as the rows came), and views
    built from nothing (the same rows and jobs; the same order when sorted)."""
    old_min = changelog.MIN_RECORDED
    changelog.MIN_RECORDED = min_recorded  # small: some refreshes are too big to record
    try:
        store = store_for("jobs")
        table, index = views(field, reverse)
        ref_table, ref_index = views(field, reverse)
        had: dict[int, Job] = {}
        for deltas, reset, how in steps:
            if reset:
                store.apply(Delta("jobs", upserts=deltas[0].upserts, reset=True))
            for d in deltas:
                store.apply(d)
            values = store.values()
            if how == "skip":
                continue
            data = table.update(values if how == "tuple" else list(values))
            changed, left = index.update(values if how == "tuple" else list(values))
            ref = ref_table.update(list(values))
            ref_changed, ref_left = ref_index.update(list(values))
            assert list(data.order) == list(ref.order)
            full, want, full_index, _ = full_pass(values, field, reverse)
            if field is not None:
                assert list(data.order) == list(want.order)
            assert {k: r.values for k, r in data.rows.items()} == {k: r.values for k, r in want.rows.items()}
            assert table._objs == full._objs
            assert index.jobs == full_index.jobs and index.running == full_index.running
            assert +Counter(dict(index.pending)) == +Counter(dict(full_index.pending))
            assert {k: set(v) for k, v in index.by_gpus.items()} == \
                {k: set(v) for k, v in full_index.by_gpus.items()}
            for node in NODES:
                assert set(index.by_node.ids(node)) == set(full_index.by_node.ids(node))
            # what the Pulse is told changed: what the pass over every job found
            assert sorted(changed, key=lambda p: p[1].job_id) == sorted(ref_changed, key=lambda p: p[1].job_id)
            assert sorted(j.job_id for j in left) == sorted(j.job_id for j in ref_left)
            now = {j.job_id: j for j in values}
            assert {j.job_id for j in left} == set(had) - set(now)
            had = now
    finally:
        changelog.MIN_RECORDED = old_min


def test_a_table_that_follows_the_store_makes_no_pass_over_every_job(monkeypatch):
    """1% of 5,000 jobs changed: the table and the index look at those 50 only."""
    from cockpit.tui import livetable

    store = store_with(*(job(i, "PENDING", i) for i in range(1, 5001)))
    table, index = LiveTable(R.job_row, lambda j: j.job_id), JobIndex()
    table.configure("", None, 0, False)
    table.update(store.values())
    index.update(store.values())
    store.apply(Delta("jobs", upserts=tuple(job(i, "RUNNING", i) for i in range(1, 5001, 100)),
                      removed=(2, 3), done=True))
    values = store.values()

    def no_full_pass(*_a):
        raise AssertionError("a pass over every job")

    monkeypatch.setattr(livetable, "mapped", no_full_pass)
    data = table.update(values)
    changed, left = index.update(values)
    assert len(changed) == 50 and {j.job_id for j in left} == {2, 3}
    assert len(index.running) == 50 and len(data.order) == 4998
    monkeypatch.undo()
    _t, want, _i, _ = full_pass(values, 0, False)
    assert list(data.order) == list(want.order)
