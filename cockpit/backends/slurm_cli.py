"""The CLI backend: squeue/sinfo/scontrol through a Runner (local or SSH).

Which command gives what depends on the Slurm version, so we ask for the
richest source and fall back by capability, not by version number:

* nodes: ``scontrol show node --json`` (23.02+: per-node GPU indexes in
  ``gres_used``), else ``sinfo --json`` (22.05: a flat node list, same fields);
* jobs: ``squeue --json`` (all versions; ``gres_detail`` gives GPU indexes);
* partitions: ``scontrol show partition`` text (22.05 has no partition JSON,
  24.11's lacks the Default flag);
* topology: ``scontrol show topology`` (text in every version).

Each fetch is one controller RPC per resource kind. The raw outputs go through
``on_output`` so ``cockpit record`` can save exactly what was read.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable

from cockpit.backends import slurm_json, slurm_text
from cockpit.backends.slurm_json_common import slurm_errors
from cockpit.errors import BackendError, CommandFailed, ParseError
from cockpit.models import ClusterSnapshot, Job, Node, Partition, Topology

# Recorded file name -> argv. The names are the stable layout of a record directory.
COMMANDS: dict[str, tuple[str, ...]] = {
    "version.txt": ("sinfo", "--version"),
    "squeue.json": ("squeue", "--all", "--json"),
    "scontrol-nodes.json": ("scontrol", "show", "node", "--json"),
    "sinfo.json": ("sinfo", "--json"),
    "scontrol-partitions.txt": ("scontrol", "show", "partition"),
    "topology.txt": ("scontrol", "show", "topology"),
}

_NO_JSON_HINTS = ("unrecognized option", "invalid option", "unknown option")
_NO_TOPOLOGY_HINTS = ("topology plugin", "no topology", "not configured", "topology/none")


class Unsupported(CommandFailed):
    """This Slurm (or this recording) has no such command or option."""


def _is_unsupported(err: CommandFailed) -> bool:
    if isinstance(err, Unsupported):
        return True
    text = err.stderr.lower()
    return any(h in text for h in _NO_JSON_HINTS)


class SlurmCliBackend:
    name = "slurm-cli"

    def __init__(self, runner, bin_dir: str = "", timeout: float = 30.0) -> None:
        self.runner = runner
        self.bin_dir = bin_dir
        self.timeout = timeout
        self.description = f"slurm-cli via {getattr(runner, 'description', 'local')}"
        self.on_output: Callable[[str, bytes], None] | None = None
        self._version: str | None = None
        self._node_source: str | None = None  # decided on first fetch
        self.warnings: list[str] = []
        self._stderr: dict[str, str] = {}

    # -- plumbing -----------------------------------------------------------
    def _argv(self, key: str) -> list[str]:
        argv = list(COMMANDS[key])
        if self.bin_dir:
            argv[0] = os.path.join(self.bin_dir, argv[0])
        return argv

    async def _fetch(self, key: str) -> bytes:
        """Run the command recorded under ``key``; raise CommandFailed on non-zero exit."""
        argv = self._argv(key)
        del self.warnings[:-100]  # the poller calls fetch_* forever; keep this bounded
        res = await self.runner.run(argv, timeout=self.timeout)
        if res.returncode != 0:
            raise CommandFailed(argv, res.returncode, res.err_text())
        if self.on_output is not None:
            self.on_output(key, res.stdout)
        self._stderr[key] = res.err_text()
        return res.stdout

    def _empty_because_of_error(self, key: str, raw: bytes, parsed) -> None:
        """Slurm's JSON commands exit 0 with an empty list and an ``errors`` entry
        when the controller is unreachable: that is a failure, not an empty cluster.
        Raises BackendError naming Slurm's words."""
        if parsed:
            return
        try:
            errs = slurm_errors(json.loads(raw))
        except (ValueError, TypeError, AttributeError):
            return
        if errs:
            said = self._stderr.get(key, "").strip().splitlines()
            detail = said[-1] if said else errs[0]
            raise BackendError(f"{COMMANDS[key][0]}: {detail}")

    # -- Backend protocol ---------------------------------------------------
    async def version(self) -> str:
        if self._version is None:
            out = (await self._fetch("version.txt")).decode("utf-8", "replace")
            self._version = slurm_json.parse_version(out)
        return self._version

    async def fetch_jobs(self) -> tuple[Job, ...]:
        raw = await self._fetch("squeue.json")
        jobs = slurm_json.parse_squeue(raw, warnings=self.warnings)
        self._empty_because_of_error("squeue.json", raw, jobs)
        return jobs

    async def fetch_nodes(self) -> tuple[Node, ...]:
        if self._node_source != "sinfo.json":
            try:
                data = await self._fetch("scontrol-nodes.json")
                self._node_source = "scontrol-nodes.json"
                nodes = slurm_json.parse_scontrol_nodes(data, warnings=self.warnings)
                self._empty_because_of_error("scontrol-nodes.json", data, nodes)
                return nodes
            except CommandFailed as err:
                if not _is_unsupported(err):
                    raise
                self._node_source = "sinfo.json"
        raw = await self._fetch("sinfo.json")
        nodes, _parts = slurm_json.parse_sinfo(raw, warnings=self.warnings)
        self._empty_because_of_error("sinfo.json", raw, nodes)
        return nodes

    async def fetch_partitions(self) -> tuple[Partition, ...]:
        # Text on every version: 22.05 has no partition JSON, and 24.11's omits
        # the Default flag (see tests/data/slurm-24.11/scontrol-show-partition.json).
        text = (await self._fetch("scontrol-partitions.txt")).decode("utf-8", "replace")
        return slurm_text.parse_scontrol_partitions(text)

    async def fetch_topology(self) -> Topology:
        try:
            text = (await self._fetch("topology.txt")).decode("utf-8", "replace")
        except CommandFailed as err:
            if isinstance(err, Unsupported) or any(h in err.stderr.lower() for h in _NO_TOPOLOGY_HINTS):
                return Topology()
            raise
        return slurm_text.parse_topology(text)

    async def snapshot(self) -> ClusterSnapshot:
        """Fetch everything; a failing part becomes an entry in ``errors``.

        Raises BackendError only when nothing at all could be read (so the CLI
        can exit non-zero with the cause)."""
        started = time.time()
        self.warnings.clear()
        parts = await asyncio.gather(
            self.version(),
            self.fetch_nodes(),
            self.fetch_partitions(),
            self.fetch_jobs(),
            self.fetch_topology(),
            return_exceptions=True,
        )
        errors: list[str] = []
        out = []
        for label, value, empty in zip(
            ("version", "nodes", "partitions", "jobs", "topology"),
            parts,
            ("", (), (), (), Topology()),
        ):
            if isinstance(value, BaseException):
                if not isinstance(value, (BackendError, ParseError)):
                    raise value
                errors.append(f"{label}: {value}")
                value = empty
            out.append(value)
        version, nodes, partitions, jobs, topology = out
        if isinstance(parts[1], BaseException) and isinstance(parts[3], BaseException):
            # Neither nodes nor jobs: there is nothing to show. Name the first cause.
            # squeue/sinfo --json only say "Unspecified error"; scontrol names the cause.
            cause = next((e for e in errors if "controller" in e.lower()), errors[0])
            raise BackendError(f"cannot read the cluster: {cause}") from parts[1]
        return ClusterSnapshot(
            nodes=nodes,
            partitions=partitions,
            jobs=jobs,
            topology=topology,
            fetched_at=started,
            source=self.description,
            slurm_version=version,
            errors=tuple(errors) + tuple(dict.fromkeys(self.warnings)),
        )

    async def close(self) -> None:
        return None
