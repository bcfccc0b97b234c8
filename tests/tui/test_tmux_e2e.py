"""`cockpit` in a real terminal (tmux) against the real Slurm test cluster.

One cockpit process runs for the whole module in a private tmux server (its own
socket, its own environment: SLURM_CONF from env.sh and a temporary
XDG_CONFIG_HOME whose config sets 1 s refresh intervals). The tests type keys
with ``send-keys`` and read the screen with ``capture-pane -p``, polling with a
deadline; a failure shows the captured screen.

"Within two refreshes" is counted, not timed: ``general.slurm_bin_dir`` points at
wrapper scripts that log each start of squeue/sinfo/scontrol and exec the real
binary, so the test knows how many job fetches began after sbatch returned.

The stale-banner test stops slurmctld (SIGTERM to the pid in its pid file) and
always restarts it with ``tests/cluster/up`` (idempotent) in a finally block.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from clusterlib import RUN_DIR, cancel, run, submit, wait_for

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
# the cockpit of the environment running the tests (.venv here, /opt/cockpit-venv in other-debian)
COCKPIT = Path(sys.executable).with_name("cockpit")
UP = ROOT / "tests" / "cluster" / "up"
CTLD_PID = RUN_DIR / "pids" / "head.slurmctld.pid"
NODE = "node04"  # node03 belongs to the actions tests
WIDTH, HEIGHT = 160, 48
TRACEBACK_MARKS = ("Traceback (most recent call last)", "Error in ", "─ locals ─")
VIEW_KEYS = {"1": "Pulse", "2": "Nodes", "3": "GPUs", "4": "Partitions", "5": "Jobs"}


class Terminal:
    """A tmux server of our own running one cockpit; screen reads and key presses."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.socket = f"cockpit-e2e-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.workdir, self.env = workdir, env
        conf = workdir / "tmux.conf"
        # remain-on-exit: if cockpit dies, its last screen (a traceback) stays readable.
        # escape-time 0: tmux passes Esc on at once instead of waiting 500 ms to pair it with the
        # next key as Meta-key (Esc then "2" would otherwise arrive as M-2).
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 0\nset -g status off\n"
                        "set -s escape-time 0\n")
        self.conf = conf

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-u", "-L", self.socket, "-f", str(self.conf), *args],
                              env=self.env, capture_output=True, text=True, check=check, timeout=20)

    def start(self, argv: list[str]) -> None:
        self.tmux("new-session", "-d", "-s", "e2e", "-x", str(WIDTH), "-y", str(HEIGHT), "--", *argv)

    def stop(self) -> None:
        self.tmux("kill-server", check=False)

    def screen(self) -> str:
        res = self.tmux("capture-pane", "-p", "-t", "e2e", check=False)
        return res.stdout if res.returncode == 0 else f"<capture-pane failed: {res.stderr.strip()}>"

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "e2e", *(["-l"] if literal else []), *keys)

    def wait(self, predicate: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        """Poll the screen until predicate(screen) holds; return that screen.

        Raises AssertionError (with the last screen) on timeout or when a traceback shows.
        """
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            assert_no_traceback(text)
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not seen within {timeout:g} s; screen:\n{text}")
            time.sleep(0.15)


def assert_no_traceback(text: str) -> None:
    assert not any(m in text for m in TRACEBACK_MARKS), f"a Python traceback is on screen:\n{text}"


def header(text: str) -> str:
    return text.splitlines()[0] if text.strip() else ""


def row(text: str, first_word: str) -> str:
    """The table line whose first cell is first_word ('' when absent)."""
    return next((ln for ln in text.splitlines() if ln.split()[:1] == [first_word]), "")


def _wrappers(bindir: Path, log: Path) -> None:
    """squeue/sinfo/scontrol wrappers: log the start, then exec the real binary (same argv)."""
    bindir.mkdir()
    for name in ("squeue", "sinfo", "scontrol"):
        real = shutil.which(name)
        assert real, f"{name} not on PATH"
        script = bindir / name
        script.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\nexec "{real}" "$@"\n')
        script.chmod(0o755)


def _squeue_starts(log: Path) -> int:
    try:
        return sum(1 for ln in log.read_text().splitlines() if ln.startswith("squeue "))
    except FileNotFoundError:
        return 0


@pytest.fixture(scope="module")
def term(cluster, tmp_path_factory):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    if os.geteuid() != 0:
        pytest.skip("needs root: drains a node and stops/restarts slurmctld")
    if not COCKPIT.exists():
        pytest.skip(f"{COCKPIT} missing: pip install -e '.[test]' into this environment")
    work = tmp_path_factory.mktemp("tmux-e2e")
    log = work / "slurm-commands.log"
    _wrappers(work / "bin", log)
    (work / "cfg" / "cockpit").mkdir(parents=True)
    (work / "cfg" / "cockpit" / "config.toml").write_text(
        f'[general]\nbackend = "slurm-cli"\nslurm_bin_dir = "{work / "bin"}"\n\n'
        "[refresh]\nnodes = 1\njobs = 1\npartitions = 5\ntopology = 30\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "SLURM_CONF": cluster["SLURM_CONF"],
           "XDG_CONFIG_HOME": str(work / "cfg"), "XDG_STATE_HOME": str(work / "state")}
    t = Terminal(work, env)
    t.log = log  # type: ignore[attr-defined]
    t.start([str(COCKPIT)])
    try:
        t.wait(lambda s: "Pulse" in header(s) and "age" in header(s), "cockpit's Pulse view with data")
        yield t
        assert_no_traceback(t.screen())
    finally:
        t.stop()


def test_submitted_job_appears_within_two_refreshes(term, cluster):
    name = f"cockpit-e2e-{uuid.uuid4().hex[:6]}"
    term.keys("5")
    term.wait(lambda s: "Jobs" in header(s), "the Jobs view")
    # Filter on the name so the row is on screen however many jobs others left behind.
    term.keys("/")
    term.keys(name, literal=True)
    term.keys("Enter")
    term.wait(lambda s: f"filter: {name}" in s, "the Jobs view filtered on the job name", 10)
    job_id = submit("sleep 300", job_name=name, nodes=1, time=10)
    try:
        before, deadline = _squeue_starts(term.log), time.monotonic() + 60  # only against a hang
        while True:
            started = _squeue_starts(term.log) - before
            text = term.screen()
            assert_no_traceback(text)
            line = next((ln for ln in text.splitlines() if ln.split()[:1] == [job_id]), "")
            if line:
                break
            # Job fetch 1 may have begun before sbatch returned; fetch 2 surely holds the job and
            # has ended (and drawn) before fetch 3 begins, a refresh interval later.
            assert started < 3, f"job {job_id} not on screen after {started} job fetches began:\n{text}"
            assert time.monotonic() < deadline, f"no job fetch for 60 s ({started} began):\n{text}"
            time.sleep(0.1)
        assert name in line, line
        assert started <= 2
    finally:
        cancel(job_id)
    term.keys("Escape")
    term.wait(lambda s: "filter:" not in s, "Esc clears the filter", 10)


def test_drained_node_changes_state_on_screen(term, cluster):
    reason = f"e2e-{uuid.uuid4().hex[:6]}"
    term.keys("2")
    term.wait(lambda s: "Nodes" in header(s) and row(s, NODE), f"the Nodes view with {NODE}")
    run(["scontrol", "update", f"NodeName={NODE}", "State=DRAIN", f"Reason={reason}"])
    try:
        text = term.wait(lambda s: "drain" in row(s, NODE) and reason in row(s, NODE), f"{NODE} drained")
        assert "root" in row(text, NODE)  # who drained it (BY column)
    finally:
        run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"], check=False)
    term.wait(lambda s: row(s, NODE) and "drain" not in row(s, NODE) and reason not in row(s, NODE),
              f"{NODE} resumed")


def _controller_up() -> bool:
    res = run(["scontrol", "ping"], check=False, timeout=15)
    return "is UP" in res.stdout


def _stop_slurmctld() -> None:
    """SIGTERM the slurmctld whose pid is in its pid file (checked by /proc/PID/exe), wait for it."""
    pid = int(CTLD_PID.read_text().split()[0])
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except FileNotFoundError:
        return  # already stopped (another run of this test): the controller is down anyway
    assert "slurmctld" in os.path.basename(exe), f"pid {pid} in {CTLD_PID} is {exe}, not slurmctld"
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30)


def _restart_slurmctld() -> None:
    subprocess.run([str(UP)], capture_output=True, text=True, timeout=300, check=True)
    wait_for(_controller_up, timeout=60, interval=0.5)


def test_stale_banner_keys_respond_and_recovery(term, cluster):
    term.keys("1")
    term.wait(lambda s: "Pulse" in header(s) and "STALE" not in s, "fresh Pulse view")
    try:
        _stop_slurmctld()
        text = term.wait(lambda s: "STALE DATA" in s, "the stale banner", timeout=90)
        assert "Cause:" in text, text
        # Every view key (we are on Pulse, so start at 2 and end on 1): the UI answers while
        # fetches fail.
        for key, title in [*list(VIEW_KEYS.items())[1:], ("1", "Pulse")]:
            term.keys(key)
            term.wait(lambda s, t=title: t in header(s) and "STALE DATA" in s,
                      f"key {key} -> {title} view while stale", timeout=10)
        term.keys("?", literal=True)
        term.wait(lambda s: "Keys" in s and "pause / resume polling" in s, "the keys screen while stale", 10)
        term.keys("Escape")
    finally:
        _restart_slurmctld()
    text = term.wait(lambda s: "STALE" not in s, "the stale banner to clear by itself", timeout=120)
    assert "age" in header(text), text
