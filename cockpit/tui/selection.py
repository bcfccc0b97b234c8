"""What the operator is looking at: the targets of an action, the job under the cursor.

Read from the App's own screens only: the main screen's active table (marked
rows, else the cursor row; the table's ``target_kind`` says whether its keys
are jobs or nodes) or a pushed screen that names its own target with a
``targets()`` (a :class:`~cockpit.plugins.specs.ScreenOffers`: a job's or node's
history, its describe view ...); a job's or node's detail is asked by its type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.models import Job
from cockpit.plugins.specs import ScreenOffers
from cockpit.tui.screens.detail import JobDetailScreen, NodeDetailScreen
from cockpit.tui.services import services_for

if TYPE_CHECKING:
    from cockpit.tui.app import CockpitApp


def current_targets(app: CockpitApp) -> tuple[str, tuple[str, ...]]:
    """("job"|"node", keys) for what the operator is looking at; ("", ()) if nothing."""
    screen = app.screen
    if isinstance(screen, JobDetailScreen):
        return "job", (str(screen.key),)
    if isinstance(screen, NodeDetailScreen):
        return "node", (str(screen.key),)
    if screen is not app.main:
        return screen.targets() if isinstance(screen, ScreenOffers) else ("", ())
    table = app.main.active_table()
    if table is None or not table.target_kind:
        return "", ()
    keys = table.selected_keys()
    if table.target_kind == "job":
        return "job", tuple(str(k) for k in keys)
    return "node", tuple(dict.fromkeys(str(k).split(":", 1)[0] for k in keys))


def job_in_view(app: CockpitApp) -> Job | None:
    """The job of a job detail screen (in its own cluster's snapshot) or the jobs view's
    cursor row (or first marked row)."""
    kind, targets = current_targets(app)
    snap = services_for(app).snapshot
    if kind != "job" or not targets or snap is None:
        return None
    return next((j for j in snap.jobs if str(j.job_id) == targets[0]), None)


def selected_job(app: CockpitApp) -> Job | None:
    """The job in view, or in the GPU view the job holding the GPU under the cursor."""
    job = job_in_view(app)
    snap = app.snapshot
    if job is not None or snap is None or app.screen is not app.main or app.current_view() != "gpus":
        return job
    from cockpit.tui.rows import gpu_holders

    keys = app.selected_keys()
    if not keys:
        return None
    node, _, idx = str(keys[0]).rpartition(":")
    return gpu_holders(snap.jobs).get((node, int(idx))) if idx.isdecimal() else None


def nodes_in_view(app: CockpitApp) -> set[str]:
    """Nodes of the selection: the nodes themselves, or the nodes of the selected jobs."""
    kind, targets = current_targets(app)
    if kind == "node":
        return set(targets)
    snap = services_for(app).snapshot  # a detail's job is of its own cluster
    if kind == "job" and snap is not None:
        wanted = set(targets)
        return {n for j in snap.jobs if str(j.job_id) in wanted for n in j.nodes}
    return set()
