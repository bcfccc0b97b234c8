"""The flapping watch is a kind of the one poller (cockpit/core/flapwatch.py), tested as
the poller's other kinds are: a fake clock, the demo cluster's real accounting (its Xid
node drained 3 times in 14 days), failures injected, reads counted. No real waiting."""

from __future__ import annotations

import pytest

from cockpit.backends.demo import DemoBackend
from cockpit.config import Config, parse_config
from cockpit.core.flapwatch import KIND, FlappingWatch
from cockpit.core.poller import MAX_BACKOFF, Poller
from cockpit.errors import CommandTimeout
from tests.unit.test_poller import Clock

NOW = 1_750_000_000.0


def watched(backend, interval: float = 600.0):
    clock, delivered = Clock(NOW), []
    watch = FlappingWatch(backend, clock, delivered.append, interval)
    kinds = {KIND: watch.node_kind()} if watch.available else {}
    poller = Poller(backend, lambda _s, _st: None, clock=clock, timer=clock, node_kinds=kinds)
    return poller, watch, clock, delivered


async def test_the_flapping_node_is_delivered_once_per_interval():
    demo = DemoBackend(clock=lambda: NOW)
    poller, watch, clock, delivered = watched(demo)
    await poller.poll_nodes_once()
    assert watch.reads == 1 and demo.xid_node in delivered[0]
    clock.t += 599.0
    await poller.poll_nodes_once()
    assert watch.reads == 1  # not due yet
    clock.t += 1.0
    await poller.poll_nodes_once()
    assert watch.reads == 2 and len(delivered) == 2
    poller.refresh_now()  # r: every kind, this one included
    await poller.poll_nodes_once()
    assert watch.reads == 3


async def test_a_failing_read_keeps_the_mark_backs_off_and_recovers(monkeypatch):
    demo = DemoBackend(clock=lambda: NOW)
    poller, watch, clock, delivered = watched(demo)
    await poller.poll_nodes_once()
    acct = await demo.capabilities().accounting.accounting()
    real = acct.node_events

    async def timing_out(*_a, **_k):
        raise CommandTimeout("sacctmgr list event timed out after 30s")

    monkeypatch.setattr(acct, "node_events", timing_out)
    clock.t = poller.node_status(KIND).next_due
    await poller.poll_nodes_once()
    first = poller.node_status(KIND)
    assert first.failures == 1 and "timed out" in first.error and len(delivered) == 1  # the last mark stays
    assert first.next_due - clock.t == pytest.approx(5.0)  # retried soon, not after 10 minutes
    clock.t = first.next_due
    await poller.poll_nodes_once()
    second = poller.node_status(KIND)
    assert second.failures == 2 and second.next_due - clock.t == pytest.approx(min(10.0, MAX_BACKOFF))  # doubled
    monkeypatch.setattr(acct, "node_events", real)
    clock.t = second.next_due
    await poller.poll_nodes_once()
    assert poller.node_status(KIND).failures == 0 and poller.node_status(KIND).error == ""
    assert len(delivered) == 2 and demo.xid_node in delivered[-1]


class NoAccounting(DemoBackend):
    """The demo cluster without its slurmdbd: the backend offers no accounting."""

    def capabilities(self):
        from dataclasses import replace

        return replace(super().capabilities(), accounting=None)


async def test_without_accounting_it_asks_once_and_never_again_in_silence():
    poller, watch, clock, delivered = watched(NoAccounting(clock=lambda: NOW))
    await poller.poll_nodes_once()
    assert not watch.available and "offers no accounting" in watch.why_not
    assert poller.node_status(KIND).failures == 0 and delivered == []  # not an error: nothing to read
    for _ in range(3):
        clock.t += 600.0
        await poller.poll_nodes_once()
    assert watch.reads == 0 and delivered == []


def test_the_interval_is_configured_as_the_other_kinds_and_zero_turns_it_off():
    assert Config().refresh.flapping == 600.0
    off = parse_config("[refresh]\nflapping = 0\n")
    _poller, watch, _clock, _delivered = watched(DemoBackend(clock=lambda: NOW), off.refresh.flapping)
    assert not watch.available and watch.why_not == "off ([refresh] flapping = 0)"
