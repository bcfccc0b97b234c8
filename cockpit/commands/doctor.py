"""``cockpit doctor``: what cockpit would use, and whether it works."""

from __future__ import annotations

import json
import shutil
import sys

from cockpit.errors import EXIT_OK, EXIT_UNAVAILABLE, CockpitError


def register(sub) -> None:
    p = sub.add_parser("doctor", help="show Slurm version, backend and why, controller, config")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


async def _probe(session) -> dict:
    info: dict = {
        "config_file": session.config.path or "none (defaults)",
        "backend": session.backend.name,
        "backend_reason": session.backend_reason,
        "source": session.backend.description,
        "read_only": session.read_only,
        "host": session.config.general.host or "local",
    }
    if session.runner is not None and not session.config.general.host:
        info["commands"] = {c: shutil.which(c) or "not found" for c in ("squeue", "sinfo", "scontrol")}
    try:
        info["slurm_version"] = await session.backend.version()
    except CockpitError as exc:
        info["slurm_version"] = None
        info["version_error"] = str(exc)
    try:
        nodes = await session.backend.fetch_nodes()
        info["controller"] = f"answering ({len(nodes)} nodes)"
        info["ok"] = True
    except CockpitError as exc:
        info["controller"] = f"not answering: {exc}"
        info["ok"] = False
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
