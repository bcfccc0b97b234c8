"""The openers and forms a plugin declares (re-exported by :mod:`cockpit.plugins.api`).

The TUI builds its keys' actions, palette entries, ``:`` commands and forms from
these declarations, so it names no plugin (bundled or not). An
:class:`OpenerSpec` says what the selection must hold, the form to fill first
(:class:`FormSpec`), the check the form's values run as flags, and the screen
that shows the result, or the plugin function (``build``) that makes the
screen from an :class:`OpenRequest`. Nothing here imports Textual.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cockpit.errors import UsageError

# What an opener's selection must hold: nothing, a job, a node (a GPU row counts as its
# node), or either of the two.
NEEDS: tuple[str, ...] = ("", "job", "node", "job-or-node")
# What a ``:`` command of an opener takes after its name (Tab completes it): nothing,
# one of the opener's choices, a node name or a job id (which then stands for the selection).
COLON_ARGS: tuple[str, ...] = ("", "choice", "node", "job")
# The cockpit screens an opener may open instead of its own for a PENDING job.
PENDING_SCREENS: tuple[str, ...] = ("", "why-pending")
# A plugin screen tells the App what it found about a job (the hung-job runbook's straggler:
# ``facts`` {"straggler_node", "straggler_rank"}, with ``job_id``) in a Textual Message declared
# ``class Facts(Message, namespace=FACTS_NAMESPACE)`` (or ``Finished``): the App's
# ``on_plugin_facts`` keeps them, and the job's detail lists that node first.
FACTS_NAMESPACE = "plugin"


class OpenRefused(UsageError):
    """Raised by an opener's ``build`` when the selection does not suit it (a node that is
    not drained): the TUI shows the message as a warning and opens nothing."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One line of a form: its value becomes the check's flag ``--NAME`` (``_`` -> ``-``)."""

    name: str
    label: str
    default: str | int = ""
    selected_nodes: bool = False  # the selected nodes (a hostlist) fill it instead of ``default``


@dataclass(frozen=True, slots=True)
class FormSpec:
    """A form the TUI shows before the opener's check runs; only filled fields are passed.

    ``title`` may name the selected job: ``{job_id}``, ``{job_name}``, ``{job_nodes}`` (its
    node count). ``prefill``: ``"module:function"``, ``async (ctx, job) -> {field: value}``,
    the starting values for a job; a CockpitError from it keeps the fields' defaults."""

    title: str
    fields: tuple[FormField, ...]
    prefill: str = ""
    submit: str = "Validate"  # the button's word


@dataclass(frozen=True, slots=True)
class Choice:
    """One thing an opener with ``choices`` can open (a runbook): ``name`` follows its ``:``
    command (Tab completes it); ``title`` and ``help`` are its palette entry."""

    name: str
    title: str
    help: str = ""


@dataclass(frozen=True, slots=True)
class OpenerSpec:
    """Something a key (``KeySpec.opener``), a palette command or a ``:`` command opens.

    An opener named like one of the plugin's screens is how that screen opens. Without
    ``build``, the plugin's ``screen`` is made as ``Screen(result)`` after a ``check``,
    else ``Screen(ctx)`` (``Screen(ctx, nodes=HOSTLIST)`` with ``with_nodes``)."""

    name: str
    title: str = ""  # its palette entry ("" for none)
    help: str = ""  # the palette entry's help, and its ``:`` command's
    needs: str = ""  # one of NEEDS: what the selection must hold
    missing: str = ""  # the warning when it does not ("" for "select a job first")
    otherwise: str = ""  # the plugin's opener to open instead when the selection lacks ``needs``
    form: FormSpec | None = None
    check: str = ""  # the plugin's check run with the form's values (``--job ID`` first for a job)
    screen: str = ""  # one of the plugin's ``screens``
    with_nodes: bool = False
    build: str = ""  # "module:function": (OpenRequest) -> the screen to show; may raise OpenRefused
    choices: str = ""  # "module:function": () -> (Choice, ...): palette entries and ``:NAME CHOICE``
    by_kind: Mapping[str, str] = field(default_factory=dict)  # selection kind -> the choice when none is named
    pending_job: str = ""  # one of PENDING_SCREENS: what a PENDING job opens instead (no choice named)
    colon: tuple[str, ...] = ()  # ``:`` command names, the first shown; the rest are aliases
    colon_arg: str = ""  # one of COLON_ARGS
    mode: str = ""  # handed on in OpenRequest.mode ("validate")


@dataclass(frozen=True)
class OpenRequest:
    """What an opener's ``build`` is handed: the plugin's CheckContext, the selection when it
    ran, the choice named (or ``by_kind``'s), and the check's result when it has a check."""

    ctx: Any  # the plugin's CheckContext
    kind: str  # the selection's kind: "job", "node", "partition" or ""
    targets: tuple[str, ...]
    job: Any = None  # the selected Job, when the selection is one
    node: Any = None  # the selected Node, when the selection is one
    choice: str = ""
    mode: str = ""
    result: Any = None  # the check's CheckResult
    values: Mapping[str, str] = field(default_factory=dict)  # the form's filled fields
    warn: Callable[[str], None] = lambda _msg: None  # a warning the TUI shows (a runbook that did not load)

    @property
    def target(self) -> str:
        return self.targets[0] if self.targets else ""


class ScreenOffers:
    """What a screen offers the App's own keys, declared by inheriting this (a plugin's screen
    too: it may not import cockpit.tui). The App asks only a screen that is one, by type:
    ``a``, ``d``, ``L`` act on or show its :meth:`targets`, ``y`` copies its :meth:`copy_text`,
    and the gate's confirmation names its :meth:`confirm_origin`. A screen overrides what it
    offers; the rest stay empty."""

    def targets(self) -> tuple[str, tuple[str, ...]]:
        """("job"|"node", keys) of what the screen shows, for the App's keys; ("", ()) for none."""
        return "", ()

    def copy_text(self) -> tuple[str, str] | None:
        """(value, what it is) for ``y`` to copy ("the command"), or None: then ``y`` copies
        the selection's job ids or node list."""
        return None

    def confirm_origin(self) -> str:
        """Which step of its own an action asked for here is (a runbook's), for the
        confirmation dialog; '' for none."""
        return ""


def spec_problem(spec: Any) -> str:
    """Why an opener declaration is unusable ('' when it is fine): the registry's warning."""
    if not isinstance(spec, OpenerSpec):
        return f"{spec!r} is not an OpenerSpec"
    if not spec.name or not isinstance(spec.name, str):
        return f"opener {spec.name!r} has no name"
    for what, value, allowed in (("needs", spec.needs, NEEDS), ("colon_arg", spec.colon_arg, COLON_ARGS),
                                 ("pending_job", spec.pending_job, PENDING_SCREENS)):
        if value not in allowed:
            return f"opener {spec.name!r}: {what} {value!r} is not one of {', '.join(map(repr, allowed))}"
    if not (spec.build or spec.screen):
        return f"opener {spec.name!r} names neither a screen nor a build function"
    if spec.form is not None and not spec.check:
        return f"opener {spec.name!r} has a form but no check to run with it"
    for path in (spec.build, spec.choices, spec.form.prefill if spec.form else ""):
        if path and not all(path.partition(":")[::2]):
            return f"opener {spec.name!r}: {path!r} is not 'module:function'"
    return ""


__all__ = ["COLON_ARGS", "FACTS_NAMESPACE", "Choice", "FormField", "FormSpec", "NEEDS", "OpenRefused", "OpenRequest", "OpenerSpec",
           "PENDING_SCREENS", "ScreenOffers", "spec_problem"]
