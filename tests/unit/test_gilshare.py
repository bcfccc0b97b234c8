"""cockpit.tui.gilshare: the sliced passes give exactly what the one-call forms give
(every length around the slice size), and no C call takes more than SLICE items."""

from __future__ import annotations

import itertools

import pytest

from cockpit.tui import gilshare


@pytest.fixture()
def small_slices(monkeypatch):
    monkeypatch.setattr(gilshare, "SLICE", 4)
    sizes = []
    real = itertools.islice

    def counting(it, n):  # every C call of the module takes its items through one islice
        sizes.append(n)
        return real(it, n)

    monkeypatch.setattr(gilshare, "islice", counting)
    return sizes


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 8, 9, 17])
def test_the_sliced_passes_equal_the_plain_ones(small_slices, n):
    items = [(i * 7) % 5 + 100 * i for i in range(n)]
    assert gilshare.mapped(str, items) == list(map(str, items))
    assert gilshare.mapped(str, iter(items)) == list(map(str, items))  # an iterator, not a sequence
    assert gilshare.key_set(items + items[:3]) == set(items)
    present = set(items[::2])
    assert gilshare.missing_from(items, present) == [k for k in items if k not in present]
    assert gilshare.missing_from({k: None for k in items}, set()) == items  # a dict's keys, in order
    assert small_slices and max(small_slices) == 4


def test_a_long_pass_is_many_calls(small_slices):
    gilshare.mapped(abs, range(40))
    assert small_slices.count(4) >= 10
