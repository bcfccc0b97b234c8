"""The runbook screen for an opener's request (opening.py declares the openers): the
runbook named, on the selected job or node. Imported by the TUI only (Textual)."""

from __future__ import annotations

from typing import Any

from cockpit.plugins.api import OpenRefused, OpenRequest, UsageError

from . import load_runbooks
from .context import RunContext
from .screen import RunbookScreen


def open_runbook(req: OpenRequest) -> Any:
    """The runbook screen for ``req.choice`` on the selected job or node. Raises UsageError
    for an unknown runbook, OpenRefused when the selection is not what the runbook needs."""
    books, problems = load_runbooks()
    for pr in problems:
        req.warn(f"runbook {pr}")
    book = books.get(req.choice)
    if book is None:
        raise UsageError(f"no runbook {req.choice!r} (known: {', '.join(sorted(books))})")
    if not req.target or req.kind != book.target:
        raise OpenRefused(f"runbook {req.choice} needs a {book.target}: select one first")
    rc = RunContext(req.ctx, job_id=req.target) if req.kind == "job" else RunContext(req.ctx, node=req.target)
    return RunbookScreen(book, rc, req.mode or "propose")


def open_validation(req: OpenRequest) -> Any:
    """The node's validation; only a drained or down node has a resume to offer."""
    node = req.node
    if node is not None and not node.is_unavailable:
        raise OpenRefused(f"{node.name} is {node.display_state}, not drained or down: nothing to resume")
    return open_runbook(req)
