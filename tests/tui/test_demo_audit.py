"""The demo writes its own audit file, never the site's, and the audit viewer offers a
follow-up only where it can be followed up here (issue 25, item 7: a demo drain went
to the site's audit.jsonl, and a later session offered "resume dgx006" from it)."""

from __future__ import annotations

import json

from cockpit.backends.demo import DemoBackend
from cockpit.config import Config, General
from cockpit.core.actions import actions_for_backend, yes_policy
from cockpit.core.audit import read_audit
from cockpit.tui.app import CockpitApp
from cockpit.tui.screens.actions import ActionMenu
from cockpit.tui.screens.audit import AuditScreen, follow_up_blocker

from tuiwait import wait_for_text, wait_until

from .test_pilot import settle

SITE_LINE = '{"action": "drain", "target": "gpu01", "result": "done"}\n'


def _config(tmp_path) -> Config:
    return Config(general=General(audit_log=str(tmp_path / "site" / "audit.jsonl"),
                                  demo_audit_log=str(tmp_path / "demo-audit.jsonl")))


def _site(tmp_path):
    site = tmp_path / "site" / "audit.jsonl"
    site.parent.mkdir()
    site.write_text(SITE_LINE)
    return site


async def test_a_demo_drain_leaves_the_site_audit_log_untouched(tmp_path):
    site = _site(tmp_path)
    backend = DemoBackend(seed=7)
    gate = actions_for_backend(backend, _config(tmp_path), read_only=False, confirm=yes_policy(True))
    out = await gate.run("drain", ["dgx006"], reason="demo drain")
    assert out.ok
    assert site.read_text() == SITE_LINE  # not one byte more
    (rec,) = read_audit(tmp_path / "demo-audit.jsonl")
    assert (rec["action"], rec["target"], rec["simulated"]) == ("drain", "dgx006", True)
    assert rec["session"] == gate.audit.session


def test_follow_ups_only_where_they_can_be_followed_up_here():
    from cockpit.models import ClusterSnapshot, Node

    snap = ClusterSnapshot(nodes=(Node(name="gpu01", state="idle"),))
    mine = {"session": "s1", "kind": "node", "target": "dgx006", "simulated": True}
    old_demo = {"session": "s0", "kind": "node", "target": "dgx006", "simulated": True}
    old_demo_v1 = {"kind": "node", "target": "dgx006", "executor": "demo (simulated)"}  # before "simulated"
    real = {"session": "s0", "kind": "node", "target": "gpu01", "simulated": False}
    assert follow_up_blocker(mine, "s1", True, snap) == ""
    assert "simulated action of another session" in follow_up_blocker(old_demo, "s1", True, snap)
    assert "simulated action of another session" in follow_up_blocker(old_demo_v1, "s2", False, snap)
    assert "this is the demo" in follow_up_blocker(real, "s1", True, snap)
    assert follow_up_blocker(real, "s1", False, snap) == ""
    assert "not a node of this cluster" in follow_up_blocker(dict(real, target="gpu99"), "s1", False, snap)


async def test_the_viewer_refuses_an_earlier_demo_sessions_resume(tmp_path):
    """A drain of dgx006 by an earlier demo session, in the demo's file: shown, never followed up."""
    earlier = {"time": "2026-12-01T03:00:00+0000", "epoch": 1.0, "user": "op", "action": "drain",
               "kind": "node", "target": "dgx006", "targets": ["dgx006"], "argv": ["scontrol", "update"],
               "result": "done", "session": "earlier", "simulated": True, "invocation": "i", "step": 0}
    (tmp_path / "demo-audit.jsonl").write_text(json.dumps(earlier) + "\n")
    app = CockpitApp(DemoBackend(seed=7), _config(tmp_path))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("A")
        await wait_until(pilot, lambda: isinstance(app.screen, AuditScreen), "the audit viewer")
        text = await wait_for_text(pilot, "no follow-up: a simulated action of another session")
        assert "a: resume this node" not in text
        await pilot.press("a")
        await wait_until(pilot, lambda: any("no follow-up here" in str(n.message) for n in app._notifications),
                         "the refusal")
        assert not isinstance(app.screen, ActionMenu)
