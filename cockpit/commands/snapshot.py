"""``cockpit snapshot``: one fetch, printed as JSON (stable schema), tables, TSV or CSV."""

from __future__ import annotations

import json
import sys

from cockpit.errors import EXIT_FAILED, EXIT_OK, UsageError

FORMATS = ("table", "json", "tsv", "csv")


def register(sub) -> None:
    from cockpit.commands._tables import TABLES

    p = sub.add_parser("snapshot", help="print the cluster once (table, json, tsv or csv)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table: fitted to the terminal, whole in a pipe; tsv/csv: every cell whole, for scripts")
    p.add_argument("--table", choices=TABLES, help="print only this table (table, tsv and csv formats)")
    p.add_argument("--partition", metavar="P", help="only nodes and jobs of partition P")
    p.add_argument("--state", metavar="S", help="only nodes/jobs in state S,...: Slurm's names or codes "
                   "(idle, mix, drain, down, PD, R, CG ...)")
    p.set_defaults(func=run)


def filter_snapshot(snap, partition: str | None, state: str | None):
    """Keep the nodes/jobs that match; raises UsageError for an unknown partition or state."""
    from dataclasses import replace

    nodes, jobs, parts = snap.nodes, snap.jobs, snap.partitions
    if partition:
        names = {p.name for p in parts} | {p for n in nodes for p in n.partitions}
        if partition not in names:
            raise UsageError(f"unknown partition {partition!r} (known: {', '.join(sorted(names)) or 'none'})")
        nodes = tuple(n for n in nodes if partition in n.partitions)
        jobs = tuple(j for j in jobs if partition in j.partition.split(","))
        parts = tuple(p for p in parts if p.name == partition)
    if state:
        from cockpit.core.filtering import parse_state_filter

        wanted = parse_state_filter(state)
        nodes = tuple(n for n in nodes if wanted.node(n))
        jobs = tuple(j for j in jobs if wanted.job(j))
    return replace(snap, nodes=nodes, jobs=jobs, partitions=parts)


async def run(args, session) -> int:
    snap = await session.backend.snapshot()
    snap = filter_snapshot(snap, args.partition, args.state)
    if args.format == "json":
        from cockpit.models.serialize import snapshot_to_dict

        json.dump(snapshot_to_dict(snap), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        from cockpit.commands._tables import print_snapshot

        print_snapshot(snap, args.format, args.table)
    # Partial data (a part that failed, a state we do not know) is printed,
    # but the exit code says it is not the whole truth.
    for err in snap.errors:
        print(f"cockpit: warning: {err}", file=sys.stderr)
    return EXIT_FAILED if snap.errors else EXIT_OK
