"""kbroker/app/gc_freeze.py: full collections freeze their survivors; a thaw reclaims frozen cycles.

The collector's state is the whole process's: every test uninstalls (unfreezing all) in a
``finally``, so the rest of the test process keeps the interpreter's default behaviour."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from kbroker.app.gc_freeze import GcFreeze, _freeze_after_full_collection


class Node:
    """An object that can sit in a reference cycle and be watched with a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


def _frozen_garbage_cycle() -> weakref.ref[Node]:
    """A reference cycle frozen while alive (a full collection), garbage from then on: a
    weak reference to one of its objects."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    gc.collect()
    del a, b
    return ref


def _in_a_generation(obj: object) -> bool:
    return any(o is obj for g in range(3) for o in gc.get_objects(g))


@pytest.fixture
def freeze() -> Iterator[GcFreeze]:
    loop = asyncio.new_event_loop()
    f = GcFreeze(loop, interval_s=3600)
    try:
        yield f
    finally:
        f.uninstall()
        loop.close()


def test_installing_freezes_what_is_alive_and_a_full_collection_freezes_its_survivors(freeze: GcFreeze) -> None:
    before = Node()
    freeze.install()
    assert gc.get_freeze_count() > 0
    assert gc.is_tracked(before) and not _in_a_generation(before)
    after = Node()
    assert _in_a_generation(after)
    gc.collect()
    assert not _in_a_generation(after)


def test_a_young_collection_freezes_nothing(freeze: GcFreeze) -> None:
    freeze.install()
    young = Node()
    frozen = gc.get_freeze_count()
    gc.collect(0)
    assert _in_a_generation(young)
    assert gc.get_freeze_count() <= frozen   # (a frozen object freed meanwhile leaves the count)


def test_a_frozen_cycle_is_reclaimed_only_by_a_thaw(freeze: GcFreeze) -> None:
    freeze.install()
    ref = _frozen_garbage_cycle()
    gc.collect()               # garbage, but frozen: no collection looks at it
    assert ref() is not None
    freeze.thaw()
    assert ref() is None
    assert freeze.thaws == 1
    assert gc.get_freeze_count() > 0   # the survivors of the thaw's collection are frozen again


def test_a_frozen_object_without_a_cycle_is_freed_by_its_last_reference(freeze: GcFreeze) -> None:
    obj = Node()
    ref = weakref.ref(obj)
    freeze.install()
    assert not _in_a_generation(obj)
    del obj
    assert ref() is None


def test_uninstalling_unfreezes_everything_and_stops_freezing(freeze: GcFreeze) -> None:
    freeze.install()
    ref = _frozen_garbage_cycle()
    freeze.uninstall()
    assert gc.get_freeze_count() == 0
    assert _freeze_after_full_collection not in gc.callbacks
    gc.collect()
    assert ref() is None
    assert gc.get_freeze_count() == 0


def test_the_timer_thaws_every_interval(freeze: GcFreeze) -> None:
    freeze.interval_s = 0.01
    freeze.install()
    ref = _frozen_garbage_cycle()
    gc.collect()
    assert ref() is not None   # garbage, but frozen until a thaw

    async def until_thawed() -> None:
        while freeze.thaws < 2:
            await asyncio.sleep(0.01)
    freeze.loop.run_until_complete(asyncio.wait_for(until_thawed(), 60))
    assert ref() is None


def test_kbroker_serve_freezes_unless_kbroker_gc_freeze_enable_is_false() -> None:
    from kbroker.configs.config import load_config
    assert load_config(None, [])["kbroker.gc.freeze.enable"] is True
    assert load_config(None, ["kbroker.gc.freeze.enable=false"])["kbroker.gc.freeze.enable"] is False
