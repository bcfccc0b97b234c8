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
from cockpit.entrypoints import backend_names
from cockpit.errors import EXIT_USAGE, CockpitError
from cockpit.text import one_line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every usage error
        self.exit(EXIT_USAGE, f"cockpit: error: {one_line(message)}\n")


_GLOBAL_OPTIONS: tuple[tuple[str, dict], ...] = (
    ("--config", {"metavar": "FILE", "help": "config file (default: $COCKPIT_CONFIG, XDG, /etc)"}),
    ("--demo", {"action": "store_true", "help": "use the embedded simulated cluster"}),
    ("--replay", {"metavar": "DIR", "help": "read a directory made by 'cockpit record'"}),
    ("--host", {"metavar": "HOST", "help": "run Slurm commands on HOST over SSH"}),
    ("--cluster", {"metavar": "NAME", "help": "use [clusters.NAME] from the config; all: every one (headless commands: each in turn; the TUI: all at once, c switches)"}),
    ("--backend", {"choices": backend_names(), "help": "auto, or an installed backend by name"}),
    ("--read-only", {"action": "store_true", "help": "refuse every action"}),
    ("--prometheus", {"metavar": "URL", "help": "GPU telemetry from this Prometheus (dcgm-exporter series)"}),
)


def _global_options(p: argparse.ArgumentParser) -> None:
    for flag, kw in _GLOBAL_OPTIONS:
        p.add_argument(flag, **kw)


def _global_options_after(parser: argparse.ArgumentParser) -> None:
    """Accept the global flags after a subcommand too (`cockpit snapshot --demo`), as
    kubectl does. SUPPRESS: a flag not given there leaves the one given before it."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps subparsers only here
        if not isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            continue
        for sub in dict.fromkeys(action.choices.values()):
            for flag, kw in _GLOBAL_OPTIONS:
                if flag not in sub._option_string_actions:  # noqa: SLF001 - a command's own flag wins
                    sub.add_argument(flag, **{**kw, "default": argparse.SUPPRESS, "help": argparse.SUPPRESS})
            _global_options_after(sub)


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
    _global_options_after(parser)
    parser.set_defaults(root_parser=parser)  # `cockpit completion` and the man page read the whole tree
    return parser


async def _run(args: argparse.Namespace) -> int:
    from cockpit.core.session import open_session

    if getattr(args, "cluster", None) == "all":
        from cockpit.commands._fleet import run_all

        return await run_all(args, _run)
    # A command may open its own kind of session (a check that asks Slurm only on demand).
    session = await getattr(args, "open_session", open_session)(args)
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
        print(f"cockpit: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("cockpit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: still one line, the traceback on request
        if os.environ.get("COCKPIT_DEBUG"):
            raise
        print(f"cockpit: internal error: {type(exc).__name__}: {one_line(str(exc))} (set COCKPIT_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
