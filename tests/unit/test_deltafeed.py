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


def _refresh_feed(n):
    store = store_for("nodes")
    store.replace(_nodes(*(f"n{i}" for i in range(n))))
    feed = DeltaFeed(store)
    feed.take(Delta("nodes", _nodes("new"), removed=("n0",), done=True))
    return store, feed


def test_a_big_refresh_is_applied_in_a_worker_thread(monkeypatch):
    import asyncio
    import threading

    monkeypatch.setattr(_deltafeed, "OFF_THREAD_AT", 3)
    store, feed = _refresh_feed(3)
    ran_in = []
    apply = store.apply
    monkeypatch.setattr(store, "apply", lambda d: (ran_in.append(threading.current_thread()), apply(d)))
    names = [n.name for n in asyncio.run(feed.complete())]
    assert names == ["n1", "n2", "new"]
    assert ran_in and threading.main_thread() not in ran_in
    small_store, small = _refresh_feed(1)  # below OFF_THREAD_AT: in the caller's thread, no task
    assert [n.name for n in asyncio.run(small.complete())] == ["new"] and small_store.busy is None


def test_a_cancelled_refresh_finishes_in_its_thread_before_the_next_answer_touches_the_store(monkeypatch):
    import asyncio
    import threading

    monkeypatch.setattr(_deltafeed, "OFF_THREAD_AT", 1)
    store, feed = _refresh_feed(2)
    go = threading.Event()
    values = store.values
    monkeypatch.setattr(store, "values", lambda: (go.wait(10), values())[1])

    async def main():
        task = asyncio.ensure_future(feed.complete())
        while store.busy is None:
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert not store.busy.done()  # the thread still works on the store
        waiting = asyncio.ensure_future(_deltafeed.settled(store))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # the next answer waits for it
        go.set()
        assert await waiting is store and store.busy is None
        return [n.name for n in store.values()]

    assert asyncio.run(main()) == ["n1", "new"]


def test_a_failure_in_the_thread_reaches_the_caller(monkeypatch):
    import asyncio

    monkeypatch.setattr(_deltafeed, "OFF_THREAD_AT", 1)
    store, feed = _refresh_feed(2)

    def broken(delta):
        raise ValueError("bad delta")

    monkeypatch.setattr(store, "apply", broken)
    try:
        asyncio.run(feed.complete())
    except ValueError as exc:
        assert str(exc) == "bad delta"
    else:
        raise AssertionError("the thread's error was lost")
