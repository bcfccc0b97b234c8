"""DeltaFeed: how both backends take a worker's Deltas into their store (a first
load shown as it comes, a refresh applied whole, a failed first load dropped)."""

from types import SimpleNamespace as NS

from cockpit.backends import _deltafeed
from cockpit.backends._deltafeed import DeltaFeed
from cockpit.backends.slurm_delta import Delta, store_for


def _nodes(*names):
    return tuple(NS(name=n) for n in names)


def test_a_first_load_is_applied_as_it_comes_and_shown_in_part(monkeypatch):
    monkeypatch.setattr(_deltafeed, "PARTIAL_EVERY", 0.0)
    feed = DeltaFeed(store_for("nodes"))
    assert feed.progressive
    assert feed.take(Delta("nodes", _nodes("a"), reset=True))
    assert [n.name for n in feed.store.values()] == ["a"]
    last = Delta("nodes", _nodes("b"), done=True, warnings=("w",))
    assert not feed.take(last)  # the done one is the complete result, not a partial
    assert [n.name for n in feed.finish()] == ["a", "b"] and feed.last is last


def test_partials_wait_for_their_interval():
    feed = DeltaFeed(store_for("nodes"))
    assert feed.take(Delta("nodes", _nodes("a"), reset=True))  # the first chunk at once
    assert not feed.take(Delta("nodes", _nodes("b")))  # then at most every PARTIAL_EVERY


def test_a_refresh_is_held_back_until_its_end_and_a_failed_one_changes_nothing():
    store = store_for("nodes")
    store.replace(_nodes("a"))
    feed = DeltaFeed(store)
    assert not feed.progressive
    assert not feed.take(Delta("nodes", _nodes("b"), removed=("a",)))
    assert [n.name for n in store.values()] == ["a"]
    feed.abandon()
    assert [n.name for n in store.values()] == ["a"]
    feed = DeltaFeed(store)
    feed.take(Delta("nodes", _nodes("b"), removed=("a",), done=True))
    assert [n.name for n in feed.finish()] == ["b"]


def test_a_failed_first_load_leaves_the_store_empty():
    feed = DeltaFeed(store_for("jobs"))
    feed.take(Delta("jobs", (NS(job_id="1"),), reset=True))
    feed.abandon()
    assert feed.store.values() == () and DeltaFeed(feed.store).progressive


def test_partials_of_a_first_load_are_spaced_by_its_size(monkeypatch):
    # every partial costs the views work over all the rows so far: spaced by growth,
    # a load of n chunks is shown in O(log n) parts, not n
    monkeypatch.setattr(_deltafeed, "PARTIAL_EVERY", 0.0)
    feed = DeltaFeed(store_for("nodes"))
    shown = [len(feed.store.objects) for i in range(100)
             if feed.take(Delta("nodes", _nodes(f"n{i}"), reset=i == 0))]
    assert shown[:4] == [1, 2, 3, 5]
    assert all(b >= _deltafeed.PARTIAL_GROWTH * a for a, b in zip(shown, shown[1:]))
    assert len(shown) <= 13
