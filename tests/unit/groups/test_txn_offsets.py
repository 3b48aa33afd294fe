"""TxnOffsetCommit: offsets pending until the transaction's marker, require_stable,
validation, append errors, and replay of transactional batches and control records."""

from groups import GroupConfig, GroupCoordinator
from groups.records import offset_commit_record
from log.clock import ManualClock
from tests.unit.groups.helpers import GROUP, commit_req, make, stable_group
from wire.error_codes import ErrorCode
from wire.messages import (
    DeleteGroupsRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)

E = ErrorCode
PID, EPOCH = 4000, 3


def txn_req(offsets: dict[tuple[str, int], int], *, group: str = GROUP, pid: int = PID,
            epoch: int = EPOCH, generation: int = -1, member_id: str = "",
            instance_id: str | None = None, metadata: str | None = None):
    topics: dict[str, list] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_leader_epoch=5,
            committed_metadata=metadata))
    return TxnOffsetCommitRequest(
        transactional_id="tx", group_id=group, producer_id=pid, producer_epoch=epoch,
        generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=instance_id,
        topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in topics.items()])


def codes(result) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code
            for t in result.response.topics for p in t.partitions}


def fetch(coord, parts: dict[str, list[int]] | None, *, stable: bool, version: int = 7,
          group: str = GROUP) -> dict[tuple[str, int], tuple[int, int]]:
    req = OffsetFetchRequest(group_id=group, require_stable=stable, topics=None if parts is None
                             else [OffsetFetchRequest.OffsetFetchRequestTopic(
                                 name=t, partition_indexes=ps) for t, ps in parts.items()])
    resp = coord.offset_fetch(req, version).response
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code)
            for t in resp.topics for p in t.partitions}


def marker(coord, commit: bool, pid: int = PID, partitions: list[int] | None = None) -> None:
    coord.complete_txn(pid, commit, [coord.partition_for(GROUP)] if partitions is None
                       else partitions)


def test_transactional_offsets_are_written_as_a_transactional_batch_of_the_producer():
    coord, _ = make()
    r = coord.txn_offset_commit(txn_req({("t", 0): 10, ("t", 1): 20}), 3)
    assert codes(r) == {("t", 0): 0, ("t", 1): 0}
    [write] = r.writes
    assert (write.producer_id, write.producer_epoch) == (PID, EPOCH)
    assert write.records == [
        offset_commit_record(GROUP, "t", p, offset=o, leader_epoch=5, metadata="",
                             commit_timestamp_ms=1_000_000, expire_timestamp_ms=None)
        for p, o in ((0, 10), (1, 20))]


def test_offsets_stay_invisible_until_the_commit_marker_and_require_stable_says_unstable():
    coord, _ = make()
    coord.offset_commit(commit_req({("t", 0): 3}), 8)
    coord.txn_offset_commit(txn_req({("t", 0): 10, ("t", 1): 20}), 3)
    parts = {"t": [0, 1, 2]}
    assert fetch(coord, parts, stable=False) == {("t", 0): (3, 0), ("t", 1): (-1, 0),
                                                 ("t", 2): (-1, 0)}
    assert fetch(coord, parts, stable=True) == {("t", 0): (-1, 88), ("t", 1): (-1, 88),
                                                ("t", 2): (-1, 0)}
    # before v7 there is no require_stable: the committed offsets are answered
    assert fetch(coord, parts, stable=True, version=6)[("t", 0)] == (3, 0)
    marker(coord, commit=True)
    assert fetch(coord, parts, stable=True) == {("t", 0): (10, 0), ("t", 1): (20, 0),
                                                ("t", 2): (-1, 0)}


def test_fetch_of_all_offsets_marks_partitions_with_pending_offsets_unstable():
    coord, _ = make()
    coord.offset_commit(commit_req({("t", 0): 3, ("u", 0): 4}), 8)
    coord.txn_offset_commit(txn_req({("t", 0): 10}), 3)
    assert fetch(coord, None, stable=True) == {("t", 0): (-1, 88), ("u", 0): (4, 0)}
    req = OffsetFetchRequest(require_stable=True, groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id=GROUP, topics=None)])
    [group] = coord.offset_fetch(req, 8).response.groups
    assert {(t.name, p.partition_index): (p.committed_offset, p.error_code)
            for t in group.topics for p in t.partitions} == {("t", 0): (-1, 88), ("u", 0): (4, 0)}


def test_an_abort_marker_drops_the_pending_offsets_and_keeps_the_committed_ones():
    coord, _ = make()
    coord.offset_commit(commit_req({("t", 0): 3}), 8)
    coord.txn_offset_commit(txn_req({("t", 0): 10, ("t", 1): 20}), 3)
    marker(coord, commit=False)
    assert fetch(coord, {"t": [0, 1]}, stable=True) == {("t", 0): (3, 0), ("t", 1): (-1, 0)}


def test_a_regular_commit_written_after_the_transactional_one_is_kept_at_commit():
    coord, _ = make()
    coord.txn_offset_commit(txn_req({("t", 0): 10, ("t", 1): 20}), 3)
    coord.offset_commit(commit_req({("t", 0): 15}), 8)
    marker(coord, commit=True)
    assert fetch(coord, {"t": [0, 1]}, stable=True) == {("t", 0): (15, 0), ("t", 1): (20, 0)}


def test_a_marker_completes_only_its_own_producer_and_partition():
    coord, _ = make()
    coord.txn_offset_commit(txn_req({("t", 0): 10}), 3)
    coord.txn_offset_commit(txn_req({("t", 1): 20}, pid=PID + 1), 3)
    other = (coord.partition_for(GROUP) + 1) % coord.offsets_topic_partitions
    marker(coord, commit=True, partitions=[other])
    assert fetch(coord, {"t": [0, 1]}, stable=True) == {("t", 0): (-1, 88), ("t", 1): (-1, 88)}
    marker(coord, commit=True, pid=PID + 1)
    assert fetch(coord, {"t": [0, 1]}, stable=True) == {("t", 0): (-1, 88), ("t", 1): (20, 0)}


def test_a_commit_to_an_unknown_group_creates_a_simple_group_unless_it_names_a_generation():
    coord, _ = make()
    r = coord.txn_offset_commit(txn_req({("t", 0): 1}, generation=2, member_id="m"), 3)
    assert codes(r) == {("t", 0): E.ILLEGAL_GENERATION} and not r.writes
    assert GROUP not in coord.groups
    r = coord.txn_offset_commit(txn_req({("t", 0): 1}), 3)
    assert codes(r) == {("t", 0): 0}
    assert coord.groups[GROUP].protocol_type is None


def test_member_and_generation_are_checked_from_v3_and_a_bare_commit_is_taken_in_any_state():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock)
    cases = [
        (dict(generation=gen, member_id="ghost"), E.UNKNOWN_MEMBER_ID),
        (dict(generation=gen + 1, member_id=ids[0]), E.ILLEGAL_GENERATION),
        (dict(generation=gen, member_id=ids[0]), E.NONE),
        # no member id and generation -1: accepted although the group is Stable
        (dict(), E.NONE),
    ]
    for kw, code in cases:
        r = coord.txn_offset_commit(txn_req({("t", 0): 1}, **kw), 3)
        assert codes(r) == {("t", 0): code}, kw
    # v0-2 carry no member fields: a stale generation in the request is ignored
    r = coord.txn_offset_commit(txn_req({("t", 0): 1}, generation=gen + 7, member_id="x"), 2)
    assert codes(r) == {("t", 0): 0}


def test_a_static_member_with_another_member_id_is_fenced():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, n=1, instance_id="i-1")
    r = coord.txn_offset_commit(txn_req({("t", 0): 1}, generation=gen, member_id="other",
                                        instance_id="i-1"), 3)
    assert codes(r) == {("t", 0): E.FENCED_INSTANCE_ID}


def test_an_append_refused_by_the_log_is_every_partitions_error_and_nothing_is_pending():
    coord, _ = make()
    coord.fail_with = E.INVALID_PRODUCER_EPOCH
    r = coord.txn_offset_commit(txn_req({("t", 0): 1, ("t", 1): 2}), 3)
    assert codes(r) == {("t", 0): E.INVALID_PRODUCER_EPOCH, ("t", 1): E.INVALID_PRODUCER_EPOCH}
    coord.fail_with = E.NOT_LEADER_OR_FOLLOWER
    r = coord.txn_offset_commit(txn_req({("t", 0): 1}), 3)
    assert codes(r) == {("t", 0): E.NOT_COORDINATOR}
    coord.fail_with = None
    assert fetch(coord, {"t": [0]}, stable=True) == {("t", 0): (-1, 0)}


def test_too_large_metadata_fails_only_that_partition():
    coord, _ = make(offset_metadata_max_bytes=4)
    req = txn_req({("t", 0): 1}, metadata="12345")
    req.topics[0].partitions.append(TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
        partition_index=1, committed_offset=9, committed_metadata="ok"))
    r = coord.txn_offset_commit(req, 3)
    assert codes(r) == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): 0}


def test_loading_replays_transactional_batches_and_their_markers():
    coord, _ = make()
    coord.txn_offset_commit(txn_req({("t", 0): 10}), 3)             # committed below
    coord.txn_offset_commit(txn_req({("t", 1): 20}, pid=PID + 1), 3)  # aborted below
    coord.txn_offset_commit(txn_req({("t", 2): 30}, pid=PID + 2), 3)  # still open
    index = coord.partition_for(GROUP)
    # the log as the broker holds it: (offset, producer id or -1, key, value) and markers
    entries = [(i, [PID, PID + 1, PID + 2][i], r.key, r.value) for i, r in enumerate(coord.log)]
    fresh = GroupCoordinator(GroupConfig(), ManualClock(1_000_000))
    fresh.begin_load()
    for offset, pid, key, value in entries:
        fresh.replay(key, value, offset, pid)
    fresh.replay_end_txn(PID, True, index)
    fresh.replay_end_txn(PID + 1, False, index)
    fresh.complete_load()
    req = OffsetFetchRequest(group_id=GROUP, require_stable=True, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1, 2])])
    resp = fresh.offset_fetch(req, 7).response
    assert {(p.partition_index): (p.committed_offset, p.error_code)
            for t in resp.topics for p in t.partitions} == {0: (10, 0), 1: (-1, 0), 2: (-1, 88)}
    fresh.complete_txn(PID + 2, True, [index])
    resp = fresh.offset_fetch(req, 7).response
    assert resp.topics[0].partitions[2].committed_offset == 30


def test_expiry_keeps_offsets_with_pending_transactions_and_their_group():
    coord, clock = make(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1000)
    coord.offset_commit(commit_req({("t", 0): 3, ("u", 0): 4}), 8)
    coord.txn_offset_commit(txn_req({("t", 0): 10}), 3)
    clock.sleep(10 * 60_000)
    coord.poll()
    assert GROUP in coord.groups
    assert fetch(coord, {"t": [0], "u": [0]}, stable=False) == {("t", 0): (3, 0),
                                                                ("u", 0): (-1, 0)}
    marker(coord, commit=True)
    assert fetch(coord, {"t": [0]}, stable=True) == {("t", 0): (10, 0)}


def test_deleting_a_group_writes_tombstones_for_pending_offsets_too():
    coord, _ = make()
    coord.offset_commit(commit_req({("t", 0): 3}), 8)
    coord.txn_offset_commit(txn_req({("t", 1): 10}), 3)
    r = coord.delete_groups(DeleteGroupsRequest(groups_names=[GROUP]), 2)
    assert [g.error_code for g in r.response.results] == [0]
    tombstones = [rec for rec in r.records if rec.value is None]
    assert len(tombstones) == 3  # t-0, t-1 and the group
    marker(coord, commit=True)
    assert fetch(coord, {"t": [0, 1]}, stable=True) == {("t", 0): (-1, 0), ("t", 1): (-1, 0)}
