"""The framing and process life shared by the parse worker and the pyslurm
worker (cockpit.backends._workerproc). The pyslurm worker runs here with a fake
Source, so its pipe protocol is covered without pyslurm or a cluster."""

from __future__ import annotations

import io
import stat
import sys

import pytest

from cockpit.backends._workerproc import LEN, read_frame, write_frame
from cockpit.backends.pyslurm_worker import Failed, PyslurmWorker, WorkerFailed


def test_frames_round_trip_and_a_cut_frame_reads_as_the_end():
    out = io.BytesIO()
    for payload in (b"one", b"", memoryview(b"three")):
        write_frame(out, payload)
    data = out.getvalue()
    inp = io.BytesIO(data)
    assert [read_frame(inp) for _ in range(4)] == [b"one", b"", b"three", None]
    assert read_frame(io.BytesIO(data[:LEN + 1])) is None  # length read, payload cut
    assert read_frame(io.BytesIO(data[:LEN - 1])) is None  # length cut


_FAKE = """
import sys
from cockpit.backends import pyslurm_source, pyslurm_worker
from cockpit.backends.pyslurm_compat import PyslurmFailure

class Source:
    def info(self):
        return {"controller": "fake"}
    def version(self):
        raise PyslurmFailure("down", "slurmctld does not answer")
    def partitions(self):
        raise RuntimeError("boom")

pyslurm_source.Source = Source
pyslurm_worker.main()
"""


@pytest.fixture
def fake_python(tmp_path) -> str:
    script = tmp_path / "fake_worker.py"
    script.write_text(_FAKE)
    wrapper = tmp_path / "python-fake"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")  # ignores "-m MODULE"
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


async def test_pyslurm_worker_answers_fails_and_restarts(fake_python):
    worker = PyslurmWorker(python=fake_python)
    try:
        assert await worker.call("info") == {"controller": "fake"}
        pid = worker.pid
        with pytest.raises(Failed, match="does not answer") as failed:
            await worker.call("version")
        assert failed.value.cause == "down" and worker.pid == pid  # a failure keeps the worker
        with pytest.raises(WorkerFailed, match="RuntimeError: boom"):
            await worker.call("partitions")
        worker.kill()
        assert worker.pid is None
        assert await worker.call("info") == {"controller": "fake"} and worker.starts == 2
    finally:
        await worker.close()
    assert worker.pid is None


async def test_a_worker_that_cannot_start_says_so(tmp_path):
    worker = PyslurmWorker(python=str(tmp_path / "no-such-python"))
    with pytest.raises(WorkerFailed, match="cannot start the pyslurm worker"):
        await worker.call("info")
