"""Small Messages that carry data into the app. Newer ones replace queued older ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.message import Message

from cockpit.core.poller import PollStatus
from cockpit.models import ClusterSnapshot

# Telemetry, as the poller's telemetry node kind posts it (cockpit/tui/telemetry.py):
#   TelemetryUpdated({("node01", 0): {"util": 97.0, "mem": 81.0, "temp": 64.0,
#                                      "power": 512.0, "ecc": 0, "throttle": "none"}, ...})
# (``app.post_message``, thread-safe) or ``app.set_telemetry(mapping)``.
# Units: util and mem in percent, temp in °C, power in W, ecc an error count,
# throttle a short reason word. Missing keys/GPUs leave the cells empty.
TelemetryMap = Mapping[tuple[str, int], Mapping[str, Any]]


class SnapshotUpdated(Message):
    """A poller produced a new snapshot (and its status); ``cluster``: whose poller
    ('' for the one cluster of a session without [clusters.NAME])."""

    def __init__(self, snapshot: ClusterSnapshot, status: PollStatus, cluster: str = "") -> None:
        super().__init__()
        self.snapshot, self.status, self.cluster = snapshot, status, cluster

    def can_replace(self, message: Message) -> bool:
        # a newer snapshot of the same cluster only: one cluster's poll must never drop another's
        return isinstance(message, SnapshotUpdated) and message.cluster == self.cluster


class StatusUpdated(Message):
    """Poller status changed without new data (pause, failure)."""

    def __init__(self, status: PollStatus) -> None:
        super().__init__()
        self.status = status

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StatusUpdated)


class TelemetryUpdated(Message):
    """Live GPU telemetry keyed by (node, GPU index); see TelemetryMap above. ``cluster``:
    whose nodes ('' for the one cluster of a session without [clusters.NAME])."""

    def __init__(self, telemetry: TelemetryMap, cluster: str = "") -> None:
        super().__init__()
        self.telemetry, self.cluster = telemetry, cluster

    def can_replace(self, message: Message) -> bool:
        # a newer reading of the same cluster only: one cluster's must never drop another's
        return isinstance(message, TelemetryUpdated) and message.cluster == self.cluster
