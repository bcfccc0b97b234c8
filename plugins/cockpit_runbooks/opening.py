"""What the runbooks plugin opens in the TUI, declared as openers (the TUI names no plugin):

* ``why`` (key ``w``, ``:runbook`` alone): a pending job opens cockpit's why-pending
  screen; a running job the hung-job runbook; a node (or a GPU row's node) gpu-xid;
* ``:runbook NAME`` and a palette entry per runbook: that runbook for the selection;
* ``validate`` (``:validate NODE``): a drained node's health runbook, the resume offered,
  confirmed, only if every finding is OK (NVSentinel #1427, soperator #1317).

Runbooks start in propose mode; the runbook screen's own ``x`` runs them again doing
the proposed actions, each one confirmed through the gate. The screens are built in
open_screen.py (Textual), imported only when a runbook opens.
"""

from __future__ import annotations

from dataclasses import replace

from cockpit.plugins.api import Choice, OpenerSpec

JOB_RUNBOOK, NODE_RUNBOOK = "hung-job", "gpu-xid"
VALIDATION = "node-validate"  # the runbook a drained node passes before the resume is offered


def choices() -> tuple[Choice, ...]:
    """One palette entry per runbook (bundled and site), by name."""
    from . import load_runbooks

    books, _problems = load_runbooks()
    return tuple(Choice(b.name, f"Runbook: {b.title} ({b.name})", f"Run it for the selected {b.target}")
                 for b in sorted(books.values(), key=lambda b: b.name))


WHY = OpenerSpec("why", help="A runbook for the selection: :runbook NAME (Tab completes); alone: why is this stuck?",
                 needs="job-or-node", missing="select a job or a node first",
                 build="cockpit_runbooks.open_screen:open_runbook", choices="cockpit_runbooks.opening:choices",
                 by_kind={"job": JOB_RUNBOOK, "node": NODE_RUNBOOK}, pending_job="why-pending",
                 colon=("runbook", "rb"), colon_arg="choice")
OPENERS = (
    WHY,
    # The screen's name (the palette command "Runbook: why is this job stuck?"): the same question.
    replace(WHY, name="runbook", help="", choices="", colon=(), colon_arg=""),
    OpenerSpec("validate", "Node: validate, then resume", "Validate a drained node (health runbook); the resume is "
               "offered, confirmed, only if all is OK: :validate NODE", needs="node",
               build="cockpit_runbooks.open_screen:open_validation", by_kind={"node": VALIDATION},
               colon=("validate", "burnin"), colon_arg="node", mode="validate"),
)
