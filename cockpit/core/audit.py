"""The audit log: one JSON line per action per target, appended and synced.

One line per target (not per invocation) so that ``grep node07`` finds every
action ever taken on node07 and a bulk action that half failed shows exactly
which targets failed; the lines of one bulk action share an ``invocation`` id.
A refusal (read-only mode) is one line with ``result: "refused"``.

Each line is written with a single ``write`` on a descriptor opened with
``O_APPEND`` and then ``fsync``-ed, so concurrent cockpit processes do not
interleave partial lines and a crash loses at most the line being written.
Lines are ASCII (``ensure_ascii``): newlines or U+2028 in a hostile reason
can never split a record.

Every line names the ``session`` that wrote it (one id per AuditLog, i.e. per
cockpit process) and whether it acted on a ``simulated`` cluster: the audit
viewer offers a follow-up ("resume this node") only where it can be followed up
here. The demo writes its own file (``general.demo_audit_log``), never the site's.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from cockpit.errors import ConfigError
from cockpit.paths import default_audit_log, default_demo_audit_log


def operator() -> dict[str, str | None]:
    """Who acts: the login user and, under sudo, the user who ran sudo."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no $USER: record the uid
        user = f"uid={os.getuid()}"
    return {"user": user, "sudo_user": os.environ.get("SUDO_USER") or None}


class AuditLog:
    """Appends audit records to ``path``. Raises ConfigError if it cannot."""

    def __init__(self, path: str | os.PathLike[str], *, simulated: bool = False, cluster: str = "") -> None:
        self.path = Path(path).expanduser()
        self.simulated = simulated
        self.session = uuid.uuid4().hex[:12]
        self._who = operator()
        self._host = socket.gethostname()
        self._cluster = cluster  # [clusters.NAME] acted on: with several clusters, the line says which

    @classmethod
    def from_config(cls, cfg: Any, *, simulated: bool = False) -> AuditLog:
        """general.audit_log, or $XDG_STATE_HOME/cockpit/audit.jsonl; for a simulated
        cluster (the demo) general.demo_audit_log, or .../demo-audit.jsonl. Lines name
        the [clusters.NAME] in use."""
        cluster = getattr(cfg, "cluster", "")
        if simulated:
            return cls(getattr(cfg.general, "demo_audit_log", "") or default_demo_audit_log(), simulated=True,
                       cluster=cluster)
        return cls(getattr(cfg.general, "audit_log", "") or default_audit_log(), cluster=cluster)

    def check_writable(self) -> None:
        """Create the file (0600, parents 0700) and prove it can be appended to.

        Called before an action runs: an action that could leave no trace is
        not started. Raises ConfigError naming the path."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.close(fd)
        except OSError as exc:
            raise ConfigError(f"audit log {self.path} is not writable: {exc.strerror or exc}") from None

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line. Raises ConfigError if the write fails."""
        line = (json.dumps(record, ensure_ascii=True, sort_keys=True, default=str) + "\n").encode("ascii")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                written = os.write(fd, line)
                while written < len(line):  # short writes are rare on files, but possible
                    written += os.write(fd, line[written:])
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise ConfigError(f"cannot write audit log {self.path}: {exc.strerror or exc}") from None

    def _base(self, action: str) -> dict[str, Any]:
        now = time.time()
        return {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now)),
            "epoch": round(now, 3),
            **self._who,
            "host": self._host,
            **({"cluster": self._cluster} if self._cluster else {}),
            "pid": os.getpid(),
            "session": self.session,
            "simulated": self.simulated,
            "action": action,
        }

    def started(self, plan: Any, action_step: Any, *, invocation: str, executor: str = "", note: str = "",
                step: int = 0) -> None:
        """The line written before a step runs (``result: "started"``); its result line
        follows. A started line with no result after it means cockpit stopped mid-action.
        Raises ConfigError: then the step is not run."""
        rec = self._base(plan.spec.name)
        rec.update(invocation=invocation, step=step, kind=plan.spec.kind, target=action_step.target,
                   targets=list(plan.targets), argv=list(action_step.argv), params=plan.params.to_dict(),
                   executor=executor, dry_run=False, result="started")
        if note:
            rec["note"] = note
        self.append(rec)

    def record(self, plan: Any, result: Any, *, invocation: str, dry_run: bool, executor: str = "",
               stdin: str | None = None, note: str = "", step: int = 0) -> None:
        """One line for one step of a Plan (see cockpit.core.actions); ``stdin`` is the
        script a submission sent, ``note`` why cockpit acted by itself (a cleanup)."""
        rec = self._base(plan.spec.name)
        rec.update(
            invocation=invocation,
            step=step,
            kind=plan.spec.kind,
            target=result.target,
            targets=list(plan.targets),
            argv=list(result.argv),
            params=plan.params.to_dict(),
            executor=executor,
            dry_run=dry_run,
            result=result.status,
            returncode=result.returncode,
            error=None if result.ok else result.detail,
            output=result.detail if result.ok and result.detail else None,
        )
        if getattr(result, "value", ""):
            rec["value"] = result.value
        if stdin is not None:
            rec["stdin"] = stdin
        if note:
            rec["note"] = note
        self.append(rec)

    def event(self, action: str, targets: tuple[str, ...], result: str, **fields: Any) -> None:
        """One line for an action that is no Plan (a plugin launching a job from the TUI):
        what, on what, how it ended, plus JSON-able ``fields``. Raises ConfigError."""
        rec = self._base(action)
        rec.update(targets=list(targets), argv=None, dry_run=False, result=result, **fields)
        self.append(rec)

    def refusal(self, action: str, targets: tuple[str, ...], why: str) -> None:
        """One line saying an action was refused before anything ran."""
        rec = self._base(action)
        rec.update(targets=list(targets), argv=None, dry_run=False, result="refused", error=why)
        self.append(rec)


def read_audit(path: str | os.PathLike[str], *, raw: bool = False) -> list[dict[str, Any]]:
    """The audit records of a file, one per step: a step's "started" line is folded
    into its result line; a started line that no result followed stays, with
    ``result: "unknown"`` (cockpit stopped mid-action). ``raw``: every line as written.

    Raises ValueError naming the first bad line."""
    lines = []
    with open(path, encoding="ascii") as fh:
        for n, line in enumerate(fh, 1):
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not JSON: {exc}") from None
    if raw:
        return lines
    out: list[dict[str, Any]] = []
    pending: dict[tuple, int] = {}  # (invocation, step) -> index in out of its started line
    for rec in lines:
        key = (rec.get("invocation"), rec.get("step"))
        if rec.get("result") == "started":
            pending[key] = len(out)
            out.append(dict(rec, result="unknown", error="started, but no result was recorded"))
        elif key in pending and rec.get("invocation"):
            out[pending.pop(key)] = rec
        else:
            out.append(rec)
    return out
