"""``cockpit check NAME ...``: run a plugin check headless.

Exit codes follow the monitoring-plugin convention: 0 OK, 1 WARN, 2 CRIT,
3 UNKNOWN (also for bad input, so cron/Nagios never mistake it for OK).
"""

from __future__ import annotations

import json
import sys

from cockpit.errors import CHECK_UNKNOWN, EXIT_USAGE, CockpitError
from cockpit.text import one_line


def register(sub) -> None:
    from cockpit.plugins.loader import load_plugins

    p = sub.add_parser("check", help="run a plugin check (JSON with --json; exit 0/1/2/3)")
    p.set_defaults(func=run_list, check_parser=p)
    checks = p.add_subparsers(dest="check_name", metavar="CHECK", parser_class=type(p))
    loaded = load_plugins()
    p.set_defaults(plugin_warnings=loaded.warnings)
    for plugin, chk in loaded.all_checks():
        cp = checks.add_parser(chk.name, help=chk.description, description=chk.description)
        cp.add_argument("--json", action="store_true", help="print the result as JSON")
        cp.add_argument("-y", "--yes", action="store_true",
                        help="do what the check must do to the cluster (submit its jobs); without: show it, exit 2")
        try:
            chk.add_arguments(cp)
        except Exception as exc:  # a plugin's bad flags must not break the CLI
            loaded.warnings.append(f"check {chk.name!r} of plugin {plugin.name!r}: bad arguments: {exc}")
            continue
        cp.set_defaults(func=run_check, check=chk, plugin=plugin)
        if getattr(chk, "cluster_on_demand", False):  # it asks Slurm only for what its inputs lack
            from cockpit.commands._deferred import open_deferred_session

            cp.set_defaults(open_session=open_deferred_session)


async def run_list(args, session) -> int:
    from cockpit.plugins.loader import load_plugins

    loaded = load_plugins()
    for warning in loaded.warnings:
        print(f"cockpit: warning: {warning}", file=sys.stderr)
    for plugin, chk in loaded.all_checks():
        print(f"{chk.name:12} {chk.description}  [{plugin.name}]")
    return 0


def _print_plan(check: str, exc, as_json: bool) -> None:
    """What the check would have done, for a run without --yes (nothing ran)."""
    from cockpit.core.text import sanitize

    plan = exc.plan
    if as_json:
        json.dump({"check": check, "status": "NOT_CONFIRMED", "exit_code": EXIT_USAGE,
                   "summary": str(exc), "plan": plan.to_dict()}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(f"{check}: would run ({plan.spec.title.lower()} on {', '.join(plan.targets)}):")
        for line in plan.describe():
            print(f"  {sanitize(line)}")
        for script in plan.scripts():
            print("  script:")
            for line in script.splitlines():
                print(f"    {sanitize(line)}")
    print(f"cockpit: nothing done: add --yes to {plan.spec.title.lower()}", file=sys.stderr)


def _print_text(result) -> None:
    print(f"{result.severity.name}: {result.summary}")
    for f in result.findings:
        print(f"  [{f.severity.name}] {f.title}" + (f" ({f.rule})" if f.rule else ""))
        if f.detail:
            print(f"      {f.detail}")
        for ev in f.evidence:
            print(f"      - {ev}")
        if f.fix:
            print(f"      fix: {f.fix}")


async def run_check(args, session) -> int:
    for warning in getattr(args, "plugin_warnings", []):
        print(f"cockpit: warning: {warning}", file=sys.stderr)
    from cockpit.plugins.host import session_context

    try:
        ctx = session_context(session, args.plugin, yes=bool(getattr(args, "yes", False)),
                              progress=lambda m: print(m, file=sys.stderr, flush=True))
    except CockpitError as exc:
        print(f"cockpit: {one_line(str(exc))}", file=sys.stderr)
        return CHECK_UNKNOWN
    try:
        return await _run_and_print(args, ctx)
    finally:
        await ctx.probes.close()


async def _run_and_print(args, ctx) -> int:
    from cockpit.core.actions import ConfirmationNeeded

    try:
        result = await args.check.run(ctx, args)
    except ConfirmationNeeded as exc:
        _print_plan(args.check.name, exc, bool(getattr(args, "json", False)))
        return EXIT_USAGE
    except CockpitError as exc:
        print(f"cockpit: {one_line(str(exc))}", file=sys.stderr)
        if getattr(args, "json", False):
            json.dump({"check": args.check.name, "status": "UNKNOWN", "exit_code": CHECK_UNKNOWN,
                       "summary": str(exc), "findings": [], "data": {}}, sys.stdout, indent=1)
            sys.stdout.write("\n")
        return CHECK_UNKNOWN
    if getattr(args, "prometheus", False) and "prometheus" in result.data:
        sys.stdout.write(str(result.data["prometheus"]))
    elif getattr(args, "json", False):
        json.dump(result.to_dict(), sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _print_text(result)
    return result.exit_code
