"""Which nodes flap: the ``flapping`` kind of each cluster's poller (no Textual here).

Every ``[refresh] flapping`` seconds (0: never) one sacctmgr query reads every node's
drain/down events of the last FLAP_WINDOW_S (cockpit.core.nodehistory.flapping_nodes);
the nodes drained or down 3 times or more are handed to ``deliver`` (the Nodes view's
flapping mark). As the poller's other kinds: one read at a time, its interval raised to
5x a slow read's duration, a failing read (sacctmgr timing out) kept as the kind's
error and retried with backoff until it succeeds. Where the backend has no accounting
at all, it is asked once and never again, in silence: the views that need accounting
say so when opened.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cockpit.core.accounting import AccountingUnavailable, require_accounting
from cockpit.core.nodehistory import flapping_nodes
from cockpit.core.poller import NodeKind

KIND = "flapping"
FLAP_WINDOW_S = 14 * 86400
WHOLE_CLUSTER = ("accounting",)  # the one "node" the kind reads: it asks slurmdbd for every node at once


class FlappingWatch:
    """``deliver(names)`` gets the flapping nodes (a frozenset) after each read."""

    def __init__(self, backend: Any, clock: Callable[[], float], deliver: Callable[[frozenset[str]], Any],
                 interval: float) -> None:
        self.backend, self.clock, self._deliver = backend, clock, deliver
        self.interval = float(interval)
        self.available = self.interval > 0
        self.why_not = "" if self.available else "off ([refresh] flapping = 0)"
        self.reads = 0  # sacctmgr queries made (tests count them)

    def node_kind(self) -> NodeKind:
        return NodeKind(fetch=self.fetch, wanted=self.wanted, deliver=self.deliver, interval=max(self.interval, 1.0))

    def wanted(self) -> tuple[str, ...]:
        return WHOLE_CLUSTER if self.available else ()

    async def fetch(self, _nodes: tuple[str, ...]) -> frozenset[str] | None:
        """The flapping nodes; None (and no more reads) where there is no accounting.
        Raises BackendError/ParseError for a read that failed (the poller retries it)."""
        try:
            acct = await require_accounting(self.backend)
        except AccountingUnavailable as exc:
            self.available, self.why_not = False, str(exc)
            return None
        self.reads += 1
        names, _costs = await flapping_nodes(acct, int(self.clock()) - FLAP_WINDOW_S)
        return names

    def deliver(self, _nodes: tuple[str, ...], names: frozenset[str] | None) -> Any:
        return None if names is None else self._deliver(names)
