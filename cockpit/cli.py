"""Entry point: the TUI by default, headless subcommands otherwise.

The TUI (and so Textual) is imported only when it is started, so every
headless path stays fast and works where Textual is broken.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import pkgutil
import sys

from cockpit import __version__
from cockpit.errors import EXIT_USAGE, CockpitError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every usage error
        self.exit(EXIT_USAGE, f"cockpit: error: {message}\n")


def _global_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="config file (default: $COCKPIT_CONFIG, XDG, /etc)")
    p.add_argument("--demo", action="store_true", help="use the embedded simulated cluster")
    p.add_argument("--replay", metavar="DIR", help="read a directory made by 'cockpit record'")
    p.add_argument("--host", metavar="HOST", help="run Slurm commands on HOST over SSH")
    p.add_argument("--cluster", metavar="NAME", help="use [clusters.NAME] from the config")
    p.add_argument("--backend", choices=("auto", "slurm-cli", "pyslurm", "demo"))
    p.add_argument("--read-only", action="store_true", help="refuse every action")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cockpit", description="A terminal cockpit for Slurm GPU clusters.")
    parser.add_argument("--version", action="version", version=f"cockpit {__version__}")
    _global_options(parser)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    import cockpit.commands as pkg

    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"cockpit.commands.{mod.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


async def _run(args: argparse.Namespace) -> int:
    from cockpit.core.session import open_session

    session = await open_session(args)
    try:
        return await args.func(args, session)
    finally:
        await session.close()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            from cockpit.tui.launch import run_tui

            return run_tui(args)
        return asyncio.run(_run(args))
    except CockpitError as exc:
        print(f"cockpit: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("cockpit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: still one line, the traceback on request
        if os.environ.get("COCKPIT_DEBUG"):
            raise
        print(f"cockpit: internal error: {type(exc).__name__}: {exc} (set COCKPIT_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
