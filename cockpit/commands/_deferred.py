"""A session whose Slurm backend is chosen only when a check first asks the cluster.

``cockpit check layout --megatron-script F --nodes 16 --gpus-per-node 8`` needs no
Slurm at all, yet opening a session chose the backend first: with no Slurm
reachable the pyslurm probe and each scontrol waited out their retries (measured:
60 s for the probe, 59 s for ``scontrol show config`` with SLURM_CONF pointing at
nothing). Here nothing runs until the check asks, and until Slurm has answered
once every question (opening the backend included) has ``FIRST_ANSWER_S`` to be
answered: past it, one line says Slurm did not answer, and scontrol's own retries
do not set the pace. After a first answer the backend's own timeouts apply.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from cockpit.backends.base import Capabilities

from cockpit.errors import BackendError

FIRST_ANSWER_S = 5.0
LAYOUT_HINT = "give every input on the command line to check without it"


class DeferredBackend:
    """Stands for the backend that ``choose_backend`` would pick, opened on first use."""

    name = "slurm (asked on demand)"
    description = "Slurm, asked only when the check needs it"
    simulated = False

    def __init__(self, cfg: Any, deadline_s: float = FIRST_ANSWER_S, hint: str = LAYOUT_HINT) -> None:
        self._cfg = cfg
        self._deadline = deadline_s
        self._hint = hint  # what the one line past the deadline suggests
        self._real: Any = None
        self._runner: Any = None
        self.reason = ""  # why choose_backend picked the real one (doctor prints it)
        self.asked: list[str] = []  # what was asked, in order (tests and --json read it)

    async def _open(self) -> Any:
        if self._real is None:
            from cockpit.backends.select import choose_backend
            from cockpit.core.session import make_runner

            self._runner = make_runner(self._cfg)
            self._real, self.reason = await choose_backend(self._cfg, self._runner)
        return self._real

    @property
    def runner(self) -> Any:
        """The runner the real backend was opened with (None before)."""
        return self._runner

    async def open_within(self) -> Any:
        """The real backend, chosen within the first-answer deadline (doctor asks
        this first, to name the backend). Raises BackendError past it."""
        async def opened(backend: Any) -> Any:
            return backend

        return await self._ask("choosing the backend", opened)

    async def _ask(self, what: str, call) -> Any:
        self.asked.append(what)
        if self._deadline is None:
            return await call(await self._open())
        try:
            result = await asyncio.wait_for(self._first(call), self._deadline)
        except asyncio.TimeoutError:
            raise BackendError(f"Slurm did not answer within {self._deadline:g} s ({what}); {self._hint}") from None
        self._deadline = None  # it answered: from now on its own timeouts apply
        return result

    async def _first(self, call) -> Any:
        return await call(await self._open())

    async def fetch_nodes(self):
        return await self._ask("nodes", lambda b: b.fetch_nodes())

    async def fetch_jobs(self):
        return await self._ask("jobs", lambda b: b.fetch_jobs())

    async def fetch_partitions(self):
        return await self._ask("partitions", lambda b: b.fetch_partitions())

    async def fetch_topology(self):
        return await self._ask("topology", lambda b: b.fetch_topology())

    async def fetch_job(self, job_id: int | str):
        async def one(b):
            lookup = b.capabilities().lookup
            if lookup is not None:
                return await lookup.fetch_job(job_id)
            return next((j for j in await b.fetch_jobs() if str(job_id) in (str(j.job_id), j.display_id)), None)

        return await self._ask(f"job {job_id}", one)

    def probe_runner(self, config: Any) -> Any:
        return DeferredProbes(self, config)

    def capabilities(self) -> Capabilities:
        """One job and probes, each opening the real backend when first asked; nothing acts."""
        return Capabilities(lookup=self, probes=self, cannot_act="a file-only check takes no action")

    async def close(self) -> None:
        if self._real is not None:
            await self._real.close()
        close = getattr(self._runner, "close", None)
        if close is not None:
            await close()


class DeferredProbes:
    """The backend's probe runner, made when a probe is first asked for (the layout
    check reads a job's batch script with ``on_slurm_host``)."""

    def __init__(self, backend: DeferredBackend, config: Any) -> None:
        self._backend, self._config, self._probes = backend, config, None

    async def _get(self) -> Any:
        if self._probes is None:
            self._probes = (await self._backend._open()).probe_runner(self._config)
        return self._probes

    async def run(self, node, argv, **kw):
        return await (await self._get()).run(node, argv, **kw)

    async def on_nodes(self, nodes, argv, **kw):
        return await (await self._get()).on_nodes(nodes, argv, **kw)

    async def on_slurm_host(self, argv, **kw):
        return await (await self._get()).on_slurm_host(argv, **kw)

    async def close(self) -> None:
        if self._probes is not None:
            await self._probes.close()


async def open_deferred_session(args: argparse.Namespace, hint: str = LAYOUT_HINT) -> Any:
    """A Session with a DeferredBackend, except for --demo and --replay (no Slurm to
    wait for: they open as usual). Raises ConfigError."""
    from cockpit.core.session import Session, open_session, session_config

    cfg = session_config(args)
    if cfg.general.backend == "demo" or getattr(args, "replay", None):
        return await open_session(args)
    return Session(cfg, DeferredBackend(cfg, hint=hint), None, cfg.general.read_only, "asked on demand")
