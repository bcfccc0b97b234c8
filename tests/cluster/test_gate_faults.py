"""The gate under faults, on the real cluster: an audit log that cannot be written
stops the action before it runs; an action whose controller stops answering
mid-call is "outcome unknown" until it is read back; two operators acting on one
node each report what they did and the state they read back.

Faults are injected, not timed: slurmctld is frozen (SIGSTOP) and let go
(SIGCONT) at counted points of the command sequence, and always let go in a
``finally``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.backends.slurm_exec import SlurmExecutor
from cockpit.core.actions import Actions, Params, build_plan, yes_policy
from cockpit.core.audit import AuditLog, read_audit
from cockpit.runner import LocalRunner

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
NODE = "node03"


def _env(cluster) -> dict[str, str]:
    return dict(os.environ, SLURM_CONF=cluster["SLURM_CONF"])


def _state(cluster, node: str = NODE) -> str:
    out = subprocess.run(["scontrol", "show", "node", "-o", node], capture_output=True, text=True,
                         env=_env(cluster), timeout=30).stdout
    return next(w for w in out.split() if w.startswith("State=")).removeprefix("State=")


def _ctld_pid(cluster) -> int:
    return int(Path(cluster["COCKPIT_TEST_CLUSTER_RUN"], "pids", "head.slurmctld.pid").read_text().split()[0])


@pytest.fixture
def node03(cluster):
    yield NODE
    for state in ("RESUME", "UNDRAIN"):
        subprocess.run(["scontrol", "update", f"NodeName={NODE}", f"State={state}"], env=_env(cluster),
                       capture_output=True, timeout=30)


@pytest.fixture
def small_fs(tmp_path):
    """A tmpfs of 16 KiB; ``fill()`` leaves it without a free byte."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", str(mnt)], check=True)

    class Fs:
        path = mnt

        def fill(self):
            subprocess.run(["dd", "if=/dev/zero", f"of={mnt / 'fill'}", "bs=1k", "count=64"], capture_output=True)

        def remount_ro(self):
            subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)

    try:
        yield Fs()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _drain_with_audit_at(cluster, tmp_path, audit: Path):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f"[general]\naudit_log = {json.dumps(str(audit))}\n")
    env = dict(_env(cluster), XDG_CONFIG_HOME=str(tmp_path / "x"))
    env.pop("COCKPIT_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cockpit.cli", "--config", str(cfg), "node", "drain", NODE,
                           "--reason", "audit test", "--yes"], capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)


def test_a_full_audit_filesystem_stops_the_action_before_it_runs(cluster, tmp_path, small_fs, node03):
    audit = small_fs.path / "audit.jsonl"
    audit.touch()  # the file exists (as it does after the first action); the disk then fills
    small_fs.fill()
    proc = _drain_with_audit_at(cluster, tmp_path, audit)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0] and "nothing more was run" in lines[0], proc.stderr
    assert str(audit) in lines[0] and "Traceback" not in proc.stderr
    assert "DRAIN" not in _state(cluster)  # Slurm unchanged
    assert audit.read_bytes() == b""


def test_a_read_only_audit_filesystem_stops_the_action_before_it_runs(cluster, tmp_path, small_fs, node03):
    small_fs.remount_ro()
    audit = small_fs.path / "audit.jsonl"
    proc = _drain_with_audit_at(cluster, tmp_path, audit)
    assert proc.returncode != 0
    (line,) = proc.stderr.strip().splitlines()
    assert "Read-only file system" in line and str(audit) in line
    assert "DRAIN" not in _state(cluster)


class FreezingRunner:
    """Runs Slurm commands; freezes slurmctld right after the action's own command and
    lets it go before read-back number ``thaw_at`` (1-based; 0: never)."""

    description = "local (freezing slurmctld)"

    def __init__(self, cluster, action_word: str, thaw_at: int) -> None:
        self.inner = LocalRunner(env=_env(cluster), default_timeout=30)
        self.pid, self.word, self.thaw_at = _ctld_pid(cluster), action_word, thaw_at
        self.frozen, self.readbacks = False, 0

    async def run(self, argv, *, timeout=None, stdin=None):
        argv = list(argv)
        is_action = self.word in argv
        if not is_action and self.frozen:
            self.readbacks += 1
            if self.readbacks == self.thaw_at:
                os.kill(self.pid, signal.SIGCONT)
                self.frozen = False
        res = await self.inner.run(argv, timeout=2 if self.frozen else timeout, stdin=stdin)
        if is_action:
            os.kill(self.pid, signal.SIGSTOP)
            self.frozen = True
        return res

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)


async def _drain_through(cluster, tmp_path, runner: FreezingRunner, settle):
    gate = Actions(SlurmExecutor(runner), audit=AuditLog(tmp_path / "audit.jsonl"), confirm=yes_policy(True),
                   settle=settle)
    try:
        return await gate.execute(build_plan("drain", [NODE], Params(reason="frozen ctld")))
    finally:
        runner.thaw()


async def test_a_controller_that_stops_mid_action_is_outcome_unknown_then_read_back(cluster, tmp_path, node03):
    # Read-back 1 meets the frozen controller (no evidence: unknown); before read-back 2 it answers again.
    runner = FreezingRunner(cluster, "State=DRAIN", thaw_at=2)
    out = await _drain_through(cluster, tmp_path, runner, settle=(0.1, 0.1, 0.1))
    (res,) = out.results
    assert res.status == "done", res.detail
    assert "the read-back failed" in res.detail and "read back after the controller returned" in res.detail
    assert runner.readbacks == 2
    assert "DRAIN" in _state(cluster)
    (rec,) = read_audit(tmp_path / "audit.jsonl")
    assert rec["result"] == "done" and "read back after the controller returned" in rec["output"]
    raw = read_audit(tmp_path / "audit.jsonl", raw=True)
    assert [r["result"] for r in raw] == ["started", "done"]


async def test_a_controller_that_stays_away_leaves_the_outcome_unknown(cluster, tmp_path, node03):
    runner = FreezingRunner(cluster, "State=DRAIN", thaw_at=0)
    out = await _drain_through(cluster, tmp_path, runner, settle=(0.1, 0.1))
    (res,) = out.results
    assert res.status == "unknown" and not out.ok
    assert "the read-back failed" in res.detail
    assert runner.readbacks == 3  # the read-back and both re-reads met the frozen controller
    (rec,) = read_audit(tmp_path / "audit.jsonl")
    assert rec["result"] == "unknown" and "read-back failed" in rec["error"]
    # Slurm did take it: the truth was "done", and cockpit never claimed either way.
    assert "DRAIN" in _state(cluster)


class SequencedRunner:
    """A LocalRunner whose calls wait for and set events, to force one interleaving."""

    description = "local (sequenced)"

    def __init__(self, cluster, before_action=None, after_action=None, before_readback=None, after_readback=None):
        self.inner = LocalRunner(env=_env(cluster), default_timeout=30)
        self.hooks = (before_action, after_action, before_readback, after_readback)

    async def run(self, argv, *, timeout=None, stdin=None):
        before, after = self.hooks[:2] if "update" in argv else self.hooks[2:]
        if before is not None:
            await before.wait()
        res = await self.inner.run(argv, timeout=timeout, stdin=stdin)
        if after is not None:
            after.set()
        return res


async def test_two_operators_on_one_node_each_report_their_own_result(cluster, tmp_path, node03):
    # A drains; B resumes after A's command and before A reads back: A must not report B's
    # result (a resumed node) as a successful drain, and B must not report A's.
    a_acted, b_done = asyncio.Event(), asyncio.Event()
    audit = tmp_path / "shared-audit.jsonl"
    a = Actions(SlurmExecutor(SequencedRunner(cluster, after_action=a_acted, before_readback=b_done)),
                audit=AuditLog(audit), confirm=yes_policy(True), settle=())
    b = Actions(SlurmExecutor(SequencedRunner(cluster, before_action=a_acted, after_readback=b_done)),
                audit=AuditLog(audit), confirm=yes_policy(True), settle=())
    out_a, out_b = await asyncio.wait_for(asyncio.gather(
        a.execute(build_plan("drain", [NODE], Params(reason="operator A"))),
        b.execute(build_plan("resume", [NODE]))), 120)
    assert out_b.results[0].status == "done"
    assert out_a.results[0].status == "failed"
    assert "not draining" in out_a.results[0].detail and "another operator" in out_a.results[0].detail
    assert "DRAIN" not in _state(cluster)  # the final state both read back
    recs = read_audit(audit)
    assert sorted((r["action"], r["result"]) for r in recs) == [("drain", "failed"), ("resume", "done")]
    assert len({r["invocation"] for r in recs}) == 2
