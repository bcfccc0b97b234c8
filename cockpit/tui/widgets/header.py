"""The header line (source, data age, paused, read-only) and the stale banner."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from cockpit.core.poller import PollStatus
from cockpit.text import clean
from cockpit.models import ClusterSnapshot
from cockpit.models.unread import summary
from cockpit.tui.rows import duration


class CockpitHeader(Static):
    DEFAULT_CSS = """
    CockpitHeader { height: 1; background: $panel; color: $text; }
    """
    _shown: Text | None = None

    def show(self, snap: ClusterSnapshot | None, status: PollStatus | None, read_only: bool, view: str,
             cluster: str = "", stale_others: tuple[str, ...] = ()) -> None:
        """``cluster``: the [clusters.NAME] in front ('' for none); ``stale_others``: the
        other clusters whose fetches fail (each has its own banner on the fleet Pulse, c)."""
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" cockpit ", style="bold reverse")
        if cluster:
            t.append(f" ⎈ {clean(cluster, 24)} ", style="bold")  # a cluster string: text, cleaned
        t.append(f" {view} ", style="bold")
        if snap is not None:
            t.append("│ ")
            t.append(clean(snap.source, 40))
            if snap.simulated:
                t.append(" SIMULATED", style="bold reverse")
            if snap.slurm_version:
                t.append(f" slurm {clean(snap.slurm_version, 12)}")
        if status is not None:
            age = status.age()
            t.append(" │ age ")
            t.append("—" if age is None else duration(age) or "0s")
            if status.paused:
                t.append(" ‖ PAUSED", style="bold reverse")
            if status.stale:
                t.append(" ⚠ STALE", style="bold reverse")
        if snap is not None and (unread := summary(snap.errors)):
            t.append(f" │ ⚠ {unread} (! lists them)", style="bold")
        if stale_others:
            t.append(f" │ ⚠ stale: {clean(', '.join(stale_others), 40)} (c)", style="bold")
        if read_only:
            t.append(" READ-ONLY", style="bold reverse")
        if t == self._shown:
            return
        self._shown = t
        self.update(t, layout=False)  # height 1 by CSS: no re-layout of the whole screen


class StaleBanner(Static):
    """Visible only while a fetch fails: the data shown is old, here is why."""

    DEFAULT_CSS = """
    StaleBanner { height: auto; max-height: 3; background: $error; color: $text; display: none; }
    StaleBanner.-stale { display: block; }
    """

    def show(self, status: PollStatus | None, cluster: str = "") -> None:
        """``cluster``: whose data it is ('' for a session without [clusters.NAME])."""
        stale = bool(status and status.stale)
        self.set_class(stale, "-stale")
        if not stale:
            return
        age = status.age()
        t = Text(no_wrap=False)
        t.append("⚠ STALE DATA" + (f" of cluster {clean(cluster, 40)}" if cluster else ""), style="bold")
        t.append(f" — last good data {duration(age) or '0s'} ago" if age is not None else " — no data yet")
        retry = status.next_retry
        if retry is not None:
            t.append(f"; retrying in {duration(max(0.0, retry - status.now)) or '0s'}")
        t.append(". Cause: ")
        t.append(clean(status.cause, 160))
        self.update(t)
