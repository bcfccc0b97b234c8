"""``cockpit check NAME ...``: run a plugin check headless.

Exit codes follow the monitoring-plugin convention: 0 OK, 1 WARN, 2 CRIT,
3 UNKNOWN (also for bad input, so cron/Nagios never mistake it for OK).
"""

from __future__ import annotations

import json
import sys

from cockpit.errors import CHECK_UNKNOWN, CockpitError


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
        try:
            chk.add_arguments(cp)
        except Exception as exc:  # a plugin's bad flags must not break the CLI
            loaded.warnings.append(f"check {chk.name!r} of plugin {plugin.name!r}: bad arguments: {exc}")
            continue
        cp.set_defaults(func=run_check, check=chk, plugin=plugin)


async def run_list(args, session) -> int:
    from cockpit.plugins.loader import load_plugins

    loaded = load_plugins()
    for warning in loaded.warnings:
        print(f"cockpit: warning: {warning}", file=sys.stderr)
    for plugin, chk in loaded.all_checks():
        print(f"{chk.name:12} {chk.description}  [{plugin.name}]")
    return 0


def make_context(session, plugin, progress=None):
    """The CheckContext a plugin gets: backend, runner, actions, its own config."""
    from cockpit.config import plugin_config
    from cockpit.plugins.api import CheckContext

    actions = None
    try:
        from cockpit.core.actions import actions_for_session

        actions = actions_for_session(session)
    except ImportError:  # the actions layer is optional for read-only checks
        actions = None
    ctx = CheckContext(
        backend=session.backend,
        config=plugin_config(session.config, plugin),
        runner=session.runner,
        actions=actions,
        read_only=session.read_only,
    )
    if progress is not None:
        ctx.progress = progress
    return ctx


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
    ctx = make_context(session, args.plugin, progress=lambda m: print(m, file=sys.stderr, flush=True))
    try:
        result = await args.check.run(ctx, args)
    except CockpitError as exc:
        print(f"cockpit: {exc}", file=sys.stderr)
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
