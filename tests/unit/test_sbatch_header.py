"""The #SBATCH lines every plugin job shares (cockpit.core.sbatch, through the facade)."""

import pytest

from cockpit.errors import UsageError
from cockpit.plugins.api import TERMINAL_STATES, Placement, sbatch_header


def test_a_node_list_or_a_count_in_a_partition_or_reservation():
    assert Placement(("n1", "n2")).count == 2 and Placement(("n1", "n2")).where == "n[1-2]"
    assert Placement((), "gpu", None, 4).directives() == ["--nodes=4", "--partition=gpu"]
    assert Placement((), None, "maint").where == "reservation maint" and Placement().where == "?"
    assert Placement((), "gpu", "maint").where == "partition gpu"


def test_header_order_and_options():
    lines = sbatch_header("job", Placement(("n1",)), "/o/%j.out", "00:05:00", True,
                          tasks_per_node=8, gpus_per_node=8)
    assert lines == ["#!/bin/bash", "#SBATCH --job-name=job", "#SBATCH --nodes=1", "#SBATCH --nodelist=n1",
                     "#SBATCH --ntasks-per-node=8", "#SBATCH --gpus-per-node=8", "#SBATCH --exclusive",
                     "#SBATCH --time=00:05:00", "#SBATCH --output=/o/%j.out"]
    plain = sbatch_header("job", Placement((), "p"), "/o", "1", False)
    assert "#SBATCH --ntasks-per-node=1" in plain and not any("gpus" in x or "exclusive" in x for x in plain)


@pytest.mark.parametrize("field", ["name", "output", "time_limit", "partition"])
def test_a_value_that_would_add_a_directive_is_refused(field):
    args = {"name": "j", "output": "/o", "time_limit": "1", "partition": "p"}
    args[field] = "x\n#SBATCH --uid=0"
    with pytest.raises(UsageError, match="bad "):
        sbatch_header(args["name"], Placement((), args["partition"]), args["output"], args["time_limit"], False)


def test_terminal_states_include_gone():
    assert {"COMPLETED", "NODE_FAIL", "DEADLINE", "GONE"} <= TERMINAL_STATES and "RUNNING" not in TERMINAL_STATES
