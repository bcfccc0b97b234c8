"""The chroot's cluster served for the host (tests/cluster/other-debian --serve): its
env file is the owner's alone, names a loopback slurmrestd, and that slurmrestd
answers the host's cockpit with the other Slurm version's nodes and accounting.
Skips unless it is served (COCKPIT_OTHER_ENV, default /run/cockpit-other/env.sh)."""

from __future__ import annotations

import ipaddress
import os
import stat
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from clusterlib import cluster_env

pytestmark = pytest.mark.cluster
OTHER_ENV = Path(os.environ.get("COCKPIT_OTHER_ENV", "/run/cockpit-other/env.sh"))


@pytest.fixture
def other() -> dict[str, str]:
    env = cluster_env(OTHER_ENV)
    if env is None:
        pytest.skip(f"no chroot cluster served ({OTHER_ENV} missing): sudo tests/cluster/other-debian --serve")
    return env


def test_the_env_file_is_the_owners_and_names_a_loopback_slurmrestd(other):
    assert stat.S_IMODE(OTHER_ENV.stat().st_mode) == 0o600
    url = urlsplit(other["SLURMRESTD_URL"])
    assert url.scheme == "http" and ipaddress.ip_address(url.hostname).is_loopback and url.port
    assert other["COCKPIT_TEST_SLURM_JWT"].startswith("eyJ") and other["COCKPIT_TEST_SLURM_VERSION"][:2].isdigit()


async def test_the_served_cluster_answers_the_hosts_cockpit_through_rest(other):
    from cockpit.backends.accounting import JobQuery
    from cockpit.backends.rest_client import RestClient, RestSettings
    from cockpit.backends.slurmrestd import SlurmRestBackend, token_user
    from cockpit.core.accounting import require_accounting

    token = other["COCKPIT_TEST_SLURM_JWT"]
    settings = RestSettings(url=other["SLURMRESTD_URL"], user_name=token_user(token), timeout=30)
    b = SlurmRestBackend(settings, RestClient(settings, token))
    try:
        await b.open()
        snap = await b.snapshot()
        assert snap.slurm_version == other["COCKPIT_TEST_SLURM_VERSION"], snap.slurm_version
        assert sorted(n.name for n in snap.nodes) == sorted(other["COCKPIT_TEST_NODES"].split())
        if other.get("COCKPIT_TEST_ACCOUNTING") == "1":
            acct = await require_accounting(b)
            ans = await acct.jobs(JobQuery(start=int(time.time()) - 86400))
            assert ans.costs[0].command.startswith(f"GET /slurmdb/{b.dbapi}/jobs?")
    finally:
        await b.close()
