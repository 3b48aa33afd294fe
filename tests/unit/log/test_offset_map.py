"""SkimpyOffsetMap: latest offset per key in bounded memory."""

import pytest

from log.offset_map import BYTES_PER_ENTRY, SkimpyOffsetMap


def test_the_map_keeps_the_latest_offset_put_for_each_key_and_minus_one_for_unknown_keys():
    m = SkimpyOffsetMap(100 * BYTES_PER_ENTRY)
    m.put(b"a", 1)
    m.put(b"b", 2)
    m.put(b"a", 7)
    assert (m.get(b"a"), m.get(b"b"), m.get(b"c")) == (7, 2, -1)
    assert m.size == 2 and m.latest_offset == 7


def test_latest_offset_can_be_moved_past_the_last_put_and_clear_forgets_everything():
    m = SkimpyOffsetMap(10 * BYTES_PER_ENTRY)
    m.put(b"k", 3)
    m.update_latest_offset(9)
    assert m.latest_offset == 9
    m.clear()
    assert (m.size, m.latest_offset, m.get(b"k")) == (0, -1, -1)


def test_the_slot_count_comes_from_the_memory_budget_and_a_full_map_refuses_new_keys():
    m = SkimpyOffsetMap(3 * BYTES_PER_ENTRY + BYTES_PER_ENTRY // 2)
    assert m.slots == 3
    for i in range(3):
        m.put(b"k%d" % i, i)
    m.put(b"k0", 10)  # an existing key still fits
    with pytest.raises(ValueError, match="full offset map"):
        m.put(b"new", 11)
    assert m.utilization() == 1.0


def test_keys_are_stored_as_fixed_size_digests_whatever_their_length():
    m = SkimpyOffsetMap(10 * BYTES_PER_ENTRY)
    m.put(b"x" * 100_000, 5)
    assert m.get(b"x" * 100_000) == 5 and m.get(b"x" * 99_999) == -1
    assert all(len(k) == 16 for k in m._map)


def test_another_hash_algorithm_can_be_named_and_an_unknown_one_is_refused_up_front():
    m = SkimpyOffsetMap(10 * BYTES_PER_ENTRY, "sha256")
    m.put(b"a", 1)
    assert m.get(b"a") == 1
    with pytest.raises(ValueError):
        SkimpyOffsetMap(10 * BYTES_PER_ENTRY, "no-such-hash")
