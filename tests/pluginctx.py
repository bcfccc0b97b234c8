"""A plugin's CheckContext for tests, built the way cockpit builds one (cockpit.plugins.host)."""

from __future__ import annotations

from typing import Any

from cockpit.core.actions import Actions, yes_policy
from cockpit.errors import BackendError
from cockpit.plugins.host import check_context
from cockpit.remote.probes import NoProbes
from cockpit.backends.base import Capabilities


class NoBackend:
    """For checks that must not need the cluster (a --log judged from a file)."""

    def capabilities(self):  # a test double declares what it implements, by type
        return Capabilities.by_type(self, simulated=bool(getattr(self, "simulated", False)))

    name = "none"
    description = "no backend (test)"
    cannot_act = "this test has no cluster"

    async def _none(self, *_a: Any) -> Any:
        raise BackendError("this test has no cluster to read")

    fetch_nodes = fetch_jobs = fetch_partitions = fetch_topology = _none

    def action_executor(self, config: Any) -> None:
        return None

    def probe_runner(self, config: Any) -> NoProbes:
        return NoProbes("this test has no nodes")


def make_ctx(backend: Any = None, config: dict | None = None, *, runner: Any = None, actions: Actions | None = None,
             read_only: bool = False, audit: Any = None, yes: bool = True, probes: Any = None, progress=None):
    """``runner``: a Runner (fake or local) behind a CLI backend. ``yes``: the gate's answer."""
    if backend is None:
        if runner is not None:
            from cockpit.backends.slurm_cli import SlurmCliBackend

            backend = SlurmCliBackend(runner, timeout=30)
        else:
            backend = NoBackend()
    if actions is None:
        make = getattr(backend, "action_executor", None)
        actions = Actions(make(None) if make else None, read_only=read_only, audit=audit, confirm=yes_policy(yes))
    if probes is None:
        make = getattr(backend, "probe_runner", None)
        probes = make(None) if make else NoProbes("this test has no nodes")
    return check_context(backend=backend, actions=actions, probes=probes, config=config or {}, progress=progress)
