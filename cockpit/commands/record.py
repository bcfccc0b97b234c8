"""``cockpit record DIR``: save the raw outputs of one fetch for post-mortems and
bug reports; ``--replay DIR`` reads them back through the same parsers."""

from __future__ import annotations

import sys
from pathlib import Path

from cockpit.errors import EXIT_OK, CockpitError, UsageError
from cockpit.text import one_line


def register(sub) -> None:
    p = sub.add_parser("record", help="save the raw Slurm outputs of one fetch into DIR")
    p.add_argument("dir", metavar="DIR")
    p.set_defaults(func=run)


async def run(args, session) -> int:
    from cockpit.backends.pyslurm_backend import PyslurmBackend
    from cockpit.backends.slurm_cli import SlurmCliBackend

    backend = session.backend
    if isinstance(backend, PyslurmBackend):  # no raw outputs of its own: record the same local Slurm's commands
        backend = backend.cli()
    if not isinstance(backend, SlurmCliBackend) or backend.name != "slurm-cli":
        raise UsageError(f"record needs a live Slurm (the {backend.name} backend has no raw outputs)")
    target = Path(args.dir).expanduser()
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {args.dir}: {exc.strerror}") from None
    written: list[str] = []

    def save(key: str, data: bytes) -> None:
        (target / key).write_bytes(data)
        written.append(key)

    backend.on_output = save
    snap = await backend.snapshot()
    for err in snap.errors:
        print(f"cockpit: warning: {err}", file=sys.stderr)
    try:  # sdiag.txt too, for `--replay DIR check scheduler` and the Pulse's controller line
        await backend.fetch_sched_stats()
    except CockpitError as exc:
        print(f"cockpit: warning: sdiag not recorded: {one_line(str(exc))}", file=sys.stderr)
    print(f"recorded {', '.join(sorted(set(written)))} into {target}")
    return EXIT_OK
