"""The 3 AM walk, in a real terminal (tmux), on ``cockpit --demo``, at 80x24 and 160x48,
without a mouse (issue 16, Done-when): the Pulse shows the hung job and the Xid-79
node; ``w`` on the job names the stalled rank with its stack; ``Enter`` ``Enter``
reaches the straggler's node; ``a`` drains it with a template reason; the audit view
shows the drain; no row is left marked. Every check reads the captured screen text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the cockpit of the environment running the tests (.venv here, /opt/cockpit-venv in other-debian)
COCKPIT = Path(sys.executable).with_name("cockpit")
# A real terminal with real waits: one tmux test at a time, with the other tmux tests.
pytestmark = pytest.mark.serial
TRACEBACK_MARKS = ("Traceback (most recent call last)", "─ locals ─")


class Terminal:
    def __init__(self, workdir: Path, size: tuple[int, int]) -> None:
        self.socket = f"cockpit-walk-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.size = size
        conf = workdir / "tmux.conf"
        # remain-on-exit keeps a crash's last screen; escape-time 0 passes Esc on at once
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 0\nset -g status off\nset -s escape-time 0\n")
        self.conf = conf
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "LANG": "C.UTF-8",
                    "TERM": "xterm-256color", "XDG_CONFIG_HOME": str(workdir / "cfg"),
                    "XDG_STATE_HOME": str(workdir / "state")}

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-u", "-L", self.socket, "-f", str(self.conf), *args], env=self.env,
                              capture_output=True, text=True, check=check, timeout=20)

    def start(self, argv: list[str]) -> None:
        w, h = self.size
        self.tmux("new-session", "-d", "-s", "walk", "-x", str(w), "-y", str(h), "--", *argv)

    def stop(self) -> None:
        self.tmux("kill-server", check=False)

    def screen(self) -> str:
        res = self.tmux("capture-pane", "-p", "-t", "walk", check=False)
        return res.stdout if res.returncode == 0 else f"<capture-pane failed: {res.stderr.strip()}>"

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "walk", *(["-l"] if literal else []), *keys)
        if "Escape" in keys:
            # an Esc with the next key right behind it reads as Meta+key (alt+enter): let it land alone
            time.sleep(0.4)

    def wait(self, predicate: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            assert not any(m in text for m in TRACEBACK_MARKS), f"a traceback is on screen:\n{text}"
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not seen within {timeout:g} s; screen:\n{text}")
            time.sleep(0.15)


@pytest.fixture(params=[(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def term(request, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    if not COCKPIT.exists():
        pytest.skip(f"{COCKPIT} missing: pip install -e '.[test]' into this environment")
    t = Terminal(tmp_path, request.param)
    t.start([str(COCKPIT), "--demo"])
    t.audit = tmp_path / "state" / "cockpit" / "demo-audit.jsonl"  # type: ignore[attr-defined]  # the demo's own
    try:
        yield t
    finally:
        t.stop()


def header(text: str) -> str:
    return text.splitlines()[0] if text.strip() else ""


def test_the_3am_walk(term):
    # The Pulse: the hung job first among the suspects, the Xid-79 node among the drained.
    text = term.wait(lambda s: "SUSPECT JOBS (" in s and "48213" in s and "output silent" in s,
                     "the hung job on the Pulse")
    assert "dgx013" in text and "Xid 79" in text, text
    # w on it (the cursor starts there): the hung-job runbook names the straggler and its stack
    term.keys("w")
    text = term.wait(lambda s: "straggler: rank 43 on dgx006" in s and "rank 43 (pid" in s,
                     "the straggler and its stack", timeout=60)
    assert "_read" in text or "indexed_dataset" in text, text  # a frame of the stack
    # back to the Pulse; Enter Enter: the job's detail, then its first node, the straggler's
    term.keys("Escape")
    term.wait(lambda s: "SUSPECT JOBS (" in s, "the Pulse again")
    term.keys("Enter")
    term.wait(lambda s: "job 48213" in s and "← straggler" in s, "the job's detail, the straggler's node first")
    term.keys("Enter")
    term.wait(lambda s: "node dgx006" in s and "› dgx006" in s, "the straggler's node")
    # a: drain it with a template reason, confirmed with the exact command
    term.keys("a")
    term.wait(lambda s: "Drain node" in s and "Resume node" in s, "the action menu")
    term.keys("Enter")
    term.wait(lambda s: "a template (↑↓ enter)" in s and "maintenance" in s, "the reason form")
    # the form's list has the focus as it shows; choosing a template says which, and the
    # reason line has the focus from then on: wait for that, not for a time
    term.keys("Down", "Enter")  # the first template
    term.wait(lambda s: "template: Xid 79" in s, "the template chosen")
    term.keys("Enter")  # no detail after it
    text = term.wait(lambda s: "scontrol update NodeName=dgx006 State=DRAIN" in s, "the confirmation")
    assert "keep running" in text and "48213" in text, text  # what the drain leaves running
    term.keys("y")
    term.wait(lambda s: "1 done" in s and "dgx006" in s, "the result")
    term.keys("Enter")
    term.wait(lambda s: "node dgx006" in s and "draining" in s, "the node draining", timeout=20)
    # the audit view shows the drain
    term.keys("A")
    text = term.wait(lambda s: "audit log" in s and "drain" in s and "dgx006" in s and "done" in s,
                     "the drain in the audit view")
    assert "resume this node (dgx006)" in text, text
    # nothing is left marked
    term.keys("Escape")
    term.keys("2")
    text = term.wait(lambda s: "Nodes" in header(s) and "Nodes: " in s, "the nodes view")
    assert "marked:" not in text, text
    assert term.audit.exists() and '"drain"' in term.audit.read_text()
    assert not term.audit.with_name("audit.jsonl").exists()  # the site's audit log: never written by the demo
