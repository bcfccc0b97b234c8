"""The parse worker process and the CLI backend's use of it: same results as
in-process parsing, deltas on refresh, ParseError passed through, fallback
(with a warning, never a crash) when the worker dies, streamed command output."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from cockpit.runner import LocalRunner
from cockpit.backends.replay import ReplayBackend
from cockpit.backends.slurm_cli import SlurmCliBackend
from cockpit.backends.slurm_json import parse_scontrol_nodes, parse_squeue
from cockpit.backends.parseproc import ParseWorker
from cockpit.core.poller import Poller
from cockpit.errors import CommandFailed, CommandNotFound, CommandTimeout, ParseError
from cockpit.backends.base import Capabilities

DATA = Path(__file__).resolve().parents[1] / "data"
SQUEUE = DATA / "slurm-24.11/squeue.json"


async def test_worker_round_trip_then_an_empty_delta():
    worker = ParseWorker()
    try:
        raw = SQUEUE.read_bytes()
        deltas = [d async for d in worker.parse("jobs", "", "squeue --json", raw, reset=True)]
        assert tuple(j for d in deltas for j in d.upserts) == parse_squeue(raw)
        again = [d async for d in worker.parse("jobs", "", "squeue --json", [raw])]
        assert len(again) == 1 and again[0].done and not again[0].upserts and not again[0].removed
        with pytest.raises(ParseError, match="squeue --json"):
            [d async for d in worker.parse("jobs", "", "squeue --json", b'{"jobs": 5}')]
        pid = worker.pid
        again = [d async for d in worker.parse("jobs", "", "squeue --json", raw)]
        assert worker.pid == pid and not again[-1].upserts  # a parse error does not cost the worker
    finally:
        await worker.close()
    assert not worker.running


def _replay(tmp_path: Path, files: dict[str, Path]) -> ReplayBackend:
    for name, src in files.items():
        shutil.copy(src, tmp_path / name)
    backend = ReplayBackend(str(tmp_path))
    backend.parse_worker = True
    return backend


async def test_backend_uses_the_worker_and_applies_deltas(tmp_path):
    backend = _replay(tmp_path, {"squeue.json": SQUEUE,
                                 "scontrol-nodes.json": DATA / "slurm-24.11/scontrol-show-node.json"})
    try:
        jobs = await backend.fetch_jobs()
        assert jobs == parse_squeue(SQUEUE.read_bytes()) and "jobs" in backend.workers
        nodes = await backend.fetch_nodes()
        assert nodes == parse_scontrol_nodes((DATA / "slurm-24.11/scontrol-show-node.json").read_bytes())
        doc = json.loads(SQUEUE.read_bytes())
        doc["jobs"][0]["name"] = "changed"
        (tmp_path / "squeue.json").write_text(json.dumps(doc))
        again = await backend.fetch_jobs()
        assert again[0].name == "changed"
        assert all(a is b for a, b in zip(again[1:], jobs[1:]))  # unchanged jobs keep their identity
    finally:
        await backend.close()


async def test_worker_death_falls_back_to_in_process_parsing_with_a_warning(tmp_path):
    backend = _replay(tmp_path, {"squeue.json": SQUEUE})
    try:
        await backend.fetch_jobs()
        os.kill(backend.workers["jobs"].pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
        jobs = await backend.fetch_jobs()
        assert jobs == parse_squeue(SQUEUE.read_bytes())
        assert any("parsing jobs in the main process" in w for w in backend.warnings)
    finally:
        await backend.close()


async def test_unstartable_worker_falls_back(tmp_path):
    backend = _replay(tmp_path, {"squeue.json": SQUEUE})
    backend.workers["jobs"] = ParseWorker(python=str(tmp_path / "no-such-python"))
    jobs = await backend.fetch_jobs()
    assert jobs == parse_squeue(SQUEUE.read_bytes())
    assert any("cannot start the parse worker" in w for w in backend.warnings)


def _fake_bin(tmp_path: Path, script: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(script)
    (bin_dir / "squeue").chmod(0o755)
    return bin_dir


async def test_streamed_command_output_goes_to_the_worker(tmp_path):
    bin_dir = _fake_bin(tmp_path, f"#!/bin/sh\nexec cat {SQUEUE}\n")
    backend = SlurmCliBackend(LocalRunner(), bin_dir=str(bin_dir))
    backend.worker_threshold = 1000  # the fixture is ~20 KB: streamed, in chunks, to the worker
    try:
        items = [item async for item in backend.stream_jobs()]
        assert items[-1] == (parse_squeue(SQUEUE.read_bytes()), True)
        assert "jobs" in backend.workers
    finally:
        await backend.close()


async def test_a_command_failing_mid_stream_is_reported_and_the_worker_survives(tmp_path):
    bin_dir = _fake_bin(tmp_path, f"#!/bin/sh\ncat {SQUEUE}\necho 'slurm_load_jobs error: boom' >&2\nexit 1\n")
    backend = SlurmCliBackend(LocalRunner(), bin_dir=str(bin_dir))
    backend.worker_threshold = 1000
    try:
        with pytest.raises(CommandFailed, match="boom"):
            await backend.fetch_jobs()
        worker = backend.workers["jobs"]
        assert worker.running
        deltas = [d async for d in worker.parse("jobs", "", "squeue --json", SQUEUE.read_bytes())]
        assert deltas[-1].total == len(parse_squeue(SQUEUE.read_bytes()))
    finally:
        await backend.close()


class StreamingBackend:
    name, description = "streaming", "test"

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    def __init__(self, jobs):
        self.jobs = jobs

    async def version(self):
        return "24.11.1"

    async def stream_jobs(self):
        yield self.jobs[:1], False
        yield self.jobs, True

    async def stream_nodes(self):
        yield (), True

    async def fetch_nodes(self):
        return ()

    async def fetch_partitions(self):
        return ()

    async def fetch_topology(self):
        from cockpit.models import Topology

        return Topology()


async def test_poller_publishes_partial_results_of_a_stream_at_once():
    jobs = parse_squeue(SQUEUE.read_bytes())
    seen = []
    poller = Poller(StreamingBackend(jobs), lambda snap, status: seen.append((len(snap.jobs), snap.loading)))
    await poller.poll_once()
    # a part says its kind is still loading (the hidden Pulse waits for the whole)
    assert seen == [(1, ("jobs",)), (len(jobs), ())] and poller.polls == 1


class _FailsHalfway(StreamingBackend):
    async def stream_jobs(self):
        yield self.jobs[:1], False
        raise CommandFailed(["squeue"], 1, "slurm_load_jobs error: Socket timed out")


async def test_a_stream_that_fails_halfway_is_no_longer_loading():
    jobs = parse_squeue(SQUEUE.read_bytes())
    seen = []
    poller = Poller(_FailsHalfway(jobs), lambda snap, status: seen.append((len(snap.jobs), snap.loading)))
    await poller.poll_once()
    assert seen[0] == (1, ("jobs",))
    assert seen[-1] == (0, ()), "the part is dropped, and nothing says it is still loading"
    assert poller.status().kinds["jobs"].error


# -- the worker runs the command itself: the output never enters the UI process ------
def _spec(argv, timeout=20.0):
    return tuple(argv), dict(os.environ), timeout


async def test_the_worker_runs_a_command_and_reports_its_stderr_and_size(tmp_path):
    script = tmp_path / "squeue"
    script.write_text(f"#!/bin/sh\ncat {SQUEUE}\necho 'a warning from squeue' >&2\n")
    script.chmod(0o755)
    worker = ParseWorker()
    ran = []
    try:
        deltas = [d async for d in worker.parse("jobs", "", "squeue --json", None, reset=True,
                                                run=_spec([str(script)]), on_ran=lambda e, n: ran.append((e, n)))]
        assert tuple(j for d in deltas for j in d.upserts) == parse_squeue(SQUEUE.read_bytes())
        assert ran == [("a warning from squeue\n", len(SQUEUE.read_bytes()))]
    finally:
        await worker.close()


@pytest.mark.parametrize("argv, timeout, error, words", [
    (["/no/such/squeue"], 20.0, CommandNotFound, "/no/such/squeue: command not found on PATH"),
    (["sh", "-c", "echo '{\"jobs\": [' ; echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1"],
     20.0, CommandFailed, "sh failed (exit 1): slurm_load_jobs error: Unable to contact slurm controller"),
    (["sh", "-c", "sleep 30"], 0.5, CommandTimeout, "sh did not answer within 0.5 s"),
    (["sh", "-c", "echo '{\"jobs\": 5}'"], 20.0, ParseError, "squeue --json"),
])
async def test_a_command_the_worker_runs_fails_like_a_local_one_and_the_worker_stays(argv, timeout, error, words):
    worker = ParseWorker()
    try:
        with pytest.raises(error) as err:
            [d async for d in worker.parse("jobs", "", "squeue --json", None, run=_spec(argv, timeout))]
        assert words in str(err.value)
        pid = worker.pid
        deltas = [d async for d in worker.parse("jobs", "", "squeue --json", None, run=_spec(["cat", str(SQUEUE)]))]
        assert worker.pid == pid
        assert deltas[0].reset and deltas[-1].total == len(parse_squeue(SQUEUE.read_bytes()))
    finally:
        await worker.close()


def _cat_bins(tmp_path: Path, jobs: Path, nodes: Path) -> Path:
    """Fake squeue and scontrol that print these files."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(f"#!/bin/sh\nexec cat {jobs}\n")
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\nexec cat {nodes}\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir


class CountingRunner(LocalRunner):
    """A LocalRunner that counts which of its paths the backend used."""

    def __init__(self):
        super().__init__()
        self.calls = {"run": 0, "stream": 0}

    async def run(self, argv, **kw):
        self.calls["run"] += 1
        return await super().run(argv, **kw)

    def stream(self, argv, **kw):
        self.calls["stream"] += 1
        return super().stream(argv, **kw)


async def test_after_one_big_output_the_worker_runs_the_command_and_jobs_and_nodes_share_it(tmp_path):
    jobs_file, nodes_file = tmp_path / "squeue.json", tmp_path / "nodes.json"
    shutil.copy(SQUEUE, jobs_file)
    shutil.copy(DATA / "slurm-24.11/scontrol-show-node.json", nodes_file)
    bin_dir = _cat_bins(tmp_path, jobs_file, nodes_file)
    runner = CountingRunner()
    backend = SlurmCliBackend(runner, bin_dir=str(bin_dir))
    backend.worker_threshold = 1000  # the fixtures count as big
    try:
        first = await backend.fetch_jobs()
        assert runner.calls == {"run": 0, "stream": 1}  # size unknown: read here, streamed on
        doc = json.loads(SQUEUE.read_bytes())
        doc["jobs"][0]["name"] = "renamed"
        jobs_file.write_text(json.dumps(doc))
        again = await backend.fetch_jobs()
        assert runner.calls == {"run": 0, "stream": 1}  # the worker ran squeue itself
        assert again[0].name == "renamed" and again[1:] == first[1:]
        assert all(a is b for a, b in zip(again[1:], first[1:]))
        nodes = await backend.fetch_nodes()
        nodes_again = await backend.fetch_nodes()
        assert nodes_again == nodes == parse_scontrol_nodes(nodes_file.read_bytes())
        assert backend.workers["jobs"] is backend.workers["nodes"]  # one process for both
        pid = backend.workers["jobs"].pid
        os.kill(pid, signal.SIGKILL)  # both kinds lose their state: both start over
        await asyncio.sleep(0.2)
        assert await backend.fetch_jobs() == again
        assert await backend.fetch_nodes() == nodes
    finally:
        await backend.close()


async def test_a_first_load_parses_nodes_before_jobs_in_the_shared_worker(tmp_path, monkeypatch):
    bin_dir = _cat_bins(tmp_path, SQUEUE, DATA / "slurm-24.11/scontrol-show-node.json")
    order: list[str] = []
    orig = ParseWorker.parse

    def parse(self, kind, *a, **kw):
        order.append(kind)
        return orig(self, kind, *a, **kw)

    monkeypatch.setattr(ParseWorker, "parse", parse)
    backend = SlurmCliBackend(LocalRunner(), bin_dir=str(bin_dir))
    backend.worker_threshold = 1000
    try:
        # jobs asked first, as the poller's gather may: the jobs' first load waits for the nodes'
        jobs, nodes = await asyncio.gather(backend.fetch_jobs(), backend.fetch_nodes())
        assert order == ["nodes", "jobs"]
        assert jobs == parse_squeue(SQUEUE.read_bytes()) and len(nodes) == 4
        order.clear()
        await asyncio.gather(backend.fetch_jobs(), backend.fetch_nodes())  # later: no waiting
        assert sorted(order) == ["jobs", "nodes"]
    finally:
        await backend.close()


class ArgvRunner(LocalRunner):
    """A LocalRunner that records which commands it streamed through this process."""

    def __init__(self):
        super().__init__()
        self.streamed: list[str] = []

    def stream(self, argv, **kw):
        self.streamed.append(Path(argv[0]).name)
        return super().stream(argv, **kw)


@pytest.mark.parametrize("threshold, streamed", [
    (1000, ["scontrol"]),  # the nodes' output is big: the jobs' first load runs in the worker
    (15_000, ["scontrol", "squeue"]),  # it is not (10 KB): squeue's output is read here first
])
async def test_on_a_big_site_the_first_jobs_load_never_passes_through_this_process(tmp_path, threshold, streamed):
    bin_dir = _cat_bins(tmp_path, SQUEUE, DATA / "slurm-24.11/scontrol-show-node.json")
    runner = ArgvRunner()
    backend = SlurmCliBackend(runner, bin_dir=str(bin_dir))
    backend.worker_threshold = threshold  # squeue.json is ~20 KB, the nodes' 10 KB
    try:
        # jobs asked first, as the poller's gather may: their choice follows the nodes'
        jobs, nodes = await asyncio.gather(backend.fetch_jobs(), backend.fetch_nodes())
        assert runner.streamed == streamed
        assert jobs == parse_squeue(SQUEUE.read_bytes()) and len(nodes) == 4
        assert ("nodes" in backend.workers) == (threshold == 1000)  # jobs: both parsed in the worker
    finally:
        await backend.close()


async def test_a_jobs_load_alone_does_not_wait_for_nodes(tmp_path):
    bin_dir = _cat_bins(tmp_path, SQUEUE, DATA / "slurm-24.11/scontrol-show-node.json")
    runner = ArgvRunner()
    backend = SlurmCliBackend(runner, bin_dir=str(bin_dir))
    try:  # no nodes load beside it: nothing to wait for (a wait would take 10 s)
        jobs = await asyncio.wait_for(backend.fetch_jobs(), 5)
        assert runner.streamed == ["squeue"] and len(jobs) == len(parse_squeue(SQUEUE.read_bytes()))
    finally:
        await backend.close()
