"""One small adapter per pyslurm generation, chosen from pyslurm's version.

pyslurm keeps a branch per Slurm release; what cockpit reads is the same in
22.5, 24.11 and 25.11 except for what the adapters below say:

* the controller's version: 24.11 and 25.11 have
  ``pyslurm.slurmctld.Config.load().version``; 22.5's ``slurmctld.Config`` has no
  ``version``, which its old API gives (``pyslurm.config().get()["version"]``);
* a partly allocated node: 24.11 and 25.11 say ``MIXED`` (``Node._node_state``,
  as sinfo and scontrol do); 22.5 passes on the controller's ``ALLOCATED``, so
  its adapter applies the same rule (idle CPUs, but not all of them).

No generation gives a node's GPU indexes in use: 24.11 and 25.11 derive
``Node.allocated_gres`` from the node's TRES (counts only), and 22.5 reads the
node's ``gres_used`` but loads nodes without ``SHOW_DETAIL``, so it is always
empty. They come from the running jobs' ``get_resource_layout_per_node()``.

The actions (``Job.cancel/send_signal/hold/release/requeue``,
``Node.modify(Node(state=..., reason=...))``) are the same calls in all three;
``ACTIONS`` lists what an adapter does itself, the executor runs everything
else as Slurm commands. Errors become :class:`PyslurmFailure` with a cause
(``down``, ``denied``, ``mismatch``, ``gone``, ``rpc``) and one line.
"""

from __future__ import annotations

from typing import Any

from cockpit.backends.pyslurm_map import major_minor

# Slurm's errno values (slurm/slurm_errno.h, unchanged from 22.05 to 25.11).
_DOWN = {1001, 1002, 1003, 1004, 1800, 1801, 1802, 1803, 5004}
_MISMATCH = {1005, 1006}  # SLURM_PROTOCOL_VERSION_ERROR, ..._IO_STREAM_VERSION_ERROR
_DENIED = {2002, 2010}  # ESLURM_ACCESS_DENIED, ESLURM_USER_ID_MISSING
_GONE = {2017, 2018, 2021}  # ESLURM_INVALID_JOB_ID, ..._INVALID_NODE_NAME, ESLURM_ALREADY_DONE
_DOWN_WORDS = ("unable to contact slurm controller", "connection refused", "socket timed out",
               "communication connection failure", "zero bytes were transmitted")


class PyslurmFailure(Exception):
    """A pyslurm call failed; ``cause`` is down, denied, mismatch, gone, rpc or unusable."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause, self.message = cause, message


def classify(exc: BaseException, what: str) -> PyslurmFailure:
    """pyslurm's RPCError (or anything a call raised) -> PyslurmFailure naming the cause."""
    errno = getattr(exc, "errno", None)
    said = getattr(exc, "msg", "") or exc
    args = getattr(exc, "args", ())
    if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], int):
        said, errno = args  # the old API (22.5's pyslurm.config()) raises ValueError(text, errno)
    text = (str(said).strip().splitlines() or [type(exc).__name__])[0]
    low = text.lower()
    if errno in _DOWN or any(w in low for w in _DOWN_WORDS):
        return PyslurmFailure("down", f"slurmctld does not answer ({what}): {text}")
    if errno in _MISMATCH or "protocol version" in low:
        return PyslurmFailure("mismatch", f"pyslurm and slurmctld speak different Slurm versions ({what}): {text}")
    if errno in _DENIED or "permission denied" in low:
        return PyslurmFailure("denied", f"permission refused by Slurm ({what}): {text}")
    if errno in _GONE:
        return PyslurmFailure("gone", f"{what}: {text}")
    return PyslurmFailure("rpc", f"{what}: {text}")


class Adapter:
    """pyslurm 25.11 (the newest; the others change only what differs)."""

    generation = "25.11"
    # cockpit action -> how the adapter does it (text for the plan, the result and the audit)
    ACTIONS = {
        "cancel": "Job({t}).cancel()",
        "signal": "Job({t}).send_signal({sig!r}, steps={steps!r})",
        "hold": "Job({t}).hold()",
        "release": "Job({t}).release()",
        "requeue": "Job({t}).requeue()",
        "requeuehold": "Job({t}).requeue(hold=True)",
        "drain": "Node({t!r}).modify(Node(state='DRAIN', reason=...))",
        "resume": "Node({t!r}).modify(Node(state='RESUME'))",
        "undrain": "Node({t!r}).modify(Node(state='UNDRAIN'))",
        "down": "Node({t!r}).modify(Node(state='DOWN', reason=...))",
    }

    def __init__(self, mod: Any) -> None:
        self.mod = mod
        self.version = str(getattr(mod, "__version__", ""))

    # -- reading ---------------------------------------------------------------
    def controller_version(self) -> str:
        return str(self.mod.slurmctld.Config.load().version or "")

    def load_jobs(self) -> list[Any]:
        return list(self.mod.Jobs.load().values())

    def load_nodes(self) -> list[Any]:
        return list(self.mod.Nodes.load().values())

    def load_partitions(self) -> list[Any]:
        return list(self.mod.Partitions.load().values())

    def node_state(self, node: Any) -> str:
        """The node's state words (``"MIXED+DRAIN"``)."""
        return str(node.state or "")

    def allocated_gres(self, node: Any) -> dict | None:
        """The node's GRES in use (``{"shard": 4, "gpu": 2}``): from its allocated TRES in
        24.11 and 25.11; 22.5's is always empty (see above), which says nothing about use."""
        return dict(node.allocated_gres or {})

    def load_job(self, job_id: int) -> Any:
        return self.mod.Job.load(job_id)

    def load_node(self, name: str) -> Any:
        return self.mod.Node.load(name)

    # -- acting ----------------------------------------------------------------
    def describe(self, action: str, target: str, params: dict[str, Any]) -> str:
        """The call an action makes, as text (``Job(42).cancel()``)."""
        return self.ACTIONS[action].format(t=target, sig=params.get("signal"), steps=_steps(params))

    def act(self, action: str, target: str, params: dict[str, Any]) -> None:
        """Do one action through pyslurm. Raises what pyslurm raises (RPCError)."""
        m = self.mod
        if action in ("drain", "down"):
            m.Node(target).modify(m.Node(state=action.upper(), reason=params["reason"]))
        elif action in ("resume", "undrain"):
            m.Node(target).modify(m.Node(state=action.upper()))
        else:
            job = m.Job(int(target))
            if action == "cancel":
                job.cancel()
            elif action == "signal":
                job.send_signal(params["signal"], steps=_steps(params))
            elif action in ("requeue", "requeuehold"):
                job.requeue(hold=action == "requeuehold")
            else:
                getattr(job, action)()  # hold, release


def _steps(params: dict[str, Any]) -> str:
    # scancel --full: every step and the batch shell; --batch: the batch shell only.
    return "all" if params.get("full") else "batch" if params.get("batch") else "children"


class Adapter2411(Adapter):
    """pyslurm 24.11: what cockpit reads and does is the same as in 25.11."""

    generation = "24.11"


class Adapter2205(Adapter):
    """pyslurm 22.5: no ``slurmctld.Config.version``, no MIXED state."""

    generation = "22.05"

    def controller_version(self) -> str:
        return str(self.mod.config().get().get("version") or "")

    def node_state(self, node: Any) -> str:
        words = str(node.state or "").split("+")
        idle, cpus = node.idle_cpus, node.effective_cpus
        if words[0] == "ALLOCATED" and idle and idle != cpus:  # 24.11's Node._node_state rule
            words[0] = "MIXED"
        return "+".join(words)


ADAPTERS = {a.generation: a for a in (Adapter2205, Adapter2411, Adapter)}


def known() -> str:
    return ", ".join(ADAPTERS)


def adapter_for(mod: Any) -> Adapter:
    """The adapter of this pyslurm module, by its major.minor.
    Raises PyslurmFailure("unusable") for a generation cockpit has no adapter for."""
    version = str(getattr(mod, "__version__", ""))
    cls = ADAPTERS.get(major_minor(version))
    if cls is None:
        raise PyslurmFailure("unusable", f"cockpit has no adapter for pyslurm {version or '(no version)'} "
                                         f"(known generations: {known()})")
    return cls(mod)
