"""Shared pytest fixtures. Keep this file small: helpers live in tests/clusterlib.py."""

import pytest

from clusterlib import require_cluster


@pytest.fixture(scope="session")
def cluster() -> dict[str, str]:
    """The running Slurm test cluster's env.sh variables; skips the test when it is not up."""
    return require_cluster()
