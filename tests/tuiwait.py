"""Waiting for an event in a Pilot test, instead of waiting a fixed time.

A test that sleeps a fixed time and then asserts that something happened fails
when the machine is busy (these machines are shared and noisy). Wait for the
event itself: ``await wait_until(pilot, lambda: ..., "what")``. The deadline
only guards against a hang; it is never what makes a test pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STEP = 0.05  # seconds between looks: the app's event loop runs meanwhile


def screen_text(app) -> str:
    """The text of the app's current screen, as drawn now."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def wait_until(pilot, predicate: Callable[[], T], what: str, timeout: float = 30.0) -> T:
    """Let the app run until ``predicate()`` is truthy, and return that value.

    Raises AssertionError naming ``what`` (and showing the screen) when it is
    still falsy after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s\n{_shown(pilot)}")
        await pilot.pause(STEP)


async def wait_for_text(pilot, check: str | Callable[[str], object], what: str = "", timeout: float = 30.0) -> str:
    """Wait until the screen's text contains ``check`` (a string) or satisfies it (a
    callable on the text); returns that text. Raises AssertionError as wait_until."""
    test = (lambda text: check in text) if isinstance(check, str) else check

    def shown() -> tuple[str] | None:
        text = screen_text(pilot.app)
        return (text,) if test(text) else None

    (text,) = await wait_until(pilot, shown, what or f"{check!r} on the screen", timeout)
    return text


def _shown(pilot) -> str:
    try:
        return screen_text(pilot.app)
    except Exception as exc:  # noqa: BLE001 - the message is for a failure already
        return f"(no screen: {exc})"


def runbook_step(runbook: str, step_id: str) -> str:
    """"step N of M" as the runbook screen and its confirmations name a bundled runbook's
    step, counted from the runbook's TOML, so that a step added before it moves no test."""
    from pathlib import Path

    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib

    path = Path(__file__).resolve().parents[1] / "plugins" / "cockpit_runbooks" / "runbooks" / f"{runbook}.toml"
    ids = [step["id"] for step in tomllib.loads(path.read_text())["steps"]]
    return f"step {ids.index(step_id) + 1} of {len(ids)}"
