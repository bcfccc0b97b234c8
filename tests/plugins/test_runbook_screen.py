"""The runbook screen: steps, live evidence, findings and the proposed argv (Pilot)."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from pluginctx import make_ctx
from cockpit_runbooks import load_runbooks, plugin
from cockpit_runbooks.context import RunContext
from cockpit_runbooks.screen import RunbookScreen, findings_text

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
        found = findings_text(screen.outcomes).plain
        evidence = "\n".join(screen.evidence_lines)
    assert "Xid 79 -> RESTART_BM" in evidence
    assert "GPU has fallen off the bus" in found
    # a post-mortem names the node, so the reboot is proposed with its exact argv, not run
    assert screen.outcomes["reboot"].status == "proposed"
    assert screen.outcomes["reboot"].argv[0][:3] == ["scontrol", "reboot", "ASAP"]
    assert [o.status for o in screen.outcomes.values()].count("proposed") >= 1
    assert plugin.screens["runbook"] == "cockpit_runbooks.screen:RunbookScreen"


async def _press_x(ctx) -> tuple[object, object, list[str]]:
    books, _ = load_runbooks()
    log = str(DATA / "xid-dmesg" / "modal-docs-gpu-health-xid79-line.txt")
    screen = RunbookScreen(books["gpu-xid"], RunContext(ctx, node="gpu07", kernel_logs=(log,)))

    class _App(App):
        def on_mount(self) -> None:
            self.push_screen(screen)

    app = _App()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("x")
        await pilot.pause(0.2)
        return screen, app.screen, [n.message for n in app._notifications]


async def test_x_runs_again_in_act_mode_through_the_gate_or_is_refused_read_only(tmp_path):
    from cockpit.core.audit import AuditLog, read_audit

    first, shown, _notes = await _press_x(make_ctx())
    assert isinstance(shown, RunbookScreen) and shown is not first and shown.mode == "act"
    assert shown.rc is not first.rc and shown.rc.kernel_logs == first.rc.kernel_logs  # the same inputs, a fresh run

    audit = AuditLog(tmp_path / "audit.jsonl")
    first, shown, notes = await _press_x(make_ctx(read_only=True, audit=audit))
    assert shown is first and shown.mode == "propose"
    assert any("read-only mode" in n for n in notes)
    assert [(r["action"], r["result"]) for r in read_audit(tmp_path / "audit.jsonl")] == [("runbooks.gpu-xid", "refused")]


def test_a_long_finding_keeps_its_cause_and_the_worst_come_first():
    """Issue 16, item 3: "OK dgx001: nvidia-smi --query-gpu=...(600 chars)... failed" hid
    the cause; a value was cut with no ellipsis."""
    from cockpit.plugins.api import Finding, Severity
    from cockpit_runbooks.engine import StepOutcome
    from cockpit_runbooks.screen import cut, shorten

    long = "dgx001: nvidia-smi --query-gpu=" + "x," * 300 + " failed: ssh dgx001: connection refused"
    short = shorten(long)
    assert short.endswith("connection refused") and "…" in short and short.startswith("dgx001: nvidia-smi")
    assert cut("elapsed 198833 s", 12) == "elapsed 198…"  # cut, and it says so
    outcomes = {
        "a": StepOutcome("a", "logs", "ran", findings=[Finding(Severity.CRIT, "watchdog timeout on 63 ranks"),
                                                       Finding(Severity.OK, long)]),
        "b": StepOutcome("b", "stacks", "ran", findings=[Finding(Severity.CRIT, "straggler: rank 43 on dgx006",
                                                                 evidence=("rank 43 (pid 9): _read <- get",))]),
    }
    text = findings_text(outcomes, width=60).plain
    lines = text.splitlines()
    assert lines[0].startswith(" CRIT  straggler: rank 43") and "rank 43 (pid 9): _read" in lines[1]
    assert all(len(line) <= 60 for line in lines[:4])  # the overview lines are cut to the pane
    assert "connection refused" in text  # the OK finding in full below, its cause kept


async def test_y_copies_the_proposed_commands():
    books, _ = load_runbooks()
    log = str(DATA / "xid-dmesg" / "modal-docs-gpu-health-xid79-line.txt")
    screen = RunbookScreen(books["gpu-xid"], RunContext(make_ctx(), node="gpu07", kernel_logs=(log,)))

    class _App(App):
        def on_mount(self) -> None:
            self.push_screen(screen)

    async with _App().run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if screen.finished:
                break
        value, what = screen.copy_text()
    assert value.startswith("scontrol reboot ASAP") and what == "the proposed command(s)"
