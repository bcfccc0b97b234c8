"""cockpit.hostlist: expansion through ClusterShell, and the bound it checks first."""

from __future__ import annotations

import pytest
from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit import hostlist
from cockpit.errors import UsageError


@pytest.mark.parametrize("text,names", [
    ("node01", ("node01",)),
    ("node[01-03,07]", ("node01", "node02", "node03", "node07")),
    ("rack[1-2]n[1-2]", ("rack1n1", "rack1n2", "rack2n1", "rack2n2")),
    ("n[1-5/2],x", ("n1", "n3", "n5", "x")),
    ("", ()),
    (None, ()),
    ("(null)", ()),
])
def test_expand(text, names):
    assert hostlist.expand(text) == names


@pytest.mark.parametrize("text", [
    "node[1-99999999]",
    "n[0-99999999999999999999999]",
    "a[1-400]b[1-400]",  # brackets of one pattern multiply
    "a[1-50000],b[1-50001]",  # patterns add
    "a[1-50000]!b[1-50001]",  # set operands are built before the operator
    "n9999[1-99999]",  # NodeSet reads this as n[99991-999999999]
    pytest.param("n[" + "1-99," * 2000 + "1]", id="2000-ranges"),
])
def test_a_hostlist_over_the_limit_is_refused_before_it_is_expanded(text, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("NodeSet was asked to expand it")

    monkeypatch.setattr(hostlist, "NodeSet", never)
    with pytest.raises(UsageError, match="bad hostlist .*more than 100,000 names") as err:
        hostlist.expand(text)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_the_limit_itself_is_allowed(monkeypatch):
    monkeypatch.setattr(hostlist, "MAX_NAMES", 100)
    assert len(hostlist.expand("n[1-100]")) == 100
    assert len(hostlist.expand("a[1-10]b[1-10]")) == 100
    with pytest.raises(UsageError, match=r"'n\[1-101\]'"):
        hostlist.expand("n[1-101]")


def test_a_bad_hostlist_is_one_line_naming_it():
    with pytest.raises(UsageError, match=r"bad hostlist 'node\['"):
        hostlist.expand("node[")
    # digits past int()'s 4,300-digit limit next to a bracket: counted, and still one line
    with pytest.raises(UsageError, match=r"bad hostlist 'n1111"):
        hostlist.expand("n" + "1" * 4400 + "[1-2]")


# Pieces that exercise NodeSet's odd corners: steps, padding, negative numbers, digits
# touching a bracket (n1[1-20] is n11..n120), set operators, spaces, int()'s underscores.
PIECE = st.sampled_from([*"ab01-,[]/ !&^+_", "[1-30]", "[0-9/2]", "[1-5,7]", "[ 1 - 20 ]", "[01-10]",
                         "[-3-2]", "[-8--4]", "[-5]", "1[1-20]", "9[1-9,10-30]", "[1_0-2_0]"])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECE, max_size=16).map("".join))
def test_the_count_never_falls_short_of_what_nodeset_expands(text):
    try:
        real = len(NodeSet(text, resolver=RESOLVER_NOGROUP))
    except Exception:  # noqa: BLE001 - NodeSet refuses it: nothing to bound
        return
    assert hostlist._count(text) >= min(real, hostlist.MAX_NAMES + 1)
