"""``cockpit job cancel|signal|requeue|hold|release|timelimit|top|nice|tail|procs|why|show``.

Every action goes through cockpit.core.actions (read-only, audit, per-target
results). Without ``--yes`` nothing runs: the exact argv is printed and the
exit status is 2. Exit codes: 0 all done, 1 some target failed, 2 usage,
config or read-only refusal.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cockpit.errors import EXIT_USAGE

_JOB_HELP = {
    "cancel": "cancel jobs (scancel)",
    "signal": "send a signal to jobs (scancel --signal)",
    "requeue": "requeue jobs (scontrol requeue; --hold: requeuehold)",
    "hold": "hold pending jobs (scontrol hold)",
    "release": "release held jobs (scontrol release)",
    "timelimit": "change the time limit (scontrol update TimeLimit=)",
    "top": "move jobs to the top of their user's queue (scontrol top)",
    "nice": "change the nice value (scontrol update Nice=)",
}


def add_action_flags(p: argparse.ArgumentParser) -> None:
    """--yes, --dry-run, --json (and --read-only, which never clears the global one)."""
    p.add_argument("-y", "--yes", action="store_true", help="really do it (without: show what would run, exit 2)")
    p.add_argument("--dry-run", action="store_true", help="print what would run, run nothing")
    p.add_argument("--json", action="store_true", help="machine-readable result")
    # SUPPRESS: an absent flag here must not overwrite `cockpit --read-only job ...`.
    p.add_argument("--read-only", action="store_true", default=argparse.SUPPRESS, help="refuse every action")


def _clean(text: str) -> str:
    from cockpit.core.joblog import sanitize

    return sanitize(text)


def _print_plan(plan: Any, *, as_json: bool, confirmed: bool) -> None:
    if as_json:
        print(json.dumps({"action": plan.spec.name, "confirmed": confirmed, "dry_run": False,
                          "targets": list(plan.targets),
                          "would_run": [list(s.argv) for s in plan.steps]}, indent=2))
        return
    print(f"would run ({plan.spec.title.lower()}, {len(plan.steps)} target(s)):")
    for line in plan.describe():
        print(f"  {_clean(line)}")


def print_outcome(outcome: Any, as_json: bool) -> None:
    """Per-target results, Slurm's own words for failures."""
    if as_json:
        print(json.dumps(outcome.to_dict(), indent=2))
        return
    res = outcome.results
    if outcome.dry_run:
        print(f"dry run: {outcome.plan.spec.title.lower()}, nothing was run:")
        for line in outcome.plan.describe():
            print(f"  {_clean(line)}")
        return
    n_unknown = sum(1 for r in res if r.unknown)
    n_fail = len(outcome.failed) - n_unknown
    print(f"{outcome.plan.spec.name}: {len(res) - n_fail - n_unknown} done, {n_fail} failed"
          + (f", {n_unknown} outcome unknown (read it back: cockpit snapshot)" if n_unknown else ""))
    width = max(len(r.target) for r in res)
    for r in res:
        label = "done" if r.ok else "UNKNOWN" if r.unknown else "FAILED"
        detail = _clean(r.detail).replace("\n", "\n" + " " * (width + 11))
        print(f"  {r.target:<{width}}  {label:<6}  {detail}".rstrip())


async def run_action(args: argparse.Namespace, session: Any, name: str, targets: list[str], **params: Any) -> int:
    """Plan, gate (read-only, --yes), execute and report one action.

    Raises UsageError/ReadOnlyError/ConfigError (exit 2 through cli.py)."""
    from cockpit.core.actions import ConfirmationNeeded, Params, actions_from_session, build_plan

    plan = build_plan(name, targets, Params(**params))
    read_only = bool(getattr(args, "read_only", False)) or bool(session.read_only)
    actions = actions_from_session(session, yes=args.yes)
    actions.read_only = read_only
    try:
        outcome = await actions.execute(plan, dry_run=args.dry_run)
    except ConfirmationNeeded:
        _print_plan(plan, as_json=args.json, confirmed=False)
        print(f"cockpit: nothing done: add --yes to {name} {len(plan.targets)} "
              f"{plan.spec.kind}(s), or --dry-run to only show it", file=sys.stderr)
        return EXIT_USAGE
    print_outcome(outcome, args.json)
    return outcome.exit_code


async def _job_action(args: argparse.Namespace, session: Any) -> int:
    name = args.action
    params: dict[str, Any] = {}
    if name == "signal":
        params = {"signal": args.signal, "full": args.full, "batch": args.batch}
    elif name == "requeue" and args.hold:
        name = "requeuehold"
    elif name == "timelimit":
        params = {"time_limit": args.time}
    elif name == "nice":
        params = {"nice": args.value}
    return await run_action(args, session, name, args.jobs, **params)


def register(subparsers: argparse._SubParsersAction) -> None:
    job = subparsers.add_parser("job", help="act on jobs: cancel, signal, requeue, hold, release ...")
    sub = job.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in _JOB_HELP.items():
        p = sub.add_parser(name, help=text, description=text)
        if name == "signal":
            p.add_argument("-s", "--signal", required=True, help="USR1, USR2, TERM, KILL, ... or a number")
            grp = p.add_mutually_exclusive_group()
            grp.add_argument("--full", action="store_true", help="also signal the batch shell (scancel --full)")
            grp.add_argument("--batch", action="store_true", help="signal only the batch shell (scancel --batch)")
        elif name == "requeue":
            p.add_argument("--hold", action="store_true", help="requeue held (scontrol requeuehold)")
        elif name == "timelimit":
            p.add_argument("-t", "--time", required=True, help="new limit: MIN, H:M:S, D-H:M, +MIN, -MIN, UNLIMITED")
        elif name == "nice":
            p.add_argument("--value", type=int, required=True, help="nice value (negative needs an operator)")
        p.add_argument("jobs", nargs="+", metavar="JOBID", help="job ids (123, 123_4 for an array task)")
        add_action_flags(p)
        p.set_defaults(func=_job_action)
    from cockpit.commands._jobnodes import add_parsers

    add_parsers(sub)  # tail and procs: read on the job's nodes where needed
    from cockpit.commands._jobacct import add_parsers as add_accounting_parsers

    add_accounting_parsers(sub)  # why and show: the scheduler's and accounting's view of one job
