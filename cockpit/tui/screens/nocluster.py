"""The one screen shown when ``cockpit`` finds no cluster to talk to."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Center, VerticalScroll
from textual.widgets import Footer, Static


def _cmd(command: str, what: str) -> str:
    return f"  {command:<34}{what}\n"  # under 72 cells: whole at 80 columns, padding and scrollbar included


def help_text(problem: str, config_path: str | None) -> Text:
    t = Text()
    t.append("cockpit found no Slurm cluster to talk to\n\n", style="bold")
    t.append("Why: ")
    t.append(problem + "\n\n")
    t.append("Point it at a cluster:\n", style="bold")
    t.append(_cmd("cockpit --host login.example.org", "Slurm commands on a login node (SSH)"))
    t.append(_cmd("cockpit --cluster NAME", "[clusters.NAME] of the config file:"))
    t.append("      [clusters.NAME]\n      host = \"login.example.org\"\n")
    t.append(f"  config file: {config_path or '$XDG_CONFIG_HOME/cockpit/config.toml (none found)'}\n\n")
    t.append("Or try it without Slurm:\n", style="bold")
    t.append(_cmd("cockpit --demo", "an embedded simulated cluster"))
    t.append(_cmd("cockpit --replay DIR", "what 'cockpit record DIR' saved") + "\n")
    t.append("Check the set-up with: cockpit doctor\n")
    t.append("Press q to quit.", style="dim")
    return t


class NoClusterApp(App):
    BINDINGS = [Binding("q,escape,enter", "quit", "Quit")]
    # 100%: what is longer than the terminal (a problem, a config path) wraps, never runs off
    # its edge; the lines above are under 76 cells, so at 80 columns none of them wraps
    CSS = "VerticalScroll { padding: 1 2; } Static { width: auto; max-width: 100%; }"

    def __init__(self, problem: str, config=None) -> None:
        super().__init__()
        self.problem = problem
        self.config_path = getattr(config, "path", None)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            with Center():
                yield Static(help_text(self.problem, self.config_path), id="nocluster")
        yield Footer()
