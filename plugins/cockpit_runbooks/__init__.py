"""cockpit plugin: runbooks that walk an operator through hung jobs, NCCL
timeouts and hardware faults.

Runbooks are TOML data (bundled in ``runbooks/``, site ones in
``$XDG_CONFIG_HOME/cockpit/runbooks``); probes and the engine import no
Textual. ``cockpit runbook list|run`` is the headless entry point; the TUI
imports :mod:`cockpit_runbooks.screen`.
"""

from __future__ import annotations

from pathlib import Path

from cockpit.plugins.api import ConfigKey, KeySpec, Plugin

from .opening import OPENERS
from .model import BUNDLED_DIR, LoadProblem, Runbook, load_all
from .schedcheck import SchedulerCheck

CONFIG = {
    "dump_signal": ConfigKey(str, "USR1", "signal asking a hung job for a flight-recorder dump"),
    "stale_after_s": ConfigKey((int, float), 600, "a running job silent this long is not progressing"),
    "py_spy": ConfigKey(str, "py-spy", "py-spy program on the nodes (name on PATH or absolute path)"),
    "process_match": ConfigKey(str, "python", "a rank's process command line contains this"),
    "temp_warn_c": ConfigKey((int, float), 85.0, "GPU temperature that raises a WARN"),
    "ib_expected_rate_gbps": ConfigKey((int, float), 0.0, "expected IB port rate; 0 = do not judge the rate"),
    "ib_counter_interval_s": ConfigKey((int, float), 5.0, "seconds between the two IB counter reads"),
}


def site_dir() -> Path:
    """$XDG_CONFIG_HOME/cockpit/runbooks: where a site adds its own runbooks."""
    from cockpit.plugins.api import config_home

    return config_home() / "runbooks"


def load_runbooks(extra_dirs: tuple[Path, ...] = ()) -> tuple[dict[str, Runbook], list[LoadProblem]]:
    """Bundled runbooks, then site ones (which may replace a bundled name).

    Never raises for a bad file: it is returned as a LoadProblem."""
    from .engine import PROBES, action_names

    dirs = [(BUNDLED_DIR, "bundled"), (site_dir(), "site"), *((d, "site") for d in extra_dirs)]
    return load_all(dirs, PROBES, action_names())


plugin = Plugin(
    name="runbooks",
    description="Runbooks for hung jobs, NCCL timeouts and GPU/IB/PCIe faults: evidence, findings, actions",
    checks=(SchedulerCheck(),),
    screens={"runbook": "cockpit_runbooks.screen:RunbookScreen"},
    commands={"Runbook: why is this job stuck?": "runbook"},
    keys=(KeySpec("w", "plugin.why", "Why stuck?",
                  "why is this stuck? job: hung-job runbook; node or GPU row: gpu-xid runbook "
                  "(x on the runbook screen runs it again doing its proposed actions, each confirmed)",
                  "why", footer=True),),
    openers=OPENERS,
    config=CONFIG,
    actions=("signal", "drain", "reboot", "runbooks.requeue-exclude", "resume"),
)

__all__ = ["plugin", "load_runbooks", "site_dir", "CONFIG"]
