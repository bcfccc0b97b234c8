"""Everything that calls pyslurm: loads, maps, diffs, acts and reads back.

A :class:`Source` runs where the blocking calls cannot stall the UI: in the
pyslurm worker process (:mod:`cockpit.backends.pyslurm_worker`), or in a thread
when the worker cannot start. pyslurm's calls hold the GIL while libslurm waits
for slurmctld, so in a thread of the UI process a slow controller freezes the
keys for the whole RPC.

Jobs and nodes leave as :class:`~cockpit.backends.slurm_delta.Delta` steps, like
the CLI's parse worker sends them: only objects that changed since the last
answer, compared by the digest of the built model object.

A node's GPU indexes in use come from the layouts of the jobs holding nodes,
so a nodes request needs a jobs load; one made less than ``REUSE_JOBS``
seconds earlier is used (the poller asks for both in the same round), and a
jobs request right after a nodes request uses the load that one made. Only the
jobs request maps every job, chunk by chunk as the Deltas go out.

Every ``CHECK_EVERY`` seconds (and first) the controller's version is compared
with pyslurm's: after a Slurm upgrade the next request fails with cause
``mismatch`` instead of reading through a client of the wrong version.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cockpit.backends.pyslurm_compat import Adapter, PyslurmFailure, adapter_for, classify
from cockpit.backends.pyslurm_map import SOURCE, job_from_pyslurm, major_minor, node_from_pyslurm, partition_from_pyslurm
from cockpit.backends.slurm_delta import CHUNK, Delta, _digest
from cockpit.backends.slurm_json_common import RECORD_ERRORS, why_unread
from cockpit.backends.slurm_json_nodes import gpu_use_by_node
from cockpit.errors import ParseError
from cockpit.models import Job, Node
from cockpit.models.unread import unread

CHECK_EVERY = 60.0
REUSE_JOBS = 2.0
_FINISHED = {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
             "DEADLINE", "PREEMPTED", "SPECIAL_EXIT"}


def import_pyslurm() -> Any:
    """Import pyslurm. Raises PyslurmFailure: ``unusable`` when it is not installed,
    ``mismatch`` when it no longer loads with this machine's libslurm."""
    try:
        return importlib.import_module("pyslurm")
    except ModuleNotFoundError as exc:
        if exc.name == "pyslurm":
            raise PyslurmFailure("unusable", "pyslurm is not installed") from None
        raise PyslurmFailure("mismatch", f"pyslurm does not load: {exc}") from None
    except Exception as exc:  # libslurm gone or of another soname, undefined symbols, slurm_init
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PyslurmFailure("mismatch", f"pyslurm {_installed_version()} does not load with this "
                                         f"libslurm: {first}") from None


def _installed_version() -> str:
    try:
        from importlib.metadata import version

        return version("pyslurm")
    except Exception:  # noqa: BLE001 - only for a message
        return "(unknown version)"


class _Differ:
    """What was sent last (key -> digest); new results -> Deltas of what changed."""

    def __init__(self, kind: str, key: Callable[[Any], Any]) -> None:
        self.kind, self.key = kind, key
        self.digests: dict[Any, int] = {}

    def feed(self, objs: Iterable[Any], warnings: list[str], reset: bool, chunk: int = CHUNK) -> Iterator[Delta]:
        """Deltas as ``objs`` are built (a first load shows its first jobs before the
        last one is mapped); the last one has ``done``. On an error half-way the
        differ forgets everything, so its next answer is a reset."""
        if reset:
            self.digests = {}
        reset = reset or not self.digests
        old, new, changed, first, n = self.digests, {}, [], True, 0
        try:
            for obj in objs:
                k, d = self.key(obj), _digest(obj)
                new[k] = d
                n += 1
                if old.get(k) != d:
                    changed.append(obj)
                    if len(changed) >= chunk:
                        yield Delta(self.kind, tuple(changed), reset=reset and first)
                        changed, first = [], False
            if len(new) != n:
                raise ParseError("pyslurm", "the same id appears twice")
        except BaseException:
            self.digests = {}
            raise
        if changed:
            yield Delta(self.kind, tuple(changed), reset=reset and first)
            first = False
        removed = tuple(k for k in old if k not in new)
        self.digests = new
        yield Delta(self.kind, (), removed, True, reset and first, n, tuple(dict.fromkeys(warnings)))


class Source:
    """pyslurm for one process. Every public method raises PyslurmFailure (with its
    cause) or ParseError; ``clock`` is injectable for tests."""

    def __init__(self, mod: Any = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._mod = mod
        self._adapter: Adapter | None = None
        self.clock = clock
        self._checked = float("-inf")
        self._controller = ""
        self._jobs: tuple[float, list[Any]] | None = None  # (when loaded, pyslurm's Jobs)
        self._differs = {"jobs": _Differ("jobs", lambda j: j.job_id), "nodes": _Differ("nodes", lambda n: n.name)}

    def adapter(self) -> Adapter:
        if self._adapter is None:
            self._adapter = adapter_for(self._mod if self._mod is not None else import_pyslurm())
        return self._adapter

    def info(self) -> dict[str, str]:
        """pyslurm's version, its generation and the actions it does itself."""
        a = self.adapter()
        return {"pyslurm": a.version, "generation": a.generation, "actions": ",".join(a.ACTIONS)}

    def _rpc(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except PyslurmFailure:
            raise
        except Exception as exc:  # noqa: BLE001 - pyslurm's RPCError and whatever libslurm raised
            raise classify(exc, what) from None

    def check(self, force: bool = False) -> str:
        """The controller's version, compared with pyslurm's at most every CHECK_EVERY s.
        Raises PyslurmFailure("mismatch") when they differ."""
        a = self.adapter()
        now = self.clock()
        if force or now - self._checked >= CHECK_EVERY:
            version = self._rpc("the controller's config", a.controller_version)
            self._checked = now
            self._controller = version
        if major_minor(self._controller) != major_minor(a.version):
            raise PyslurmFailure("mismatch", f"pyslurm {a.version} does not match Slurm {self._controller or '(unknown)'}"
                                             " (the controller's version)")
        return self._controller

    def version(self) -> str:
        return self.check(force=True)

    # -- reading ---------------------------------------------------------------
    def _raw_jobs(self) -> list[Any]:
        """pyslurm's Jobs, loaded now or by the other kind's request less than REUSE_JOBS ago."""
        now = self.clock()
        if self._jobs is not None and now - self._jobs[0] < REUSE_JOBS:
            return self._jobs[1]
        raw = self._rpc("jobs", self.adapter().load_jobs)
        self._jobs = (now, raw)
        return raw

    def _mapped(self, raw: list[Any], warnings: list[str]) -> Iterator[Job]:
        for j in raw:
            try:
                layout = j.get_resource_layout_per_node() if j.allocated_nodes else None
                yield job_from_pyslurm(j, layout, warnings)
            except RECORD_ERRORS as exc:  # costs this job only, said in the warnings
                name = str(getattr(j, "id", "") or "?")
                warnings.append(unread(SOURCE, "job", name, why_unread(exc, "job", name)))

    def jobs(self, reset: bool = False) -> Iterator[Delta]:
        """Deltas from the last jobs answer to now, in pyslurm's order; the last one has ``done``."""
        self.check()
        warnings: list[str] = []
        raw = self._raw_jobs()
        self._jobs = None  # the next nodes request loads jobs again
        yield from self._differs["jobs"].feed(self._mapped(raw, warnings), warnings, reset)

    def nodes(self, reset: bool = False) -> Iterator[Delta]:
        """Like :meth:`jobs`, for nodes; their GPU indexes in use come from the jobs that
        hold nodes (only those are mapped here: pending jobs hold no GPUs)."""
        self.check()
        warnings: list[str] = []
        holding = [j for j in self._raw_jobs() if j.allocated_nodes]
        use = gpu_use_by_node(self._mapped(holding, warnings))
        a = self.adapter()
        raw = self._rpc("nodes", a.load_nodes)
        nodes = []
        for n in raw:
            try:
                nodes.append(node_from_pyslurm(n, use.get(n.name), warnings, a.node_state(n), a.allocated_gres(n)))
            except RECORD_ERRORS as exc:  # costs this node only, said in the warnings
                name = str(getattr(n, "name", "") or "?")
                warnings.append(unread(SOURCE, "node", name, why_unread(exc, "node", name)))
        yield from self._differs["nodes"].feed(nodes, warnings, reset)

    def partitions(self) -> tuple[Any, ...]:
        self.check()
        return tuple(partition_from_pyslurm(p) for p in self._rpc("partitions", self.adapter().load_partitions))

    def job_state(self, job_id: int) -> tuple[str, str]:
        """(state, reason) of one job; ("GONE", "") once Slurm forgot it."""
        job = self._job(job_id)
        return ("GONE", "") if job is None else (job.state, job.reason)

    def _job(self, job_id: int) -> Job | None:
        try:
            return job_from_pyslurm(self._rpc(f"job {job_id}", lambda: self.adapter().load_job(job_id)))
        except PyslurmFailure as f:
            if f.cause == "gone":
                return None
            raise

    def _node(self, name: str) -> Node | None:
        try:
            a = self.adapter()
            n = self._rpc(f"node {name}", lambda: a.load_node(name))
            return node_from_pyslurm(n, state=a.node_state(n), allocated_gres=a.allocated_gres(n))
        except PyslurmFailure as f:
            if f.cause == "gone":
                return None
            raise

    # -- acting ----------------------------------------------------------------
    def act(self, action: str, target: str, params: dict[str, Any]) -> tuple[str, str, str]:
        """Do one action and read the target back: (status "done"/"failed", detail,
        the call made). Never raises for Slurm's refusals: the detail names them."""
        a = self.adapter()
        call = a.describe(action, target, params)
        try:
            self._rpc(call, lambda: a.act(action, target, params))
        except PyslurmFailure as f:
            return "failed", f.message, call
        try:
            problem = self._verify(action, target)
        except (PyslurmFailure, ParseError):
            problem = None  # accepted; a failed read-back proves nothing either way
        return ("failed", problem, call) if problem else ("done", f"pyslurm {a.version}: {call}", call)

    def _verify(self, action: str, target: str) -> str | None:
        if action in ("drain", "down", "resume", "undrain"):
            node = self._node(target)
            if node is None:
                return None
            drain = "drain" in node.flags
            if action == "drain" and not drain:
                return f"node not draining (state {node.display_state})"
            if action in ("resume", "undrain") and drain:
                return f"node still draining (state {node.display_state})"
            if action == "down" and node.state != "down":
                return f"node not down (state {node.display_state})"
            return None
        job = self._job(int(target))
        if job is None:
            return None
        if action == "cancel":
            if job.state in _FINISHED:
                return f"job had already finished ({job.state})"
            if job.state not in ("CANCELLED", "COMPLETING"):
                return f"job still {job.state} after the cancel"
        elif action in ("hold", "requeuehold") and job.state == "PENDING" and not job.held:
            return f"job not held (reason {job.reason})"
        elif action == "release" and job.held:
            return f"job still held ({job.reason})"
        return None
