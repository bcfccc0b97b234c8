"""A small, deterministic cluster built from the models, and a backend that can fail on cue."""

from __future__ import annotations

from cockpit.errors import CommandFailed
from cockpit.models import GpuGroup, Job, JobGpus, Node, Partition, Switch, Topology
from cockpit.backends.base import Capabilities

NOW = 1_700_000_000


def small_cluster(jobs_extra: int = 0):
    nodes = [
        Node("gpu01", "allocated", cpus=64, alloc_cpus=64, memory_mb=512000, alloc_memory_mb=256000, partitions=("train",),
             gpus=(GpuGroup("h100", 8, tuple(range(8))),)),
        Node("gpu02", "mixed", cpus=64, alloc_cpus=16, memory_mb=512000, partitions=("train",),
             gpus=(GpuGroup("h100", 8, (0, 1)),)),
        Node("gpu03", "idle", flags=frozenset({"drain"}), reason="Xid 79 [bold]fallen off the bus[/bold]\x1b[31m",
             reason_user="root", reason_time=NOW - 3600, cpus=64, memory_mb=512000, partitions=("train",),
             gpus=(GpuGroup("h100", 8),)),
        Node("gpu04", "down", flags=frozenset({"not_responding"}), reason="Not responding", reason_user="slurm",
             reason_time=NOW - 600, cpus=64, memory_mb=512000, partitions=("debug",), gpus=(GpuGroup("h100", 8),)),
        Node("gpu10", "idle", cpus=64, memory_mb=512000, partitions=("debug",), gpus=(GpuGroup("h100", 8),)),
    ]
    jobs = [
        Job(101, name="llama-70b", user="alice", account="ml", partition="train", state="RUNNING",
            nodes=("gpu01",), node_count=1, gpus=(JobGpus("gpu01", "h100", 8, tuple(range(8))),),
            start_time=NOW - 7200, submit_time=NOW - 7300, time_limit=1440, stdout="/nonexistent/out.log"),
        Job(102, name="eval", user="bob", account="ml", partition="train", state="RUNNING", nodes=("gpu02",),
            node_count=1, gpus=(JobGpus("gpu02", "h100", 2, (0, 1)),), start_time=NOW - 60, array_job_id=100,
            array_task_id=3, time_limit=60),
        Job(103, name="sweep", user="alice", account="ml", partition="train", state="PENDING", reason="Resources",
            gpus_per_node=8, node_count=2, submit_time=NOW - 30, array_job_id=103, array_task_string="4-10%2"),
        Job(104, name="het", user="carol", partition="debug", state="PENDING", reason="Priority", het_job_id=104,
            het_job_offset=1, gpus_per_node=1),
        Job(105, name="\x1b]52;c;ZXZpbA==\x07[red]evil[/red]", user="mallory", partition="debug", state="PENDING",
            reason="QOSMaxGRESPerUser"),
    ]
    for i in range(jobs_extra):
        jobs.append(Job(1000 + i, name=f"filler-{i}", user=f"user{i % 7}", partition="debug", state="PENDING",
                        reason="Priority", submit_time=NOW - i))
    parts = [Partition("train", ("gpu01", "gpu02", "gpu03"), is_default=True, max_time=2880),
             Partition("debug", ("gpu04", "gpu10"), max_time=60)]
    topo = Topology("tree", (Switch("leaf1", 1, ("gpu01", "gpu02")), Switch("spine", 2, switches=("leaf1",))))
    return tuple(nodes), tuple(jobs), tuple(parts), topo


class FakeBackend:
    """Backend protocol over ``small_cluster``; ``fail`` makes every fetch raise until cleared."""

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    name = "fake"
    description = "fake test cluster"

    def __init__(self, jobs_extra: int = 0) -> None:
        self.nodes, self.jobs, self.partitions, self.topology = small_cluster(jobs_extra)
        self.fail = False
        self.calls: dict[str, int] = {}

    def _count(self, kind: str) -> None:
        self.calls[kind] = self.calls.get(kind, 0) + 1
        if self.fail:
            raise CommandFailed(["squeue"], 1, "slurm_load_jobs error: Unable to contact slurm controller")

    async def version(self):
        return "24.11.1"

    async def fetch_nodes(self):
        self._count("nodes")
        return self.nodes

    async def fetch_jobs(self):
        self._count("jobs")
        return self.jobs

    async def fetch_partitions(self):
        self._count("partitions")
        return self.partitions

    async def fetch_topology(self):
        self._count("topology")
        return self.topology

    async def snapshot(self):  # pragma: no cover - the poller uses the fetches
        raise NotImplementedError

    async def close(self):
        pass


class FakeProbes:
    """A probe runner (NodeProbes) answering from ``answer(node, argv)``: a CommandResult,
    or an exception raised as the node being unreachable. Records every call, with the
    thread it ran on."""

    available = True
    why_not = ""
    description = "fake probes"

    def __init__(self, answer) -> None:
        self.answer = answer
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.threads: set[str] = set()
        self.closed = False

    async def run(self, node, argv, *, timeout=None, stdin=None):
        import threading

        from cockpit.remote.probes import refuse_mutating

        words = tuple(refuse_mutating(argv))
        self.calls.append((node, words))
        self.threads.add(threading.current_thread().name)
        result = self.answer(node, list(words))
        if isinstance(result, BaseException):
            raise result
        return result

    async def on_nodes(self, nodes, argv, *, via="auto", timeout=None):
        from cockpit.errors import CockpitError
        from cockpit.models.actions import ProbeOutput

        out = {}
        for node in nodes:
            try:
                r = await self.run(node, argv, timeout=timeout)
            except CockpitError as exc:
                out[node] = ProbeOutput(node, False, "", str(exc))
                continue
            out[node] = ProbeOutput(node, r.ok, r.text(), "" if r.ok else r.err_text().strip())
        return out

    async def on_slurm_host(self, argv, *, timeout=None):
        return (await self.on_nodes([""], argv, timeout=timeout))[""]

    async def close(self) -> None:
        self.closed = True


def result(argv, stdout: str = "", returncode: int = 0, stderr: str = ""):
    from cockpit.runner import CommandResult

    return CommandResult(tuple(argv), returncode, stdout.encode(), stderr.encode())
