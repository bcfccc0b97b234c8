"""The poller's heap settling (cockpit.core.poller.settle_heap) frees cyclic
garbage instead of freezing it, and freezes what is alive."""

from __future__ import annotations

import gc
import weakref

from cockpit.core.poller import settle_heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_old_cyclic_garbage_is_freed_not_frozen():
    a, b = Node(), Node()
    a.other, b.other = b, a
    gc.collect(0)  # the pair survives a young collection: it is in an older generation now
    gone = weakref.ref(a)
    del a, b  # unreachable, but only a collection of its generation frees it
    settle_heap()
    assert gone() is None, "cyclic garbage older than generation 0 was frozen, not freed"


def test_what_is_alive_is_frozen():
    keep = Node()
    keep.other = keep
    assert any(o is keep for o in gc.get_objects())
    settle_heap()  # alive: frozen, so no later collection walks it
    assert not any(o is keep for o in gc.get_objects()) and keep.other is keep
