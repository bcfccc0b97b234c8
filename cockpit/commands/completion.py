"""``cockpit completion bash|zsh|fish|tcsh``: a tab-completion script for the shell,
generated from cockpit's own argument parser by shtab (no Python runs at <TAB>, unlike
argcomplete). shtab writes fish natively since 1.9 (pyproject.toml pins that).

Install: ``cockpit completion bash > ~/.local/share/bash-completion/completions/cockpit``,
``cockpit completion zsh > ~/.zfunc/_cockpit``, ``cockpit completion fish >
~/.config/fish/completions/cockpit.fish``. Asks no cluster: the session is never opened.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cockpit.errors import EXIT_OK, UsageError

SHELLS = ("bash", "zsh", "fish", "tcsh")


class _NoSession:
    """What ``completion`` gets instead of a session: it asks no backend."""

    async def close(self) -> None:
        return None


async def _no_session(_args: argparse.Namespace) -> _NoSession:
    return _NoSession()


def register(sub) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, fish, tcsh)",
                       description="Print a tab-completion script for SHELL, generated from cockpit's options.")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh, fish or tcsh")
    p.set_defaults(func=run, open_session=_no_session)


async def run(args: argparse.Namespace, _session: Any) -> int:
    """Raises UsageError when shtab is not installed."""
    try:
        import shtab
    except ImportError:
        raise UsageError("completion needs the shtab package (pip install shtab)") from None
    parser = getattr(args, "root_parser", None)
    if parser is None:
        raise UsageError("completion: the command line parser was not handed over")
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    return EXIT_OK
