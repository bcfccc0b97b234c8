"""The 3 AM path on the real Slurm test cluster, in a real terminal (tmux), from a
cold start, at 80x24 and 160x48 (issue 25).

A real hung job (the one the runbook's cluster test makes: two torch ranks on two
nodes, rank 1 asleep before the all_reduce, rank 0 blocked in it) is the Pulse's
first suspect once its output is silent; then ``w`` (the hung-job runbook names
the straggler), ``x`` (act), ``n`` (no USR1 dump), ``y`` (drain the straggler's
node), ``y`` (requeue the job without it): 5 keys. Slurm is read back. The test
cancels its job and resumes the node whatever happens (under the heavy lock, as
every cluster test).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from clusterlib import cancel, parse_scontrol, run, wait_for
from tuiwait import runbook_step

from .test_tmux_e2e import COCKPIT, Terminal

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
KEYS = ("w", "x", "n", "y", "y")  # the whole path, counted
_spec = importlib.util.spec_from_file_location("runbook_cluster", ROOT / "tests" / "plugins" / "test_runbook_cluster.py")
hung = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hung)  # its hung job, its requirements: one recipe for both tests


def flat(screen: str) -> str:
    """The screen's words on one line: a result line wrapped at 80 columns still reads as one."""
    return " ".join(screen.split())


def _config(work: Path, cluster: dict[str, str]) -> None:
    spy = hung.PY_SPY if hung.PY_SPY.exists() else Path(shutil.which("py-spy"))
    (work / "cfg" / "cockpit").mkdir(parents=True)
    (work / "cfg" / "cockpit" / "config.toml").write_text(
        '[general]\nbackend = "slurm-cli"\n\n'
        "[refresh]\nnodes = 1\njobs = 1\npartitions = 5\ntopology = 30\n\n"
        "[tui]\nwatch_output = 5\nsilent_after = 5\n\n"
        f'[ssh]\nconfig_file = "{cluster["COCKPIT_TEST_SSH_CONFIG"]}"\n'
        f'known_hosts = "{cluster["COCKPIT_TEST_SSH_KNOWN_HOSTS"]}"\ncommand_timeout = 60.0\n\n'
        f'[plugins.runbooks]\npy_spy = "{spy}"\nstale_after_s = 4\n')


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_3am_path_on_the_real_cluster_in_five_keys(cluster, tmp_path, size):
    hung._requirements()
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    if not COCKPIT.exists():
        pytest.skip(f"{COCKPIT} missing: pip install -e '.[test]' into this environment")
    work = tmp_path / "term"
    _config(work, cluster)
    name = f"cockpit-3am-{uuid.uuid4().hex[:6]}"
    out = Path("/tmp") / f"{name}.out"
    job = hung._submit_hung(cluster, tmp_path, name, out)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "SLURM_CONF": cluster["SLURM_CONF"], "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "XDG_CONFIG_HOME": str(work / "cfg"), "XDG_STATE_HOME": str(work / "state")}
    term, straggler = Terminal(work, env), None
    try:
        text = wait_for(lambda: hung._ready_text(out), timeout=180, interval=1)
        straggler = next(line.split()[3] for line in text.splitlines() if line.startswith("rank 1 on"))
        term.tmux("new-session", "-d", "-s", "e2e", "-x", str(size[0]), "-y", str(size[1]), "--", str(COCKPIT))
        # cold start: the hung job, silent, is the first suspect and has the cursor
        term.wait(lambda s: "SUSPECT JOBS" in s and job in s, "the hung job among the Pulse's suspects", timeout=90)
        term.keys(KEYS[0])
        term.wait(lambda s: "Result:" in s and "requeue: proposed" in flat(s), "the runbook's proposal", timeout=180)
        term.keys(KEYS[1])
        term.wait(lambda s: runbook_step("hung-job", "dump") in s, "the USR1 dump's confirmation, its step named", timeout=180)
        term.keys(KEYS[2])
        term.wait(lambda s: runbook_step("hung-job", "drain-straggler") in s and straggler in s, "the drain's confirmation", timeout=60)
        term.keys(KEYS[3])
        term.wait(lambda s: runbook_step("hung-job", "requeue") in s, "the requeue's confirmation", timeout=60)
        term.keys(KEYS[4])
        screen = flat(term.wait(lambda s: "requeue: done" in flat(s), "the result after the last step", timeout=120))
        assert "drain-straggler: done" in screen and "dump: declined" in screen
        node = parse_scontrol(run(["scontrol", "show", "node", straggler]).stdout)
        assert "DRAIN" in node["State"] and node["Reason"].startswith(f"hung job {job}: straggler rank 1")
        info = hung._job(job)
        assert info["Restarts"] == "1" and straggler in run(["scontrol", "show", "hostnames", info["ExcNodeList"]]).stdout
    finally:
        term.stop()
        try:
            cancel(job)
        finally:
            if straggler:
                subprocess.run(["scontrol", "update", f"NodeName={straggler}", "State=RESUME"], check=False,
                               capture_output=True)
            out.unlink(missing_ok=True)
