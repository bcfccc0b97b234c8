"""Two real clusters in one cockpit, in a real terminal (tmux), issue 22: the host's test
cluster through slurm-cli, and the same Slurm through the slurmrestd backend, served by
a slurmrestd this test starts itself (as the cluster's slurmrestd user, on its own loopback port) and stops by
PID. The fleet Pulse shows both; once that slurmrestd is gone, the stale banner is for
its cluster alone while the other keeps its age fresh. The shared cluster's daemons are
never touched.

With ``COCKPIT_OTHER_ENV`` (default /run/cockpit-other/env.sh, giving SLURMRESTD_URL and
a token, COCKPIT_TEST_SLURM_JWT or SLURM_JWT) a third cluster, another Slurm release
reached through its own slurmrestd, is shown too and stays fresh; that variant is skipped,
saying why, where the file is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from clusterlib import stop_process as stop, wait_for

from .test_tmux_e2e import COCKPIT, Terminal

pytestmark = pytest.mark.cluster
OTHER_ENV = Path(os.environ.get("COCKPIT_OTHER_ENV", "/run/cockpit-other/env.sh"))
SIZE = (160, 48)
ROW = re.compile(r"^\s*(?:▸ )?\s*(cli|rest|other)\s+(ok|STALE|waiting|paused)\s+(\S+)", re.M)


def env_file(path: Path) -> dict[str, str]:
    """``export K=V`` lines of an env.sh (values unquoted), without running it."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip().strip("'\"")
    return out


def seconds(age: str) -> float:
    """``1m05s`` -> 65 (the fleet Pulse's AGE cell); ``—`` (no data yet) is infinite."""
    parts = re.findall(r"(\d+)([dhms])", age)
    if not parts:
        return float("inf")
    return sum(int(n) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def rows(screen: str) -> dict[str, tuple[str, float]]:
    return {m.group(1): (m.group(2), seconds(m.group(3))) for m in ROW.finditer(screen)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_slurmrestd(cluster: dict[str, str], port: int) -> subprocess.Popen:
    exe = shutil.which("slurmrestd") or "/usr/sbin/slurmrestd"
    plugins = ("openapi/v0.0.38,openapi/dbv0.0.38" if cluster["COCKPIT_TEST_SLURM_VERSION"].startswith("22.")
               else "openapi/slurmctld,openapi/slurmdbd")
    # SLURM_JWT=daemon: it takes each request's own token (as tests/cluster/lib-rest.sh starts the shared one)
    user = cluster.get("COCKPIT_TEST_REST_DAEMON_USER", "nobody")  # the shared slurmrestd's user (lib-rest.sh)
    proc = subprocess.Popen([exe, "-f", cluster["SLURM_CONF"], "-a", "rest_auth/jwt", "-s", plugins, "-u", user,
                             f"127.0.0.1:{port}"], env=dict(os.environ, SLURM_JWT="daemon", SLURM_CONF=cluster["SLURM_CONF"]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def listening() -> bool:
        if proc.poll() is not None:
            return True
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for(listening, timeout=30)
    assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-500:]
    return proc


def token_file(path: Path, token: str) -> Path:
    path.write_text(token + "\n")
    path.chmod(0o600)  # a token file others can read is refused
    return path


def write_config(work: Path, cluster: dict[str, str], port: int, other: dict[str, str] | None) -> Path:
    cfg = work / "fleet.toml"
    text = ("[refresh]\nnodes = 1\njobs = 1\npartitions = 5\ntopology = 30\n\n[tui]\nwatch_output = 0\n\n"
            '[clusters.cli]\nbackend = "slurm-cli"\n\n'
            f'[clusters.rest]\nbackend = "slurmrestd"\nrest_url = "http://127.0.0.1:{port}"\n'
            f'token_file = "{token_file(work / "rest.jwt", cluster["COCKPIT_TEST_SLURM_JWT"])}"\n'
            "refresh_nodes = 1\nrefresh_jobs = 1\n")
    if other is not None:
        token = other.get("COCKPIT_TEST_SLURM_JWT") or other.get("SLURM_JWT", "")
        text += (f'\n[clusters.other]\nbackend = "slurmrestd"\nrest_url = "{other["SLURMRESTD_URL"]}"\n'
                 f'token_file = "{token_file(work / "other.jwt", token)}"\n')
    cfg.write_text(text)
    return cfg


def other_cluster(variant: str) -> dict[str, str] | None:
    if variant != "with-other":
        return None
    if not OTHER_ENV.is_file():
        pytest.skip(f"no second cluster: {OTHER_ENV} is absent (COCKPIT_OTHER_ENV names another env.sh)")
    other = env_file(OTHER_ENV)
    if "SLURMRESTD_URL" not in other or not (other.get("COCKPIT_TEST_SLURM_JWT") or other.get("SLURM_JWT")):
        pytest.skip(f"{OTHER_ENV} gives no SLURMRESTD_URL and token (COCKPIT_TEST_SLURM_JWT or SLURM_JWT)")
    if not re.match(r"https?://127\.", other["SLURMRESTD_URL"]):
        pytest.skip(f"{OTHER_ENV}'s SLURMRESTD_URL is not a loopback address")
    return other


@pytest.mark.parametrize("variant", ["own-rest", "with-other"])
def test_fleet_pulse_of_two_real_clusters_and_a_stale_banner_for_one(cluster, tmp_path, variant):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    if not COCKPIT.exists():
        pytest.skip(f"{COCKPIT} missing: pip install -e '.[test]' into this environment")
    if "COCKPIT_TEST_SLURM_JWT" not in cluster or not (shutil.which("slurmrestd") or Path("/usr/sbin/slurmrestd").exists()):
        pytest.skip("the test cluster has no slurmrestd and token (tests/cluster/lib-rest.sh)")
    other = other_cluster(variant)
    work = tmp_path / "term"
    work.mkdir()
    port = free_port()
    rest = start_slurmrestd(cluster, port)
    cfg = write_config(work, cluster, port, other)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8",
           "TERM": "xterm-256color", "SLURM_CONF": cluster["SLURM_CONF"], "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "XDG_CONFIG_HOME": str(work / "cfg"), "XDG_STATE_HOME": str(work / "state")}  # no SLURM_JWT: token files
    names = {"cli", "rest"} | ({"other"} if other else set())
    term = Terminal(work, env)
    try:
        term.tmux("new-session", "-d", "-s", "e2e", "-x", str(SIZE[0]), "-y", str(SIZE[1]), "--",
                  str(COCKPIT), "--config", str(cfg), "--cluster", "all")
        # the Pulse names no node when none is drained; the header's age is a number ("age —"
        # before any data) and the node counts are drawn once the first snapshot came
        term.wait(lambda s: "⎈ cli" in s and re.search(r"age \d", s) is not None and "NODES BY STATE" in s,
                  "the main Pulse of cluster cli", timeout=90)
        term.keys("c")
        # every cluster ok, and its row drawn whole: the counts and the source come with the
        # cluster's first snapshot, a moment after its state
        screen = term.wait(lambda s: set(rows(s)) == names and all(st == "ok" for st, _ in rows(s).values())
                           and "slurm-cli" in s and f"127.0.0.1:{port}" in s,
                           "every cluster ok on the fleet Pulse, its source shown", timeout=90)
        assert "slurmrestd" in screen
        if other:
            assert other["SLURMRESTD_URL"].split("//", 1)[1] in screen
        stop(rest)  # our own slurmrestd, by PID: the rest cluster's outage
        screen = term.wait(lambda s: "STALE DATA of cluster rest" in s, "the rest cluster's stale banner", timeout=90)
        # the banner is for that cluster alone, and the others keep polling: wait until rest's
        # data is clearly old, then compare on that one screen
        screen = term.wait(lambda s: rows(s).get("rest", ("", 0))[1] >= 8, "rest's data to age", timeout=90)
        got = rows(screen)
        assert got["rest"][0] == "STALE"
        for name in names - {"rest"}:
            assert f"STALE DATA of cluster {name}" not in screen
            assert got[name][0] == "ok" and got[name][1] < got["rest"][1], got
        term.keys("Escape")
        term.wait(lambda s: "⎈ cli" in s and "stale: rest" in s, "the main header naming the stale cluster")
    finally:
        term.stop()
        stop(rest)
