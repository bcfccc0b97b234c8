"""``cockpit doctor``: what cockpit would use, and whether it works.

It never crashes: every question it cannot answer becomes the answer's text
(one line), and the exit status says whether the controller answered.

It is bounded: each question has ``ASK_S`` to be answered, and once one went
unanswered the later ones are not asked. With Slurm installed but no controller
(SLURM_CONF pointing nowhere) Slurm's own clients retry for a minute each: the
doctor took 180 s (pyslurm probe 59 s, sinfo 30 s, the probe again, scontrol
30 s) before it said so; now about 5 s."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import shutil
import sys
from typing import Any

from cockpit.commands._deferred import DeferredBackend, open_deferred_session
from cockpit.errors import EXIT_OK, EXIT_UNAVAILABLE, CockpitError

ASK_S = 5.0
HINT = "is slurmctld running, and does SLURM_CONF (or configless DNS) lead to it?"


def register(sub) -> None:
    p = sub.add_parser("doctor", help="show Slurm version, backend and why, pyslurm, controller, config")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run, open_session=functools.partial(open_deferred_session, hint=HINT))


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


async def _pyslurm(session) -> dict[str, Any]:
    """Which pyslurm, which Slurm it saw, and why it was chosen or refused."""
    from cockpit.backends import pyslurm_backend

    backend = session.backend
    probed = backend.probed if isinstance(backend, pyslurm_backend.PyslurmBackend) else None
    if probed is not None:
        out = {"version": probed.pyslurm, "adapter": probed.generation, "slurm": probed.slurm,
               "chosen": True, "why": probed.why}
        if backend.switched:
            out.update(chosen=False, why=f"switched to slurm-cli at run time: {backend.switched}")
        return out
    if backend.name in ("demo", "replay") or session.runner is None:
        return {"chosen": False, "why": f"not asked: the {backend.name} backend reads no live Slurm"}
    found = await pyslurm_backend.probe(backend, remote=bool(session.config.general.host))
    if found.usable and found.worker is not None:
        await found.worker.close()  # only asked: this session reads through the CLI
    why = found.why if not found.usable else f"usable ({found.why}), but the backend is {backend.name}"
    return {"version": found.pyslurm or pyslurm_backend.installed_version() or None, "adapter": found.generation or None,
            "slurm": found.slurm or None, "chosen": False, "why": why}


class _Unanswered(Exception):
    """A question went past ASK_S: the later ones are not asked."""


async def _within(what: str, coro) -> Any:
    try:
        return await asyncio.wait_for(coro, ASK_S)
    except asyncio.TimeoutError:
        raise _Unanswered(f"no answer within {ASK_S:g} s ({what})") from None


def _cause(exc: BaseException) -> str:
    return _line(exc) if isinstance(exc, (CockpitError, _Unanswered)) else f"internal error: {_line(exc)}"


async def _chosen(session) -> tuple[Any, str]:
    """The session with its real backend (a deferred one is opened here, bounded), or why not."""
    if not isinstance(session.backend, DeferredBackend):
        return session, ""
    try:
        real = await session.backend.open_within()
    except CockpitError as exc:
        return None, _line(exc)
    return dataclasses.replace(session, backend=real, runner=session.backend.runner,
                               backend_reason=session.backend.reason), ""


async def _probe(session) -> dict:
    info: dict = {"config_file": session.config.path or "none (defaults)"}
    opened, why_not = await _chosen(session)
    if opened is None:
        info.update(backend="not chosen", backend_reason=why_not, read_only=session.read_only,
                    host=session.config.general.host or "local", controller=f"not answering: {why_not}", ok=False)
        return info
    session = opened
    info.update(backend=session.backend.name, backend_reason=session.backend_reason,
                source=session.backend.description, read_only=session.read_only,
                host=session.config.general.host or "local")
    if session.runner is not None and not session.config.general.host:
        info["commands"] = {c: shutil.which(c) or "not found" for c in ("squeue", "sinfo", "scontrol")}
    unanswered = ""
    try:
        info["slurm_version"] = await _within("the Slurm version", session.backend.version())
    except Exception as exc:  # noqa: BLE001 - doctor reports, never crashes
        info["slurm_version"] = None
        info["version_error"] = _cause(exc)
        unanswered = _cause(exc) if isinstance(exc, _Unanswered) else ""
    if unanswered:
        info["pyslurm"] = {"chosen": session.backend.name == "pyslurm", "why": f"not asked: {unanswered}"}
    else:
        try:
            info["pyslurm"] = await _within("the pyslurm probe", _pyslurm(session))
        except Exception as exc:  # noqa: BLE001
            info["pyslurm"] = {"chosen": False, "why": f"could not be asked: {_cause(exc)}"}
    try:
        if unanswered:
            raise _Unanswered(f"not asked: {unanswered}")
        nodes = await _within("the node listing", session.backend.fetch_nodes())
        info["controller"] = f"answering ({len(nodes)} nodes)"
        info["ok"] = True
    except Exception as exc:  # noqa: BLE001
        info["controller"] = f"not answering: {_cause(exc)}"
        info["ok"] = False
    info["source"] = session.backend.description  # a runtime switch shows here
    return info


async def run(args, session) -> int:
    info = await _probe(session)
    if args.json:
        json.dump(info, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for key, value in info.items():
            if isinstance(value, dict):
                value = ", ".join(f"{k}={v}" for k, v in value.items())
            print(f"{key:15} {value}")
    return EXIT_OK if info["ok"] else EXIT_UNAVAILABLE
