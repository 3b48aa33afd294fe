"""A deleted topic's committed offsets (Kafka's GroupCoordinator.onPartitionsDeleted /
OffsetMetadataManager.onPartitionsDeleted): every group loses its committed and pending
transactional offsets of the deleted partitions, with a tombstone each in the group's own
write, so a replay of ``__consumer_offsets`` does not bring them back."""

from __future__ import annotations

from groups import GroupCoordinator
from groups.records import decode_key
from tests.unit.groups.helpers import GROUP, commit_req, fetch_req, make
from tests.unit.groups.test_txn_offsets import marker, txn_req


def committed(coord, topics: dict[str, list[int]], group: str = GROUP) -> dict[tuple[str, int], int]:
    resp = coord.offset_fetch(fetch_req(topics, group=group), 7).response
    return {(t.name, p.partition_index): p.committed_offset for t in resp.topics for p in t.partitions}


def tombstones(records) -> list[tuple[str, str, int]]:
    out = []
    for rec in records:
        assert rec.value is None
        key = decode_key(rec.key)
        out.append((key.group, key.topic, key.partition))
    return out


def test_every_groups_offsets_of_the_deleted_partitions_are_tombstoned_and_the_rest_kept():
    coord, _ = make()
    coord.offset_commit(commit_req({("t", 0): 5, ("t", 1): 7, ("u", 0): 9}), 8)
    coord.offset_commit(commit_req({("t", 1): 3}, group="other"), 8)
    r = coord.on_partitions_deleted([("t", 0), ("t", 1), ("t", 2)])
    assert r.response == 3
    assert {w.group_id: tombstones(w.records) for w in r.writes} == {
        GROUP: [(GROUP, "t", 0), (GROUP, "t", 1)], "other": [("other", "t", 1)]}
    assert committed(coord, {"t": [0, 1], "u": [0]}) == {("t", 0): -1, ("t", 1): -1, ("u", 0): 9}
    assert committed(coord, {"t": [1]}, group="other") == {("t", 1): -1}
    assert coord.log[-3:] == [rec for w in r.writes for rec in w.records]   # stored


def test_a_deleted_topic_without_committed_offsets_writes_nothing():
    coord, _ = make()
    coord.offset_commit(commit_req({("u", 0): 9}), 8)
    r = coord.on_partitions_deleted([("t", 0)])
    assert (r.response, r.writes) == (0, [])
    assert committed(coord, {"u": [0]}) == {("u", 0): 9}


def test_pending_transactional_offsets_of_a_deleted_partition_are_tombstoned_and_a_commit_marker_does_not_revive_them():
    coord, _ = make()
    coord.txn_offset_commit(txn_req({("t", 0): 10, ("u", 0): 4}), 3)
    r = coord.on_partitions_deleted([("t", 0)])
    assert [tombstones(w.records) for w in r.writes] == [[(GROUP, "t", 0)]]
    marker(coord, commit=True)
    assert committed(coord, {"t": [0], "u": [0]}) == {("t", 0): -1, ("u", 0): 4}


def test_a_coordinator_replaying_the_log_after_the_deletion_has_no_offsets_of_the_deleted_topic():
    coord, clock = make()
    coord.offset_commit(commit_req({("t", 0): 5, ("u", 0): 9}), 8)
    coord.on_partitions_deleted([("t", 0)])
    fresh = GroupCoordinator(coord.config, clock)
    fresh.begin_load()
    for rec in coord.log:
        fresh.replay(rec.key, rec.value)
    fresh.complete_load()
    assert fresh.offsets.offsets == {GROUP: {("u", 0): coord.offsets.offsets[GROUP][("u", 0)]}}
