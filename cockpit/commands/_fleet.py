"""``--cluster all``: a headless command once per ``[clusters.NAME]``, the answers keyed by name.

JSON outputs (``--format json``, ``--json``) become one document,
``{"clusters": {NAME: <that cluster's document>}}``; a cluster that could not be
read is ``{"error": "..."}`` there, and the others still answer. Text outputs
come one after the other under a ``== cluster NAME ==`` line. The exit code is
the worst of the clusters' (a check's CRIT on one cluster is CRIT). It never acts:
``--yes`` and ``exec`` are refused (job ids and node names are per cluster).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Awaitable, Callable

from cockpit.config import load_config
from cockpit.core.session import cluster_names
from cockpit.errors import CockpitError, UsageError
from cockpit.text import one_line


def _wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "format", None) == "json" or bool(getattr(args, "json", False))


async def run_all(args: argparse.Namespace, run_one: Callable[[argparse.Namespace], Awaitable[int]]) -> int:
    """Run the command for each configured cluster. Raises ConfigError when none is
    configured, UsageError for a command that would act (job ids and node names are
    per cluster: one ``--yes`` must never act on every cluster)."""
    if getattr(args, "yes", False) or getattr(args.func, "__module__", "") == "cockpit.commands.exec":
        raise UsageError("--cluster all only reads: to act, name one cluster (--cluster NAME)")
    names = cluster_names(load_config(getattr(args, "config", None)))
    as_json = _wants_json(args)
    docs: dict[str, object] = {}
    worst = 0
    for name in names:
        one = argparse.Namespace(**{**vars(args), "cluster": name})
        out = io.StringIO()
        if not as_json:
            print(f"== cluster {name} ==", flush=True)
        try:
            if as_json:
                with contextlib.redirect_stdout(out):
                    rc = await run_one(one)
            else:
                rc = await run_one(one)
        except CockpitError as exc:
            rc = exc.exit_code
            msg = one_line(str(exc))
            print(f"cockpit: cluster {name}: {msg}", file=sys.stderr)
            if as_json:
                docs[name] = {"error": msg}
            worst = max(worst, rc)
            continue
        worst = max(worst, rc)
        if as_json:
            text = out.getvalue()
            try:
                docs[name] = json.loads(text) if text.strip() else {}
            except ValueError:
                docs[name] = {"output": text}
    if as_json:
        json.dump({"clusters": docs}, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    return worst
