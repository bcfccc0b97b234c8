"""``python -m cockpit.manpage > man/cockpit.1``: the man page, written from the same
argument parser that reads the command line (argparse-manpage), so the two cannot
drift; tests/unit/test_completion_man.py compares the committed page with this output.

The page is shipped in the sdist (MANIFEST.in). Its width and date are fixed so that
the output depends on the parser alone, not on the terminal or the day.
"""

from __future__ import annotations

import os
import sys

WIDTH = "80"


def render() -> str:
    """The man page text. Raises ImportError without argparse-manpage (a test extra)."""
    from argparse_manpage.manpage import Manpage

    from cockpit import __version__
    from cockpit.cli import build_parser

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse wraps help text at the terminal's width
    try:
        page = Manpage(build_parser())
        page.date = f"cockpit {__version__}"
        page.source = f"cockpit {__version__}"
        page.manual = "cockpit manual"
        page.description = ("A terminal cockpit for Slurm GPU clusters: the TUI without a COMMAND, "
                            "headless commands with one.")
        return str(page)
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
