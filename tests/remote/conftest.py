"""Fixtures: a farm of throwaway real sshd servers and SshSettings pointing at it."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from cockpit.remote.settings import SshSettings
from sshdlib import SshdFarm, available


@pytest.fixture(scope="module")
def sshd_farm(tmp_path_factory):
    why = available()
    if why:
        pytest.skip(why)
    farm = SshdFarm(tmp_path_factory.mktemp("sshd")).setup(5)
    try:
        yield farm
    finally:
        farm.teardown()


@pytest.fixture
def farm_settings(sshd_farm) -> SshSettings:
    return SshSettings(
        config_file=str(sshd_farm.ssh_config),
        connect_timeout=3.0,
        command_timeout=4.0,
        keepalive_interval=1.0,
        fanout_window=64,
    )


def _read_env_sh(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        m = re.match(r"export (\w+)=(.*)$", line.strip())
        if m:
            env[m.group(1)] = shlex.split(m.group(2))[0] if m.group(2) else ""
    return env


@pytest.fixture(scope="module")
def cluster_env(request) -> dict[str, str]:
    """The test cluster's env.sh values: the shared ``cluster`` fixture when the
    suite has one (tests/clusterlib.py), else read directly; skips when not up."""
    try:
        return dict(request.getfixturevalue("cluster"))
    except pytest.FixtureLookupError:
        pass
    env_sh = Path(os.environ.get("COCKPIT_TEST_CLUSTER_RUN", "/run/cockpit-cluster")) / "env.sh"
    if not env_sh.is_file():
        pytest.skip(f"test cluster not up ({env_sh} missing): run tests/cluster/up")
    env = _read_env_sh(env_sh)
    pid = Path(env["COCKPIT_TEST_CLUSTER_RUN"], "pids", "head.sshd.pid")
    if not pid.is_file() or not Path("/proc", pid.read_text().strip()).exists():
        pytest.skip("test cluster's sshd for head is not running: run tests/cluster/up")
    return env


@pytest.fixture
def cluster_settings(cluster_env) -> SshSettings:
    return SshSettings(
        config_file=cluster_env["COCKPIT_TEST_SSH_CONFIG"],
        connect_timeout=3.0,
        command_timeout=5.0,
        keepalive_interval=2.0,
    )
