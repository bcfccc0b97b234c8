"""The audit log viewer (``A``, ``:audit``): past actions, newest first.

Reads the gate's audit log (cockpit.core.audit.read_audit: one record per step,
a "started" line without a result shown as outcome unknown) in a thread. ``/``
filters like the tables (``action:drain result:failed user:alice`` or words);
``Enter`` shows the record's exact command and Slurm's words; ``a`` offers the
follow-ups of the record under the cursor ("resume this node" after a drain,
"release" after a hold), run through the same gate as every action
(confirmed with the exact argv, refused in read-only mode, audited), and only
where it can be followed up here (:func:`follow_up_blocker`: never another
session's simulated action, never a target this cluster does not have). Records
are data: sanitized, shown as Text.
"""

from __future__ import annotations

import shlex
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from cockpit.core.filtering import compile_query
from cockpit.errors import UsageError
from cockpit.plugins.specs import ScreenOffers
from cockpit.text import clean
from cockpit.tui.rows import Column, Row, Schema, TableData, build_table
from cockpit.tui.services import ClusterBound, ClusterServices, host_of
from cockpit.tui.widgets.crumbs import Breadcrumb
from cockpit.tui.widgets.vtable import VTable

AUDIT_SCHEMA = Schema(
    fields=("time", "user", "action", "target", "result", "detail", "host"),
    columns=(Column("TIME", 19, 0, pin=True), Column("WHO", 4, 1, pin=True), Column("ACTION", 6, 2, pin=True),
             Column("TARGET", 6, 3, pin=True), Column("RESULT", 6, 4, pin=True), Column("DETAIL", 6, 5)),
    aliases={"who": "user", "operator": "user", "what": "action", "on": "target", "status": "result"},
)
# action done -> (follow-up action, its title); each one a catalogued action of the gate
FOLLOW_UPS = {"drain": ("resume", "resume this node"), "down": ("resume", "resume this node"),
              "reboot": ("resume", "resume this node"), "hold": ("release", "release this job"),
              "requeuehold": ("release", "release this job"), "resume": ("drain", "drain this node again")}
RESULT_STYLE = {"failed": "bad", "refused": "bad", "unknown": "pending", "done": "running"}


def _simulated(rec: dict[str, Any]) -> bool:
    # lines written before records carried "simulated" name the demo's executor
    return bool(rec.get("simulated")) or "simulated" in str(rec.get("executor") or "")


def follow_up_blocker(rec: dict[str, Any], session: str, simulated: bool, snap: Any) -> str:
    """Why the record's follow-up cannot be offered in this session ("" when it can).
    This session's own actions can always be followed up; another session's only when
    neither is simulated (a demo's state lives and dies with its process) and this
    cluster has the target now."""
    if session and rec.get("session") == session:
        return ""
    if _simulated(rec):
        return "a simulated action of another session (that demo's cluster is gone)"
    if simulated:
        return "an action of another session on a real cluster (this is the demo)"
    target, kind = str(rec.get("target") or ""), rec.get("kind")
    if snap is None:
        return "no cluster data yet to check the target against"
    if kind == "node" and snap.node(target) is None:
        return f"{target} is not a node of this cluster"
    if kind == "job" and not any(str(j.job_id) == target.split("_")[0] for j in snap.jobs):
        return f"job {target} is not in this cluster's queue"
    return ""


class AuditTable(VTable, inherit_bindings=False):
    """The records: moving and sorting only (no marks; the screen's keys act on the cursor row)."""

    BINDINGS = [b for b in VTable.BINDINGS if b.id not in ("table.mark", "table.unmark", "table.open")]


def record_key(rec: dict[str, Any]) -> str:
    """A key that stays with its record when newer lines are read in above it."""
    return f"{rec.get('epoch')}|{rec.get('invocation')}|{rec.get('step')}|{rec.get('target') or rec.get('targets')}"


def record_row(key: str, rec: dict[str, Any]) -> Row:
    who = str(rec.get("user") or "?") + (f" (sudo {rec['sudo_user']})" if rec.get("sudo_user") else "")
    target = rec.get("target") or ",".join(map(str, rec.get("targets") or ()))
    params = rec.get("params") or {}
    detail = rec.get("error") or rec.get("output") or params.get("reason") or ""
    when = str(rec.get("time") or "")[:19].replace("T", " ")
    result = str(rec.get("result") or "")
    if rec.get("dry_run"):
        result = "dry-run"
    values = (when, who, str(rec.get("action") or ""), str(target), result, str(detail), str(rec.get("host") or ""))
    cells = tuple(clean(v, 200) for v in values[:6])
    return Row(key, cells, values, RESULT_STYLE.get(result, ""))


class AuditScreen(ClusterBound, ScreenOffers, Screen):
    BINDINGS = [Binding("escape,q", "back", "Back", id="audit.back"),
                Binding("slash", "filter", "Filter", id="audit.filter"),
                Binding("a", "follow_up", "Follow up", id="audit.follow-up"),
                Binding("r", "reload", "Reload", id="audit.reload"),
                Binding("y", "copy_argv", "Copy command", id="audit.copy")]
    DEFAULT_CSS = """
    AuditScreen #audit-status { height: 1; color: $text-muted; }
    AuditScreen VTable { height: 1fr; }
    AuditScreen #audit-detail { height: auto; max-height: 6; background: $panel; }
    AuditScreen Input { height: 1; border: none; padding: 0 1; display: none; }
    AuditScreen Input.-open { display: block; }
    """
    crumb = "audit log"

    def __init__(self, path: str, *, services: ClusterServices, session: str = "", simulated: bool = False) -> None:
        """``services``: the cluster whose gate writes ``path``: a follow-up is judged against
        its snapshot and runs through its gate; ``session``: the id that gate writes
        (cockpit.core.audit.AuditLog.session)."""
        super().__init__()
        self.bind_services(services)
        self.path = path
        self.session, self.simulated = session, simulated
        self.records: list[dict[str, Any]] = []
        self.by_key: dict[str, dict[str, Any]] = {}
        self.query_text = ""
        self.table = AuditTable(AUDIT_SCHEMA.columns, target_kind="", id="audit-table")
        self.table.notify_cursor = True

    def compose(self) -> ComposeResult:
        yield Breadcrumb()
        yield Static("", id="audit-status")
        yield self.table
        yield Static("", id="audit-detail")
        yield Input(placeholder="filter: action:drain result:failed user:alice target:dgx013 or words (esc clears)",
                    id="audit-filter")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.table.focus()

    def on_screen_resume(self) -> None:
        self.action_reload()  # shown, or back from a follow-up's dialogs: its lines are in the log now

    # -- data -----------------------------------------------------------
    def action_reload(self) -> None:
        self._read()

    @work(thread=True, exclusive=True, group="audit", description="read the audit log")
    def _read(self) -> None:
        from cockpit.core.audit import read_audit

        try:
            records, problem = read_audit(self.path), ""
        except FileNotFoundError:
            records, problem = [], f"no actions yet ({self.path} does not exist)"
        except (OSError, ValueError) as exc:
            records, problem = [], f"cannot read {self.path}: {exc}"
        records.sort(key=lambda r: r.get("epoch") or 0, reverse=True)
        try:
            self.app.call_from_thread(self._show, records, problem)
        except RuntimeError:  # the app quit while reading
            pass

    def _show(self, records: list[dict[str, Any]], problem: str) -> None:
        self.records = records
        self.by_key = {record_key(r): r for r in records}
        self._apply_filter()
        status = Text(f" {len(self.table.data.order)} of {len(records)} record(s) from {clean(self.path, 120)}",
                      no_wrap=True, overflow="ellipsis")
        if self.query_text:
            status.append("  filter: ")
            status.append(self.query_text, style="bold")
        if problem:
            status = Text(" " + clean(problem, 200))
        self.query_one("#audit-status", Static).update(status)
        self._detail()

    def _apply_filter(self) -> None:
        pred = compile_query(self.query_text, AUDIT_SCHEMA.fields, AUDIT_SCHEMA.aliases)
        data: TableData = build_table([record_row(k, r) for k, r in self.by_key.items()], pred, None, False)
        self.table.set_data(data)

    def current(self) -> dict[str, Any] | None:
        key = self.table.cursor_key()
        return self.by_key.get(key) if key is not None else None

    def on_vtable_cursor_moved(self, event: VTable.CursorMoved) -> None:
        event.stop()
        self._detail()

    def _detail(self) -> None:
        rec = self.current()
        out = Text()
        if rec is not None:
            argv = rec.get("argv")
            out.append(" $ " + (shlex.join(map(str, argv)) if argv else "(no command: " + str(rec.get("result")) + ")"),
                       style="bold")
            extra = rec.get("error") or rec.get("output")
            if extra:
                out.append("\n   " + clean(extra, 400))
            follow = FOLLOW_UPS.get(str(rec.get("action")))
            if follow and rec.get("target"):
                why = self._blocker(rec)
                out.append(f"\n   a: {follow[1]} ({rec.get('target')})" if not why else f"\n   no follow-up: {why}",
                           style="dim")
        self.query_one("#audit-detail", Static).update(out)

    def _blocker(self, rec: dict[str, Any]) -> str:
        return follow_up_blocker(rec, self.session, self.simulated, self.services.snapshot)

    # -- keys -------------------------------------------------------------
    def targets(self) -> tuple[str, tuple[str, ...]]:
        rec = self.current()
        if rec is None or not rec.get("target") or rec.get("kind") not in ("job", "node"):
            return "", ()
        return str(rec["kind"]), (str(rec["target"]),)

    def copy_text(self) -> tuple[str, str] | None:
        rec = self.current()
        argv = rec.get("argv") if rec else None
        return (shlex.join(map(str, argv)), "the command") if argv else None

    def action_copy_argv(self) -> None:
        got = self.copy_text()
        if got is not None:
            host_of(self).copy_value(*got)

    def action_follow_up(self) -> None:
        rec = self.current()
        follow = FOLLOW_UPS.get(str(rec.get("action"))) if rec else None
        kind, targets = self.targets()
        if follow is None or not targets:
            self.notify("no follow-up for this record (drain/down/reboot: resume; hold: release)", severity="warning")
            return
        why = self._blocker(rec)
        if why:
            self.notify(f"no follow-up here: {clean(why, 160)}", severity="warning", markup=False)
            return
        host_of(self).start_action(self.services, kind, targets, follow[0])

    def action_filter(self) -> None:
        line = self.query_one(Input)
        line.add_class("-open")
        line.value = self.query_text
        self.set_focus(line)

    def action_back(self) -> None:
        line = self.query_one(Input)
        if line.has_class("-open"):
            line.remove_class("-open")
            self.query_text = ""
            self._show(self.records, "")
            self.table.focus()
            return
        self.app.pop_screen()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            compile_query(event.value.strip(), AUDIT_SCHEMA.fields, AUDIT_SCHEMA.aliases)
        except UsageError as exc:
            self.notify(str(exc), severity="error")
            return
        self.query_text = event.value.strip()
        event.input.remove_class("-open")
        self._show(self.records, "")
        self.table.focus()
