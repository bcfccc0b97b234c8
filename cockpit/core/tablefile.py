"""Write a table as shown (its rows filtered and sorted, its shown columns) to a CSV or
JSON file: the TUI's export (``E``). JSON is a list of objects keyed by column
label; CSV has the labels as its first row. A cell that a spreadsheet would run as
a formula (``=``, ``+``, ``@``, a ``-`` that is no number) is written with a
leading ``'`` in CSV: job names and reasons are cluster users' strings."""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from cockpit.errors import UsageError

FORMATS = (".csv", ".json")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _safe(cell: str) -> str:
    if cell[:1] in ("=", "+", "@", "\t", "\r") or (cell[:1] == "-" and not _NUMBER.match(cell)):
        return "'" + cell
    return cell


def write_table(path: str, labels: Sequence[str], rows: Sequence[Sequence[str]]) -> Path:
    """Write ``rows`` (cell texts under ``labels``) to ``path``: JSON for ``.json``,
    else CSV. Returns the path written. Raises UsageError (one line, naming the
    path) for an empty path, a directory, or a failed write."""
    if not path.strip():
        raise UsageError("no file name given")
    target = Path(path.strip()).expanduser()
    if target.is_dir():
        raise UsageError(f"{target} is a directory: give a file name (.csv or .json)")
    try:
        with open(target, "w", encoding="utf-8", newline="") as fh:
            if target.suffix.lower() == ".json":
                json.dump([dict(zip(labels, r)) for r in rows], fh, ensure_ascii=False, indent=1)
                fh.write("\n")
            else:
                out = csv.writer(fh)
                out.writerow(labels)
                out.writerows([_safe(c) for c in r] for r in rows)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


def default_name(view: str, now: float, directory: str | None = None) -> str:
    """``~/cockpit-jobs-20261201-0312.csv``-like: in ``directory`` (the working one by default)."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return os.path.join(directory or os.getcwd(), f"cockpit-{view}-{stamp}.csv")
