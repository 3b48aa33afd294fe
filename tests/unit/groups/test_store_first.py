"""Store, then propagate: a SyncGroup assignment and committed offsets take effect only once
their __consumer_offsets records are appended; a failed append answers Kafka's mapped error
and leaves the state where the log is (GroupMetadataManager.storeGroup / storeOffsets)."""

import pytest

from groups import GroupCoordinator, GroupState
from groups.append_errors import group_metadata_error, offset_commit_error
from tests.unit.groups.helpers import (
    GROUP,
    commit_req,
    fetch_req,
    hb_req,
    join,
    join_new_member,
    make,
    stable_group,
    subscription,
    sync_req,
)
from wire.error_codes import ErrorCode as E
from wire.messages import DeleteGroupsRequest, OffsetDeleteRequest

# (append error, what SyncGroup answers, what OffsetCommit answers), as in Kafka.
MAPPED = [
    (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR, E.NOT_COORDINATOR),
    (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR, E.NOT_COORDINATOR),
    (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR, E.INVALID_COMMIT_OFFSET_SIZE),
    (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN_SERVER_ERROR, E.INVALID_COMMIT_OFFSET_SIZE),
    (E.INVALID_FETCH_SIZE, E.UNKNOWN_SERVER_ERROR, E.INVALID_COMMIT_OFFSET_SIZE),
    (E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE),  # others pass through
    (E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR),
]


@pytest.mark.parametrize(("append_error", "group_error", "offset_error"), MAPPED)
def test_append_errors_map_to_kafkas_group_and_offset_errors(append_error, group_error,
                                                             offset_error):
    assert group_metadata_error(append_error) is group_error
    assert offset_commit_error(append_error) is offset_error


def _completing_group(coord, n: int = 2):
    """``n`` members joined, generation chosen, nobody synced yet: (ids, gen, leader)."""
    pendings = [join_new_member(coord) for _ in range(n)]
    coord.poll()
    responses = [p.response for p in pendings]
    assert all(r.error_code == 0 for r in responses)
    assert coord.groups[GROUP].state is GroupState.COMPLETING_REBALANCE
    return [r.member_id for r in responses], responses[0].generation_id, responses[0].leader


@pytest.mark.parametrize(("append_error", "group_error"), [(a, g) for a, g, _ in MAPPED])
def test_a_sync_group_whose_assignment_is_not_stored_answers_every_member_the_mapped_error(
        append_error, group_error):
    coord, clock = make()
    ids, gen, leader = _completing_group(coord)
    follower = next(m for m in ids if m != leader)
    parked = coord.sync_group(sync_req(follower, gen), 5).pending
    assert not parked.done()
    coord.fail_with = append_error
    stored_before = len(coord.log)
    mine = coord.sync_group(sync_req(leader, gen, {leader: b"L", follower: b"F"}), 5).pending
    assert len(coord.log) == stored_before
    assert mine.done() and parked.done()
    assert mine.response.error_code == group_error
    assert parked.response.error_code == group_error
    assert parked.response.assignment == b"" and mine.response.assignment == b""
    group = coord.groups[GROUP]
    assert [m.assignment for m in group.members.values()] == [b"", b""]
    assert group.state is GroupState.PREPARING_REBALANCE  # Kafka rebalances again


def test_the_followers_get_no_assignment_while_the_leaders_record_is_being_appended():
    coord, clock = make()
    ids, gen, leader = _completing_group(coord)
    follower = next(m for m in ids if m != leader)
    parked = coord.sync_group(sync_req(follower, gen), 5).pending
    coord.hold()  # the append is in flight (an acks=all append waiting for replicas)
    mine = coord.sync_group(sync_req(leader, gen, {leader: b"L", follower: b"F"}), 5).pending
    group = coord.groups[GROUP]
    assert not mine.done() and not parked.done()
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert group.member(follower).assignment == b""
    assert coord.heartbeat(hb_req(follower, gen), 4).response.error_code == 0
    coord.release_held()
    assert parked.done() and parked.response.error_code == 0
    assert parked.response.assignment == b"F" and mine.response.assignment == b"L"
    assert group.state is GroupState.STABLE


def test_a_group_whose_assignment_failed_to_store_rebalances_and_then_stabilises():
    coord, clock = make()
    ids, gen, leader = _completing_group(coord)
    coord.fail_with = E.NOT_ENOUGH_REPLICAS
    coord.sync_group(sync_req(leader, gen, {m: b"x" for m in ids}), 5)
    coord.fail_with = None
    rejoins = [join(coord, m).pending for m in ids]
    assert all(p.done() and p.response.error_code == 0 for p in rejoins)
    new_gen = rejoins[0].response.generation_id
    assert new_gen == gen + 1
    new_leader = rejoins[0].response.leader
    follower = next(m for m in ids if m != new_leader)
    parked = coord.sync_group(sync_req(follower, new_gen), 5).pending
    coord.sync_group(sync_req(new_leader, new_gen, {new_leader: b"L2", follower: b"F2"}), 5)
    assert parked.response.error_code == 0 and parked.response.assignment == b"F2"
    assert coord.groups[GROUP].state is GroupState.STABLE


def test_a_late_store_outcome_for_an_older_generation_changes_nothing():
    coord, clock = make()
    ids, gen, leader = _completing_group(coord)
    coord.hold()
    mine = coord.sync_group(sync_req(leader, gen, {m: b"x" for m in ids}), 5).pending
    held = coord.held
    coord.held = None
    # A member with new metadata starts a rebalance that overtakes the store.
    rejoin = [join(coord, m, protocols=(("range", subscription("t", "u")),)).pending
              for m in ids]
    assert mine.done() and mine.response.error_code == E.REBALANCE_IN_PROGRESS
    assert all(p.done() for p in rejoin)
    new_gen = rejoin[0].response.generation_id
    coord.held = held
    coord.release_held()  # the old generation's record lands late: ignored
    group = coord.groups[GROUP]
    assert group.generation_id == new_gen and group.state is GroupState.COMPLETING_REBALANCE
    assert [m.assignment for m in group.members.values()] == [b"", b""]


@pytest.mark.parametrize(("append_error", "offset_error"), [(a, o) for a, _, o in MAPPED])
def test_an_offset_commit_that_is_not_stored_answers_the_mapped_error_and_is_not_fetched(
        append_error, offset_error):
    coord, clock = make()
    coord.fail_with = append_error
    r = coord.offset_commit(commit_req({("t", 0): 42, ("t", 1): 7}), 8).response
    assert [p.error_code for t in r.topics for p in t.partitions] == [offset_error] * 2
    fetched = coord.offset_fetch(fetch_req({"t": [0, 1]}), 7).response
    assert [p.committed_offset for t in fetched.topics for p in t.partitions] == [-1, -1]
    assert GROUP not in coord.groups  # no simple group without its offsets
    assert coord.log == []


def test_a_failed_commit_keeps_the_previously_stored_offset():
    coord, clock = make()
    coord.offset_commit(commit_req({("t", 0): 5}), 8)
    coord.fail_with = E.KAFKA_STORAGE_ERROR
    r = coord.offset_commit(commit_req({("t", 0): 6}), 8).response
    assert r.topics[0].partitions[0].error_code == E.NOT_COORDINATOR
    fetched = coord.offset_fetch(fetch_req({"t": [0]}), 7).response
    assert fetched.topics[0].partitions[0].committed_offset == 5


def test_partitions_with_metadata_too_large_keep_that_error_when_the_rest_fails_to_store():
    coord, clock = make(offset_metadata_max_bytes=4)
    coord.fail_with = E.MESSAGE_TOO_LARGE
    req = commit_req({("t", 0): 1}, metadata="ok")
    big = commit_req({("t", 1): 2}, metadata="far too long").topics[0].partitions[0]
    req.topics[0].partitions.append(big)
    r = coord.offset_commit(req, 8).response
    assert [p.error_code for p in r.topics[0].partitions] == [
        E.INVALID_COMMIT_OFFSET_SIZE, E.OFFSET_METADATA_TOO_LARGE]


def test_committed_offsets_are_not_fetched_until_their_records_are_appended():
    coord, clock = make()
    coord.hold()
    commit = coord.offset_commit(commit_req({("t", 0): 42}), 8)
    fetched = coord.offset_fetch(fetch_req({"t": [0]}), 7).response
    assert fetched.topics[0].partitions[0].committed_offset == -1
    coord.release_held()
    assert commit.response.topics[0].partitions[0].error_code == 0
    fetched = coord.offset_fetch(fetch_req({"t": [0]}), 7).response
    assert fetched.topics[0].partitions[0].committed_offset == 42


def test_a_member_commit_that_fails_to_store_answers_the_error_and_the_group_stays_stable():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    coord.fail_with = E.NOT_LEADER_OR_FOLLOWER
    r = coord.offset_commit(commit_req({("t", 0): 3}, generation=gen, member_id=ids[1]), 8)
    assert r.response.topics[0].partitions[0].error_code == E.NOT_COORDINATOR
    assert coord.groups[GROUP].state is GroupState.STABLE
    fetched = coord.offset_fetch(fetch_req({"t": [0]}), 7).response
    assert fetched.topics[0].partitions[0].committed_offset == -1


def test_a_static_member_whose_new_id_is_not_stored_keeps_its_old_id():
    coord, clock = make()
    a = join_new_member(coord, instance_id="i-a")
    b = join_new_member(coord, instance_id="i-b")
    coord.poll()
    gen = a.response.generation_id
    ida, idb = a.response.member_id, b.response.member_id
    coord.sync_group(sync_req(idb, gen, instance_id="i-b"), 5)
    coord.sync_group(sync_req(ida, gen, {ida: b"A", idb: b"B"}, instance_id="i-a"), 5)
    coord.fail_with = E.NOT_ENOUGH_REPLICAS
    p = join(coord, "", instance_id="i-b").pending  # b restarts
    assert p.done() and p.response.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert p.response.member_id == ""
    group = coord.groups[GROUP]
    assert set(group.members) == {ida, idb} and group.static_members["i-b"] == idb
    assert group.state is GroupState.STABLE and group.member(idb).assignment == b"B"
    assert coord.heartbeat(hb_req(idb, gen, instance_id="i-b"), 4).response.error_code == 0
    coord.fail_with = None
    again = join(coord, "", instance_id="i-b").pending
    assert again.response.error_code == 0 and again.response.member_id != idb


def test_replaying_the_log_after_failed_appends_rebuilds_exactly_what_was_acknowledged():
    coord, clock = make()
    acknowledged: dict[tuple[str, int], int] = {}
    ids, gen, leader = stable_group(coord, clock, 2)

    def flaky(write):  # every third write fails
        flaky.n += 1
        return E.NOT_ENOUGH_REPLICAS if flaky.n % 3 == 0 else E.NONE
    flaky.n = 0
    coord.fail_with = flaky
    for i in range(12):
        tp = ("t", i % 4)
        r = coord.offset_commit(commit_req({tp: 100 + i}, generation=gen, member_id=ids[0]), 8)
        if r.response.topics[0].partitions[0].error_code == 0:
            acknowledged[tp] = 100 + i
        clock.advance(10)
    # A rebalance whose store fails, then one whose store succeeds.
    for _ in range(2):
        rejoin = [join(coord, m).pending for m in ids]
        new_gen = rejoin[0].response.generation_id
        new_leader = rejoin[0].response.leader
        coord.sync_group(sync_req(new_leader, new_gen, {m: m.encode() for m in ids}), 5)
    live = coord.groups[GROUP]
    assert flaky.n > 12 and len(acknowledged) == 4

    fresh = GroupCoordinator(coord.config, clock)
    fresh.begin_load()
    for rec in coord.log:
        fresh.replay(rec.key, rec.value)
    fresh.complete_load()
    fetched = fresh.offset_fetch(fetch_req({"t": [0, 1, 2, 3]}), 7).response
    assert {("t", p.partition_index): p.committed_offset
            for t in fetched.topics for p in t.partitions} == acknowledged
    live_fetch = coord.offset_fetch(fetch_req({"t": [0, 1, 2, 3]}), 7).response
    assert live_fetch == fetched
    rebuilt = fresh.groups[GROUP]
    if live.state is GroupState.STABLE:
        assert rebuilt.generation_id == live.generation_id
        assert {m: x.assignment for m, x in rebuilt.members.items()} == \
            {m: x.assignment for m, x in live.members.items()}
    else:  # the last store failed: the log holds the last acknowledged generation
        assert rebuilt.generation_id < live.generation_id


def test_groups_are_placed_by_the_offsets_topic_partition_count_the_adapter_sets():
    coord, clock = make(offsets_topic_num_partitions=50)
    assert coord.partition_for("hello") == 99162322 % 50
    coord.coordinator.offsets_topic_partitions = 7
    assert coord.partition_for("hello") == 99162322 % 7


def test_a_group_deletion_that_is_not_stored_answers_the_mapped_error_and_keeps_the_group():
    coord, clock = make()
    coord.offset_commit(commit_req({("t", 0): 5}), 8)
    coord.fail_with = E.KAFKA_STORAGE_ERROR
    r = coord.delete_groups(DeleteGroupsRequest(groups_names=[GROUP]), 2).response
    assert r.results[0].error_code == E.NOT_COORDINATOR
    assert coord.groups[GROUP].state is GroupState.EMPTY
    fetched = coord.offset_fetch(fetch_req({"t": [0]}), 7).response
    assert fetched.topics[0].partitions[0].committed_offset == 5
    coord.fail_with = None
    r = coord.delete_groups(DeleteGroupsRequest(groups_names=[GROUP]), 2).response
    assert r.results[0].error_code == 0 and GROUP not in coord.groups


def test_an_offset_delete_that_is_not_stored_answers_the_mapped_error_and_keeps_the_offsets():
    coord, clock = make()
    coord.offset_commit(commit_req({("t", 0): 5, ("t", 1): 6}), 8)
    coord.fail_with = E.NOT_ENOUGH_REPLICAS
    req = OffsetDeleteRequest(group_id=GROUP, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name="t", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])])
    r = coord.offset_delete(req, 0).response
    assert r.error_code == E.COORDINATOR_NOT_AVAILABLE and r.topics == []
    fetched = coord.offset_fetch(fetch_req({"t": [0, 1]}), 7).response
    assert [p.committed_offset for p in fetched.topics[0].partitions] == [5, 6]
    coord.fail_with = None
    assert coord.offset_delete(req, 0).response.error_code == 0
    fetched = coord.offset_fetch(fetch_req({"t": [0, 1]}), 7).response
    assert [p.committed_offset for p in fetched.topics[0].partitions] == [-1, 6]
