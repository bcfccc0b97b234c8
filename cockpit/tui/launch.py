"""``cockpit`` with no subcommand: find a cluster and run the TUI.

Without --demo/--replay/--host/--cluster and with no local Slurm (``scontrol``
missing or the controller not answering ``scontrol ping`` within a few
seconds), one screen explains how to point cockpit at a cluster instead of a
traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess

PING_TIMEOUT = 5.0


def local_slurm_problem(timeout: float = PING_TIMEOUT) -> str:
    """'' when a local controller answers, else why not (one line)."""
    exe = shutil.which("scontrol")
    if exe is None:
        return "scontrol is not on PATH: this machine has no Slurm client"
    try:
        res = subprocess.run([exe, "ping"], capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"scontrol ping did not answer within {timeout:g} s"
    except OSError as exc:
        return f"cannot run scontrol: {exc}"
    out = res.stdout.decode("utf-8", "replace")
    if res.returncode != 0 or "UP" not in out:
        first = (out.strip() or res.stderr.decode("utf-8", "replace").strip() or f"exit {res.returncode}").splitlines()[0]
        return f"the Slurm controller does not answer (scontrol ping: {first})"
    return ""


def _wants_explicit_source(args: argparse.Namespace) -> bool:
    return any(getattr(args, k, None) for k in ("demo", "replay", "host", "cluster")) or getattr(args, "backend", None) == "demo"


def run_tui(args: argparse.Namespace) -> int:
    """Run the TUI for ``args``; returns the exit code. Raises CockpitError (one line) on bad config."""
    if not _wants_explicit_source(args):
        from cockpit.config import load_config

        cfg = load_config(getattr(args, "config", None))
        if not cfg.general.host and cfg.general.backend in ("auto", "slurm-cli"):
            problem = local_slurm_problem()
            if problem:
                from cockpit.tui.screens.nocluster import NoClusterApp

                NoClusterApp(problem, cfg).run()
                return 3
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from cockpit.tui.app import CockpitApp

    # One event loop for the sessions and the app: SSH connections opened while choosing the
    # backend stay usable by the pollers.
    sessions, unopened = await _open_sessions(args)
    try:
        first, *others = sessions
        app = CockpitApp(first.backend, first.config, read_only=first.read_only,
                         fleet=tuple((s.backend, s.config) for s in others), unopened=unopened)
        await app.run_async()
        return app.return_code or 0
    finally:
        for session in sessions:
            await session.close()


async def _open_sessions(args: argparse.Namespace) -> tuple[list, dict[str, str]]:
    """One session, or with ``--cluster all`` one per ``[clusters.NAME]`` (by name): a
    cluster that cannot be opened is named on the fleet Pulse, and the others open.
    Raises the first cluster's CockpitError when none opens, ConfigError when none is configured."""
    from cockpit.core.session import cluster_names, open_session
    from cockpit.errors import CockpitError
    from cockpit.text import one_line

    if getattr(args, "cluster", None) != "all":
        return [await open_session(args)], {}
    from cockpit.config import load_config

    sessions, unopened, first_error = [], {}, None
    for name in cluster_names(load_config(getattr(args, "config", None))):
        try:
            sessions.append(await open_session(argparse.Namespace(**{**vars(args), "cluster": name})))
        except CockpitError as exc:
            unopened[name] = one_line(str(exc))
            first_error = first_error or exc
    if not sessions:
        raise first_error  # type: ignore[misc]  # cluster_names raised if there were no names
    return sessions, unopened
