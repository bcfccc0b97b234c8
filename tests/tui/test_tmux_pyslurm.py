"""`cockpit` in a real terminal (tmux) on the pyslurm backend, against the real test cluster.

The same terminal driver as tests/tui/test_tmux_e2e.py (imported, not copied):
a private tmux server runs one cockpit for the module, configured with
``backend = "pyslurm"`` and 1 s refresh intervals. pyslurm runs no Slurm
command that a wrapper could count, so the waits here are bounded only against
a hang; each one ends as soon as the screen shows what it waits for.

The stale-banner test stops slurmctld (SIGTERM to the pid in its pid file) and
always restarts it with tests/cluster/up in a finally block.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import uuid

import pytest

from clusterlib import cancel, run, submit
from .test_tmux_e2e import (
    COCKPIT,
    NODE,
    VIEW_KEYS,
    Terminal,
    _restart_slurmctld,
    _stop_slurmctld,
    assert_no_traceback,
    header,
    row,
)

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def pyterm(cluster, tmp_path_factory):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    if os.geteuid() != 0:
        pytest.skip("needs root: drains a node and stops/restarts slurmctld")
    if not COCKPIT.exists():
        pytest.skip(f"{COCKPIT} missing: pip install -e '.[test]' into this environment")
    if importlib.util.find_spec("pyslurm") is None:
        pytest.skip("pyslurm is not installed in this venv (tests/run builds it from ../shared/vendor/pyslurm)")
    work = tmp_path_factory.mktemp("tmux-pyslurm")
    (work / "cfg" / "cockpit").mkdir(parents=True)
    (work / "cfg" / "cockpit" / "config.toml").write_text(
        '[general]\nbackend = "pyslurm"\n\n[refresh]\nnodes = 1\njobs = 1\npartitions = 5\ntopology = 30\n')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "SLURM_CONF": cluster["SLURM_CONF"],
           "XDG_CONFIG_HOME": str(work / "cfg"), "XDG_STATE_HOME": str(work / "state")}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    t = Terminal(work, env)
    t.start([str(COCKPIT)])
    try:
        t.wait(lambda s: "Pulse" in header(s) and "age" in header(s), "cockpit's Pulse view with data", 60)
        yield t
        assert_no_traceback(t.screen())
    finally:
        t.stop()


def test_the_header_names_pyslurm(pyterm):
    text = pyterm.wait(lambda s: "pyslurm" in header(s), "the source in the header", 10)
    assert "slurm-cli" not in header(text)


def test_submitted_job_appears(pyterm, cluster):
    name = f"cockpit-e2p-{uuid.uuid4().hex[:6]}"  # 18 characters: the NAME column shows them whole
    pyterm.keys("5")
    pyterm.wait(lambda s: "Jobs" in header(s), "the Jobs view")
    pyterm.keys("/")
    pyterm.keys(name, literal=True)
    pyterm.keys("Enter")
    pyterm.wait(lambda s: f"filter: {name}" in s, "the Jobs view filtered on the job name", 10)
    job_id = submit("sleep 300", job_name=name, nodes=1, time=10)
    try:
        text = pyterm.wait(lambda s: row(s, job_id) != "", f"job {job_id} on screen", 60)
        assert name in row(text, job_id)
    finally:
        cancel(job_id)
    pyterm.keys("Escape")
    pyterm.wait(lambda s: "filter:" not in s, "Esc clears the filter", 10)


def test_drained_node_changes_state_on_screen(pyterm, cluster):
    reason = f"e2e-py-{uuid.uuid4().hex[:6]}"
    pyterm.keys("2")
    pyterm.wait(lambda s: "Nodes" in header(s) and row(s, NODE), f"the Nodes view with {NODE}")
    run(["scontrol", "update", f"NodeName={NODE}", "State=DRAIN", f"Reason={reason}"])
    try:
        text = pyterm.wait(lambda s: "drain" in row(s, NODE) and reason in row(s, NODE), f"{NODE} drained")
        assert "root" in row(text, NODE)
    finally:
        run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"], check=False)
    pyterm.wait(lambda s: row(s, NODE) and "drain" not in row(s, NODE) and reason not in row(s, NODE),
                f"{NODE} resumed")


def test_stale_banner_shows_and_clears(pyterm, cluster):
    pyterm.keys("1")
    pyterm.wait(lambda s: "Pulse" in header(s) and "STALE" not in s, "fresh Pulse view")
    try:
        _stop_slurmctld()
        text = pyterm.wait(lambda s: "STALE DATA" in s, "the stale banner", timeout=90)
        assert "Cause:" in text and "slurmctld does not answer" in text, text
        for key, title in [*list(VIEW_KEYS.items())[1:], ("1", "Pulse")]:
            pyterm.keys(key)
            pyterm.wait(lambda s, t=title: t in header(s) and "STALE DATA" in s,
                        f"key {key} -> {title} view while stale", timeout=10)
    finally:
        _restart_slurmctld()
    text = pyterm.wait(lambda s: "STALE" not in s, "the stale banner to clear by itself", timeout=120)
    assert "age" in header(text) and "pyslurm" in header(text), text
