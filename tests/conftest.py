"""Shared pytest fixtures. Keep this file small: helpers live in tests/clusterlib.py."""

import pytest
from hypothesis import settings

from clusterlib import require_cluster

# tests/run (CI) passes --hypothesis-profile=ci: the same examples on every run, derived from
# each test's name, so a CI run fails for the change it tests, never for a new draw. A plain
# `pytest` keeps the default profile, which draws afresh each run and finds what CI does not
# (two record-isolation defects were found that way). The example database is left out in CI:
# a fresh clone has none, and a replayed failure from a local run would make the two differ.
settings.register_profile("ci", derandomize=True, database=None)


SERIAL_MARKS = ("cluster", "ssh", "serial")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns the marker into the group
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (tests/run: -n 2 --dist loadgroup), every test that shares the
    Slurm test cluster, its sshd, a tmux server or a loopback port runs in one group, on one
    worker, one after another, as in a serial run: they drain nodes, submit and cancel jobs,
    and start daemons on fixed addresses. A test is in that group when it has one of
    SERIAL_MARKS or uses the ``cluster`` fixture; the others (parsers, Pilot on the demo or a
    fake backend) run beside them. Without xdist the marker is inert."""
    for item in items:
        if any(item.get_closest_marker(m) for m in SERIAL_MARKS) or "cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("serial"))


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
