"""A check whose inputs are all given asks Slurm nothing; one that needs Slurm says in one
line, within its deadline, that Slurm did not answer (cockpit/commands/_deferred.py).

No timed assert: the first test proves that no Slurm command was run at all (a Runner
that records every call stands where the real one would be made); the second lets the
real scontrol wait on a slurm.conf that does not exist, under a 1 s deadline, and checks
the message and the exit code. The measured times are in the commit and the report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cockpit import cli
from cockpit.commands import _deferred
from cockpit.core import session as session_mod
from cockpit.runner import LocalRunner

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "data" / "training-configs" / "megatron-lm-mixtral-8x7b-distributed-tp1-pp4-ep8-args-EXCERPT.sh"


class RecordingRunner(LocalRunner):
    """The real local runner, recording each argv it is asked to run (or to hand to the
    CLI backend's parse worker, which runs it in its own process)."""

    calls: list[tuple[str, ...]] = []

    async def run(self, argv, **kw):
        RecordingRunner.calls.append(tuple(argv))
        return await super().run(argv, **kw)

    def stream(self, argv, **kw):
        RecordingRunner.calls.append(tuple(argv))
        return super().stream(argv, **kw)

    def spawn_spec(self, argv, timeout=None):  # the CLI backend's parse worker runs argv itself
        RecordingRunner.calls.append(tuple(argv))
        return super().spawn_spec(argv, timeout)


@pytest.fixture
def no_config(monkeypatch, tmp_path):
    monkeypatch.delenv("COCKPIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-such-slurm.conf"))
    RecordingRunner.calls = []
    monkeypatch.setattr(session_mod, "make_runner", lambda cfg: RecordingRunner(default_timeout=120))


def test_file_only_layout_check_runs_no_slurm_command(no_config, capsys):
    rc = cli.main(["check", "layout", "--megatron-script", str(SCRIPT), "--nodes", "16", "--gpus-per-node", "8"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert RecordingRunner.calls == []
    assert out.out.startswith("OK: TP=1 PP=4 DP=32 EP=8 on 128 GPUs")
    assert "switch topology and free nodes not asked" in out.out


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="needs Slurm's client commands")
def test_a_slurm_that_does_not_answer_is_said_in_one_line(no_config, capsys, monkeypatch):
    monkeypatch.setattr(_deferred, "FIRST_ANSWER_S", 1.0)
    monkeypatch.setattr(_deferred.DeferredBackend.__init__, "__defaults__", (1.0, _deferred.LAYOUT_HINT))
    rc = cli.main(["--backend", "slurm-cli", "check", "layout", "--nodes", "2", "--tp", "8"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 3
    assert err == ["cockpit: Slurm did not answer within 1 s (nodes); "
                   "give every input on the command line to check without it"]
    assert RecordingRunner.calls and "scontrol" in RecordingRunner.calls[0][0]
