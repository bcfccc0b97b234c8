"""The runbook screen: steps, live evidence, findings and the proposed argv (Pilot)."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.widgets import Log, Static

from pluginctx import make_ctx
from cockpit_runbooks import load_runbooks, plugin
from cockpit_runbooks.context import RunContext
from cockpit_runbooks.screen import RunbookScreen

DATA = Path(__file__).resolve().parents[1] / "data"


async def test_screen_shows_steps_evidence_findings_and_argv():
    books, _ = load_runbooks()
    log = str(DATA / "xid-dmesg" / "modal-docs-gpu-health-xid79-line.txt")
    rc = RunContext(make_ctx(), node="gpu07", kernel_logs=(log,))
    screen = RunbookScreen(books["gpu-xid"], rc)

    class _App(App):
        def on_mount(self) -> None:
            self.push_screen(screen)

    async with _App().run_test(size=(140, 40)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if len(screen.outcomes) == len(books["gpu-xid"].steps):
                break
        steps = str(screen.query_one("#rb-steps", Static).render())
        found = str(screen.query_one("#rb-findings", Static).render())
        evidence = "\n".join(screen.query_one("#rb-evidence", Log).lines)
    assert "Xid 79 -> RESTART_BM" in evidence
    assert "GPU has fallen off the bus" in found
    # a post-mortem names the node, so the reboot is proposed with its exact argv, not run
    assert screen.outcomes["reboot"].status == "proposed"
    assert screen.outcomes["reboot"].argv[0][:3] == ["scontrol", "reboot", "ASAP"]
    assert "proposed" in steps
    assert plugin.screens["runbook"] == "cockpit_runbooks.screen:RunbookScreen"
