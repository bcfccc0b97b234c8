"""Shared pytest fixtures. Keep this file small: helpers live in tests/clusterlib.py."""

import pytest

from clusterlib import require_cluster


@pytest.fixture(scope="session")
def cluster() -> dict[str, str]:
    """The running Slurm test cluster's env.sh variables; skips the test when it is not up."""
    return require_cluster()


@pytest.fixture(autouse=True)
def _thaw_between_tests():
    """The poller freezes the heap (cockpit.core.poller.settle_heap). In one app that is one
    event loop for the process's life; pytest runs a loop per test, and what a finished
    test froze (its loop's tasks and coroutines) must not first be collected inside the
    next test's loop, by a thaw there: in test_poller.py that left a wait_for waiting for
    good. So a test that froze something is thawed and collected after it, outside any loop."""
    yield
    import gc

    if gc.get_freeze_count():
        from cockpit.core import poller

        gc.unfreeze()
        gc.collect()
        poller.reset_heap_settling()
