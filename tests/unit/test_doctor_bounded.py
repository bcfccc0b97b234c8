"""``cockpit doctor`` is bounded: a Slurm that does not answer is said within ASK_S
per question, and the questions after an unanswered one are not asked.

The faults are injected (a backend whose calls never return, a backend choice
that never finishes) and the deadline is shortened, so nothing here waits on a
clock of the machine's load: the assertions are about what doctor says."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from cockpit.commands import _deferred, doctor
from cockpit.config import Config
from cockpit.core.session import Session


class Silent:
    """A backend that answers its version and never its node listing (or never anything)."""

    name = "slurm-cli"
    description = "slurm-cli via local (stand-in that hangs)"

    def __init__(self, version_hangs: bool) -> None:
        self.version_hangs = version_hangs
        self.asked: list[str] = []

    async def version(self) -> str:
        self.asked.append("version")
        if self.version_hangs:
            await asyncio.Event().wait()
        return "22.05.8"

    async def fetch_nodes(self):
        self.asked.append("nodes")
        await asyncio.Event().wait()

    async def close(self) -> None:
        pass


def _session(backend) -> Session:
    return Session(Config(), backend, None, False, "given")


@pytest.fixture(autouse=True)
def short_deadline(monkeypatch):
    monkeypatch.setattr(doctor, "ASK_S", 0.05)


def test_unanswered_version_stops_the_later_questions():
    backend = Silent(version_hangs=True)
    info = asyncio.run(doctor._probe(_session(backend)))
    assert backend.asked == ["version"]  # neither pyslurm nor the nodes were asked after it
    assert "no answer within 0.05 s (the Slurm version)" in info["version_error"]
    assert info["pyslurm"]["why"].startswith("not asked: no answer within")
    assert info["controller"].startswith("not answering: not asked")
    assert info["ok"] is False


def test_unanswered_node_listing_is_not_ok():
    backend = Silent(version_hangs=False)
    info = asyncio.run(doctor._probe(_session(backend)))
    assert info["slurm_version"] == "22.05.8"
    assert info["controller"] == "not answering: no answer within 0.05 s (the node listing)"
    assert info["ok"] is False


def test_backend_choice_that_never_ends_is_one_line(monkeypatch, capsys):
    async def never(cfg, runner):
        await asyncio.Event().wait()

    monkeypatch.setattr("cockpit.backends.select.choose_backend", never)
    monkeypatch.setattr("cockpit.core.session.make_runner", lambda cfg: None)
    deferred = _deferred.DeferredBackend(Config(), deadline_s=0.05, hint=doctor.HINT)
    rc = asyncio.run(doctor.run(argparse.Namespace(json=False), _session(deferred)))
    out = capsys.readouterr().out
    assert rc == 3
    assert "backend         not chosen" in out
    assert "Slurm did not answer within 0.05 s (choosing the backend); is slurmctld running" in out
    assert "Traceback" not in out


def test_a_dead_pyslurm_worker_is_explained_by_its_last_words(tmp_path):
    """libslurm exits the process from inside ``import pyslurm`` when it finds no
    configuration ("fatal: Unable to process configuration file"); the reason the
    backend choice gives is that line, not "IncompleteReadError: 0 bytes read"."""
    from cockpit.backends.pyslurm_backend import probe
    from cockpit.backends.pyslurm_worker import PyslurmWorker

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'loading' >&2\necho 'python: fatal: Unable to process configuration file' >&2\nexit 1\n")
    python.chmod(0o755)
    found = asyncio.run(probe(worker=PyslurmWorker(python=str(python))))
    assert not found.usable
    assert found.why.endswith("exited with status 1: python: fatal: Unable to process configuration file")
