"""The Pulse kept from deltas (cockpit/tui/pulseindex.py) shows what a full pass over
every job of every snapshot shows: random runs of snapshots (jobs submitted,
started, ended, rebuilt equal, left the queue), output mtimes and GPU telemetry,
compared with the full pass written out here."""

from __future__ import annotations

import heapq
from collections import Counter, OrderedDict, deque

from hypothesis import given, settings, strategies as st

from cockpit.models import ClusterSnapshot, Job, JobGpus, Node, Partition, record_replace
from cockpit.tui import pulsedata
from cockpit.tui.pulsedata import ChangeTracker, compute, summarise, watch_candidates
from cockpit.tui.pulseindex import JobIndex, _name_key
from cockpit.tui.suspects import UsualTimes, find_suspects

NODES = tuple(f"n{i}" for i in range(4))
NOW = 100_000.0


class FullPass:
    """The tracker as it was before the index: every job of every snapshot looked at."""

    def __init__(self) -> None:
        self.jobs: dict | None = None
        self.recent: deque = deque(maxlen=pulsedata.MAX_CHANGES)
        self.usual = UsualTimes()
        self.gone: OrderedDict = OrderedDict()
        self.newest = 0

    def feed(self, snap: ClusterSnapshot, when: float) -> None:
        jobs = {j.job_id: j for j in snap.jobs}
        if self.jobs is not None:
            started = 0
            for k, j in jobs.items():
                o = self.jobs.get(k)
                if o is not None and o.state != j.state:
                    if j.state == "RUNNING":
                        started += 1
                    elif j.state == "COMPLETED":
                        self.usual.ended(j, when)
            new = sum(1 for k in jobs if k not in self.jobs)
            left = [o for k, o in self.jobs.items() if k not in jobs]
            for o in left:
                self.gone[o.job_id] = when
                if o.state == "RUNNING":
                    self.usual.ended(o, when)
            if started or new or left:
                self.recent.appendleft((when, f"jobs: {new} submitted, {started} started, "
                                              f"{len(left)} left the queue", ""))
        self.newest = max(self.newest, max(jobs, default=0))
        self.jobs = jobs


def job(jid: int, state: str, user: int, name: int, node: int, gpus: int, start: int) -> Job:
    running = state == "RUNNING"
    return Job(job_id=jid, state=state, user=f"u{user}", name=f"job{name}", reason="" if running else f"R{name % 3}",
               nodes=(NODES[node],) if running else (), node_count=1, start_time=start if running else None,
               gpus=(JobGpus(NODES[node], "h100", gpus, tuple(range(gpus))),) if running and gpus else (),
               stdout=f"/home/u{user}/{jid}.out", work_dir="/home")


jobs_st = st.builds(job, st.integers(1, 40), st.sampled_from(("RUNNING", "PENDING", "COMPLETED")),
                    st.integers(0, 2), st.integers(0, 3), st.integers(0, 3), st.integers(0, 4),
                    st.sampled_from((1000, 50_000, 99_000)))
step_st = st.tuples(st.lists(jobs_st, max_size=25), st.booleans(),
                    st.dictionaries(st.integers(1, 40), st.sampled_from((0.0, 99_900.0))),
                    st.dictionaries(st.tuples(st.sampled_from(NODES), st.integers(0, 3)),
                                    st.sampled_from(({"util": 0.0}, {"util": 90.0}))))

NODE_OBJS = tuple(Node(name=n, state="MIXED") for n in NODES)
PARTS = (Partition(name="p", nodes=NODES),)


@settings(max_examples=80, deadline=None)
@given(st.lists(step_st, min_size=1, max_size=8))
def test_the_pulse_from_deltas_equals_a_full_pass(steps):
    tracker, full = ChangeTracker(), FullPass()
    previous: dict[int, Job] = {}
    for i, (jobs, rebuild, outputs, telemetry) in enumerate(steps):
        by_id = {j.job_id: previous.get(j.job_id, j) if previous.get(j.job_id) == j else j for j in jobs}
        if rebuild:  # a backend that builds every object again: equal, not identical
            by_id = {k: record_replace(j) for k, j in by_id.items()}
        previous = by_id
        snap = ClusterSnapshot(nodes=NODE_OBJS, partitions=PARTS, jobs=tuple(by_id.values()), fetched_at=NOW + i)
        data = compute(snap, tracker, True, NOW + i, telemetry=telemetry, outputs=outputs, silent_after=600.0,
                       watch=3)
        full.feed(snap, NOW + i)
        want = find_suspects(snap.jobs, NOW + i, last_output=outputs, telemetry=telemetry, usual=full.usual,
                             silent_after=600.0)
        assert data.suspects.order == tuple(s.job.job_id for s in want)
        assert [data.suspects.rows[s.job.job_id].cells for s in want] == [pulsedata.suspect_row(s).cells for s in want]
        assert data.candidates == watch_candidates(snap.jobs, 3)
        summary = summarise(snap)
        pending = summary.pop("pending")  # ties may come in another order (see JobIndex.counts)
        assert {k: getattr(data, k) for k in summary} == summary
        assert [n for _r, n in data.pending] == [n for _r, n in pending]
        counts = Counter(j.reason or "None" for j in snap.jobs if j.state == "PENDING")
        assert all(counts[r] == n for r, n in data.pending)
        assert data.changes[:len(full.recent)] == tuple(full.recent) or not full.recent
        # the same runs and departures; their order may differ where a snapshot lists its jobs
        # in another order than they came (the index keeps the order they came in)
        assert {k: sorted(v) for k, v in tracker.usual._runs.items()} == \
            {k: sorted(v) for k, v in full.usual._runs.items()}
        assert dict(tracker.gone.items()) == dict(full.gone)
        assert tracker.newest == full.newest
        jobs_now = {j.job_id: j for j in snap.jobs}
        silent = {jid for jid, t in outputs.items() if jid in jobs_now and NOW + i - t >= 600.0}
        assert set(data.watch_nodes) == {n for s in want for n in s.job.nodes} | \
            {n for jid in silent for n in jobs_now[jid].nodes}


def test_the_largest_running_jobs_are_taken_bucket_by_bucket():
    index = JobIndex()
    jobs = [job(i, "RUNNING", 0, i, i % 4, i % 3 + 1, 1000) for i in range(1, 30)]
    index.update(jobs)
    want = heapq.nlargest(5, jobs, key=lambda j: (j.gpu_count, j.job_id))
    assert index.largest_running(5) == want
    changed, left = index.update(jobs[:10])
    assert changed == [] and [j.job_id for j in left] == list(range(11, 30))
    assert set(index.running) == set(range(1, 11)) and all(len(b) for b in index.by_gpus.values())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(1, 60), st.sampled_from(("RUNNING", "PENDING")), st.integers(0, 8),
                                   st.integers(0, 1)), max_size=40), min_size=1, max_size=12),
       st.integers(1, 6))
def test_the_largest_running_jobs_follow_what_changed_as_a_full_pass_finds_them(snapshots, cap):
    """largest_running keeps a buffer of the largest (GPU count, job id) keys instead of
    a heapq.nlargest over every running job each refresh: through random snapshots
    (jobs that start, end, change GPU count, come back), and caps that change, it
    answers as the full pass does."""
    index = JobIndex()
    for i, spec in enumerate(snapshots):
        # a renamed job is indexed again under the same key
        jobs = list({jid: job(jid, state, 0, 2 * jid + renamed, jid % 4, gpus, 1000)
                     for jid, state, gpus, renamed in spec}.values())
        index.update(jobs)
        ask = cap if i % 3 else cap + 1  # another cap now and then: built again
        want = heapq.nlargest(ask, (j for j in jobs if j.state == "RUNNING" and j.nodes),
                              key=lambda j: (j.gpu_count, j.job_id))
        assert index.largest_running(ask) == want


def test_the_largest_running_jobs_are_not_looked_for_among_every_running_job(monkeypatch):
    """Once built, a refresh that starts and ends a few jobs reads no bucket whole."""
    index = JobIndex()
    jobs = [job(i, "RUNNING", 0, i, i % 4, 2, 1000) for i in range(1, 2001)]
    index.update(jobs)
    assert [j.job_id for j in index.largest_running(10)] == list(range(2000, 1990, -1))
    calls = []
    real = heapq.nlargest
    monkeypatch.setattr(heapq, "nlargest", lambda *a, **kw: (calls.append(a[0]), real(*a, **kw))[1])
    for k in range(5):  # ten new jobs, and five of the largest end (of 20 kept beyond the 10 asked)
        jobs = [j for j in jobs if j.job_id not in (2000 + 10 * k, 1999 - k)]
        jobs += [job(3000 + 10 * k + n, "RUNNING", 0, n, n % 4, 2, 1000) for n in range(10)]
        index.update(jobs)
        want = heapq.nlargest(10, jobs, key=lambda j: (j.gpu_count, j.job_id))
        calls.clear()
        assert index.largest_running(10) == want and calls == []


def test_the_running_jobs_indexes_are_dicts_a_full_collection_need_not_walk():
    """settle_heap's thaw walks every tracked container: at 500k jobs the (user, name)
    index (tuple keys, a set for a repeated name) and the GPU-count sets were ~300k
    entries each. The index's id maps hold plain values only (str or int keys, int
    ids), so the collector never tracks them; only ``many`` (names that repeat, each
    an untracked dict of ids) is tracked. Ids still come and go as jobs do."""
    import gc

    index = JobIndex()
    jobs = [job(i, "RUNNING", i % 2, i % 5, i % 4, 2, 1000) for i in range(1, 41)]
    index.update(jobs)
    gc.collect()
    for plain in (index.by_name.one, index.by_node.one, *index.by_gpus.values(),
                  *index.by_name.many.values(), *index.by_node.many.values()):
        assert not gc.is_tracked(plain)
    named = lambda user, name: list(index.by_name.ids(_name_key(user, name)))  # noqa: E731
    assert sorted(named("u1", "job3")) == [j.job_id for j in jobs if (j.user, j.name) == ("u1", "job3")]
    # the jobs of one name end one by one: many -> one -> gone
    same = [j for j in jobs if (j.user, j.name) == ("u0", "job0")]
    assert len(same) == 4
    index.update([j for j in jobs if j not in same[:3]])
    assert named("u0", "job0") == [same[3].job_id] and _name_key("u0", "job0") in index.by_name.one
    index.update([j for j in jobs if j not in same])
    assert named("u0", "job0") == [] and len(index.by_name) == len({(j.user, j.name) for j in jobs} - {("u0", "job0")})
    assert sorted(index.by_gpus[2]) == sorted(j.job_id for j in jobs if j not in same)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 30), max_size=300), st.integers(1, 12))
def test_departures_keep_the_latest_as_an_ordered_dict_would_and_stay_untracked(ids, cap):
    """The jobs that left the queue (MAX_GONE of them): first in, first dropped; leaving
    again keeps the first place. Nothing in it is a container the cyclic GC walks."""
    import gc

    gone, want = pulsedata.Departures(cap), OrderedDict()
    for t, jid in enumerate(ids):
        gone.add(jid, float(t))
        want[jid] = float(t)
        while len(want) > cap:
            want.popitem(last=False)
        assert len(gone) == len(want)
    assert gone.items() == list(want.items())
    assert all(gone.get(j) == want.get(j) for j in range(32))
    assert not gc.is_tracked(gone._when)  # a dict of ints to floats: CPython never tracks it
    assert len(gc.get_referents(gone._order)) <= 1  # an array: its type at most, never its ids


def test_departures_drop_the_ids_they_no_longer_hold_from_their_order():
    gone = pulsedata.Departures(100)
    for jid in range(20_000):
        gone.add(jid, 1.0)
    assert len(gone) == 100 and len(gone._order) < 2 * 4096 + 200
    assert [j for j, _t in gone.items()] == list(range(19_900, 20_000))
