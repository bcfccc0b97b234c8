"""``cockpit node drain|resume|down|reboot|undrain NODES... [--reason TEXT | --template KEY]``,
and ``cockpit node history NODE`` (events from accounting: cockpit/commands/_nodehist.py).

NODES are hostlists (``node[01-04,07]``), expanded by ClusterShell; each node
gets its own argv so each gets its own result. drain, down and reboot need a
reason: free text used exactly as typed, or a template (``--template xid79``)
whose label is followed by ``": " + --reason`` when both are given.
``cockpit node reasons`` lists the templates. Exit codes as for ``cockpit job``.
"""

from __future__ import annotations

import argparse
from typing import Any

from cockpit.commands.job import add_action_flags, run_action
from cockpit.core.actions import REASON_TEMPLATES, make_reason

_NODE_HELP = {
    "drain": "drain nodes (State=DRAIN, reason required)",
    "resume": "resume drained or down nodes (State=RESUME)",
    "down": "set nodes down (State=DOWN, reason required)",
    "reboot": "reboot nodes once idle (scontrol reboot ASAP nextstate=resume, reason required)",
    "undrain": "clear the drain flag, e.g. after a reboot (State=UNDRAIN)",
}
_WITH_REASON = ("drain", "down", "reboot")


async def _node_action(args: argparse.Namespace, session: Any) -> int:
    params: dict[str, Any] = {}
    if args.action in _WITH_REASON:
        params["reason"] = make_reason(args.template, args.reason)
    if args.action == "reboot":
        params["nextstate"] = args.nextstate
    return await run_action(args, session, args.action, args.nodes, **params)


async def _reasons(args: argparse.Namespace, _session: Any) -> int:
    for key, label in REASON_TEMPLATES.items():
        print(f"{key:<8} {label}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    node = subparsers.add_parser("node", help="act on nodes: drain, resume, down, reboot, undrain")
    sub = node.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in _NODE_HELP.items():
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("nodes", nargs="+", metavar="NODES", help="node names or hostlists (node[01-04])")
        if name in _WITH_REASON:
            p.add_argument("-r", "--reason", help="reason, exactly as Slurm should record it (or the detail after --template)")
            p.add_argument("--template", choices=sorted(REASON_TEMPLATES), help="a common reason (see 'cockpit node reasons')")
        if name == "reboot":
            p.add_argument("--nextstate", choices=("resume", "down"), default="resume", help="state after the reboot (default resume)")
        add_action_flags(p)
        p.set_defaults(func=_node_action)
    r = sub.add_parser("reasons", help="list the reason templates")
    r.set_defaults(func=_reasons)
    from cockpit.commands._nodehist import add_parser

    add_parser(sub)  # history: events and recent jobs from accounting
