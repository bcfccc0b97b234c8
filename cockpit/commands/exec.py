"""``cockpit exec NODES -- CMD...``: run a command on many nodes, folded output.

Over SSH (window of [ssh] fanout_window, through [ssh] jump_host when set),
or with ``--srun`` as one Slurm job step across the nodes. Output is folded
by node set like clubak; ``--json`` gives one object per node.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from cockpit.errors import EXIT_FAILED, EXIT_OK, UsageError
from cockpit.hostlist import collapse, expand


def register(sub) -> None:
    p = sub.add_parser("exec", help="run a command on nodes over SSH (or srun), output folded by node set")
    p.add_argument("nodes", metavar="NODES", help="hostlist, e.g. node[01-04,07]")
    _options(p)
    # REMAINDER: everything after NODES; exec's own options may still come before "--"
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD", help="the program and its arguments")
    p.set_defaults(func=run)


def _options(p) -> None:
    p.add_argument("--json", action="store_true", help="one JSON object per node (exit code, stdout, stderr, duration, error)")
    p.add_argument("--window", type=int, metavar="N", help="concurrent SSH sessions (default: [ssh] fanout_window)")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds per node for the command (default: [ssh] command_timeout)")
    p.add_argument("--srun", action="store_true", help="run as a Slurm job step (srun) instead of SSH; not for drained nodes")


def fanout_settings(session, args):
    """SSH settings for compute nodes: [ssh], with [clusters.NAME] jump_host when given."""
    from cockpit.remote.settings import node_settings

    return node_settings(session.config, getattr(args, "cluster", None))


def simulated_nodes(session):
    """The simulated cluster's nodes (its probe runner, which serves as a pool) when the
    backend is simulated, else None: the demo never reaches a real node over SSH."""
    backend = session.backend
    caps = backend.capabilities()
    return caps.probes.probe_runner(session.config) if caps.simulated and caps.probes is not None else None


class _MiniParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(f"exec: {message}")


class _Progress:
    """A one-line progress counter on stderr, only on a terminal and only once
    a run has lasted a second (short runs stay quiet)."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.failed = 0
        self.shown = False

    def __call__(self, done: int, total: int, res) -> None:
        self.failed += 0 if res.ok else 1
        if self.tty and (self.shown or time.monotonic() - self.start > 1.0):
            self.shown = True
            sys.stderr.write(f"\r[exec] {done}/{total} done, {self.failed} failed ")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")


def _parse_command(args) -> list[str]:
    """The remote argv; exec options written between NODES and ``--`` are applied to args."""
    cmd = list(args.command)
    if "--" in cmd:
        cut = cmd.index("--")
        if cut:
            extra = _MiniParser(add_help=False)
            _options(extra)
            extra.parse_args(cmd[:cut], namespace=args)
        cmd = cmd[cut + 1:]
    if not cmd:
        raise UsageError("exec needs a command after --, e.g. cockpit exec node[01-04] -- uptime")
    return cmd


async def run(args, session) -> int:
    from cockpit.remote.fold import fold, render

    cmd = _parse_command(args)
    nodes = list(expand(args.nodes))
    if not nodes:
        raise UsageError(f"no nodes in {args.nodes!r}")
    if args.window is not None and args.window < 1:
        raise UsageError(f"--window must be at least 1, got {args.window}")
    progress = _Progress()
    if args.srun and session.runner is None:
        raise UsageError(f"--srun needs Slurm's commands; the {session.backend.name} backend has none")
    if args.srun:
        from cockpit.remote.srun import srun_fanout

        results = await srun_fanout(session.runner, nodes, cmd, timeout=args.timeout)
    else:
        from cockpit.remote.fanout import fanout
        from cockpit.remote.pool import SshPool

        pool = simulated_nodes(session) or SshPool(fanout_settings(session, args))
        try:
            results = await fanout(pool, nodes, cmd, window=args.window, timeout=args.timeout, progress=progress)
        finally:
            await pool.close()
    progress.finish()
    if args.json:
        json.dump([r.to_json() for r in results.values()], sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(fold(results)))
    bad = [h for h, r in results.items() if not r.ok]
    if bad:
        print(f"cockpit: {len(bad)} of {len(results)} nodes failed: {collapse(bad)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
