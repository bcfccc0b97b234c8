"""Screens and widgets reach the App only through their declared ScreenHost (issue 22):
cockpit's App is one, and a screen mounted on any other App (a Pilot test's) gets
NO_HOST, whose hooks do nothing, instead of an AttributeError or a getattr guess.
What a screen offers the App's keys (targets, copy_text, confirm_origin) is declared
by inheriting ScreenOffers, and asked by type."""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App
from textual.screen import Screen

from cockpit.backends.demo import DemoBackend
from cockpit.config import Config
from cockpit.core.actions import build_plan
from cockpit.core.joblog import JobLogError
from cockpit.models import ClusterSnapshot
from cockpit.plugins.api import ScreenOffers
from cockpit.tui.app import CockpitApp
from cockpit.tui.fleet import ClusterLink
from cockpit.tui.screens.actions import ConfirmAction
from cockpit.tui.screens.detail import JobDetailScreen
from cockpit.tui.screens.joblog import JobLogScreen
from cockpit.tui.services import NO_HOST, host_of
from cockpit.tui.widgets.views import JobsView
from tuiwait import screen_text, wait_for_text, wait_until

from .fakes import NOW, FakeBackend, small_cluster

TUI = Path(__file__).resolve().parents[2] / "cockpit" / "tui"
SCANNED = sorted((TUI / "screens").glob("*.py")) + sorted((TUI / "widgets").glob("*.py")) + [TUI / "viewing.py"]


def app_guesses(source: str) -> list[str]:
    """Each getattr/hasattr whose object is ``self.app`` or reached through it (``self.app.screen``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and node.args):
            obj = ast.unparse(node.args[0])
            if obj == "self.app" or obj.startswith("self.app."):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_screens_widgets_and_viewers_ask_the_app_through_their_host_only():
    guesses = {path.relative_to(TUI).as_posix(): app_guesses(path.read_text()) for path in SCANNED}
    assert {"screens/joblog.py", "screens/detail.py", "widgets/views.py", "viewing.py"} <= guesses.keys()
    assert {path: found for path, found in guesses.items() if found} == {}


def test_the_scan_finds_each_kind_of_guess():
    source = ("class S:\n"
              "    def a(self):\n        return getattr(self.app, 'copy_value', None)\n"
              "    def b(self):\n        return hasattr(self.app, 'viewers')\n"
              "    def c(self):\n        return getattr(self.app.screen, 'copy_text', None)\n"
              "    def d(self, other):\n        return getattr(other, 'x', None), getattr(self.application, 'y')\n")
    assert [g.split(":")[0] for g in app_guesses(source)] == ["line 3", "line 5", "line 7"]


def demo_app() -> tuple[CockpitApp, DemoBackend]:
    clock = lambda: 1_750_000_000.0  # noqa: E731
    backend = DemoBackend(seed=7, clock=clock)
    return CockpitApp(backend, clock=clock), backend


async def test_copy_on_the_job_log_screen_reaches_the_apps_clipboard():
    app, backend = demo_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("5")
        await wait_until(pilot, lambda: app.main.active_table().select_key(backend.hung_job_id), "the hung job's row")
        await pilot.press("f")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, JobLogScreen) and app.screen, "the log screen")
        assert host_of(screen) is app
        source = await wait_until(pilot, lambda: screen.source, "the output's source")
        await pilot.press("y")
        await wait_until(pilot, lambda: app.clipboard == source, "the path on the clipboard")
        assert any(n.message.startswith("copied the output path: ") for n in app._notifications)
        await pilot.press("e")  # stderr now: the crumbs say so through the host
        await wait_until(pilot, lambda: app.sub_title.endswith("stderr"), "the crumbs naming stderr")


async def test_copy_in_the_confirmation_reaches_the_apps_clipboard():
    app, _backend = demo_app()
    plan = build_plan("hold", ["101", "102"])
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(ConfirmAction(plan, "the test"))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmAction), "the confirmation")
        await pilot.press("c")
        await wait_until(pilot, lambda: app.clipboard == "\n".join(plan.describe()), "the commands on the clipboard")
        assert isinstance(app.screen, ConfirmAction)  # copying answers nothing


class Offering(ScreenOffers, Screen):
    """A plugin's screen, say: it declares what ``y`` copies without importing cockpit.tui."""

    def copy_text(self) -> tuple[str, str] | None:
        return "srun --jobid=101 hostname", "the command"


class Undeclared(Screen):
    """The same method, not declared: the App does not guess at it."""

    copy_text = Offering.copy_text


async def test_y_copies_what_a_screen_declares_it_offers_and_guesses_at_nothing():
    app, _backend = demo_app()
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(Offering())
        await wait_until(pilot, lambda: isinstance(app.screen, Offering), "the offering screen")
        await pilot.press("y")
        await wait_until(pilot, lambda: app.clipboard == "srun --jobid=101 hostname", "its value on the clipboard")
        app.copy_to_clipboard("")
        app.push_screen(Undeclared())
        await wait_until(pilot, lambda: isinstance(app.screen, Undeclared), "the undeclared screen")
        await pilot.press("y")
        await wait_until(pilot, lambda: any(n.message.startswith("nothing to copy here") for n in app._notifications),
                         "the nothing-to-copy warning")
        assert app.clipboard == ""


class BareApp(App):
    """Any App that is not cockpit's: it has none of CockpitApp's hooks."""


async def test_the_job_log_screen_on_a_bare_app_has_no_host_and_does_not_crash():
    def refuse(job, stderr):
        raise JobLogError(f"no {'stderr' if stderr else 'stdout'} here")

    app = BareApp()
    job = small_cluster()[1][0]
    async with app.run_test(size=(100, 20)) as pilot:
        screen = JobLogScreen(job, refuse)
        app.push_screen(screen)
        await wait_for_text(pilot, "no stdout here", "the refusal")
        assert host_of(screen) is NO_HOST
        screen.source = "gpu01:/out.log"  # as if it had been found
        await pilot.press("y")  # NO_HOST copies nothing
        await pilot.press("e")  # and draws no crumbs
        await wait_for_text(pilot, "no stderr here", "the stderr refusal")
        assert app.screen is screen and app.clipboard == ""


async def test_the_confirmation_on_a_bare_app_copies_nothing_and_stays():
    app = BareApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(ConfirmAction(build_plan("hold", ["101"]), "the test"))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmAction), "the confirmation")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmAction) and app.clipboard == ""


async def test_a_job_detail_on_a_bare_app_reads_its_own_services_and_no_host():
    nodes, jobs, parts, topo = small_cluster()
    link = ClusterLink(FakeBackend(), Config(), read_only=True)
    link.snapshot = ClusterSnapshot(nodes=nodes, partitions=parts, jobs=jobs, topology=topo, fetched_at=NOW)
    app = BareApp()
    async with app.run_test(size=(140, 40)) as pilot:
        app.push_screen(JobDetailScreen(101, services=link))
        text = await wait_for_text(pilot, "llama-70b", "the job's title")
        assert "job 101" in text and "gpu01" in text
        assert "last output" not in text and "suspect" not in text  # no Pulse to say either
        app.push_screen(JobDetailScreen(999, services=link))
        await wait_for_text(pilot, "job 999: not in the queue", "its cluster's word for a job it has not seen")


class JobsHost(App):
    def compose(self):
        self.view = JobsView(lambda: NOW)
        yield self.view


async def test_a_table_view_on_a_bare_app_shows_every_column():
    app = JobsHost()
    async with app.run_test(size=(160, 20)) as pilot:
        await wait_until(pilot, lambda: app.view.is_mounted, "the mounted view")
        assert host_of(app.view) is NO_HOST
        assert app.view.table.hidden_columns == frozenset() and len(app.view.table.columns) > 5
        assert not app._notifications  # the default config names no column it lacks
