"""Each state's answers to JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit
(the cases of Kafka's GroupMetadataManagerTest for classic groups)."""

import pytest

from groups import GroupState
from groups.group_state import IllegalStateTransition
from tests.unit.groups.helpers import (
    GROUP,
    SESSION_MS,
    commit_req,
    hb_req,
    join,
    join_new_member,
    leave_req,
    make,
    stable_group,
    sync_req,
)

UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS = 25, 22, 27


def test_the_valid_previous_states_are_kafkas_table():
    S = GroupState
    assert S.EMPTY.valid_previous == {S.PREPARING_REBALANCE}
    assert S.PREPARING_REBALANCE.valid_previous == {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}
    assert S.COMPLETING_REBALANCE.valid_previous == {S.PREPARING_REBALANCE}
    assert S.STABLE.valid_previous == {S.COMPLETING_REBALANCE}
    assert S.DEAD.valid_previous == set(S)


def test_an_illegal_transition_is_a_programming_error():
    coord, clock = make()
    join(coord, version=3)
    with pytest.raises(IllegalStateTransition):
        coord.groups[GROUP].transition_to(GroupState.STABLE, 0)


# -- JoinGroup ---------------------------------------------------------------------------

def test_join_v4_with_an_empty_member_id_answers_member_id_required_with_a_generated_id():
    coord, clock = make()
    p = join(coord, version=4, client_id="client").pending
    assert p.response.error_code == 79
    assert p.response.member_id == "client-u1"
    assert coord.groups[GROUP].is_pending_member("client-u1")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_join_v0_to_v3_never_answers_member_id_required(version):
    coord, clock = make()
    p = join(coord, version=version).pending
    assert not p.done()
    coord.poll()
    assert p.response.error_code == 0 and p.response.member_id == "c-u1"


def test_join_v0_uses_the_session_timeout_as_the_rebalance_timeout():
    coord, clock = make()
    join(coord, version=0, rebalance_ms=99_999)
    assert coord.groups[GROUP].member("c-u1").rebalance_timeout_ms == SESSION_MS


@pytest.mark.parametrize("session_ms", [5999, 1_800_001])
def test_join_outside_the_session_timeout_bounds_answers_invalid_session_timeout(session_ms):
    coord, clock = make()
    p = join(coord, session_ms=session_ms).pending
    assert p.response.error_code == 26
    assert GROUP not in coord.groups


def test_join_with_an_empty_group_id_answers_invalid_group_id():
    coord, clock = make()
    assert join(coord, group="").pending.response.error_code == 24


def test_join_with_a_member_id_to_an_unknown_group_answers_unknown_member_id():
    coord, clock = make()
    assert join(coord, "ghost").pending.response.error_code == UNKNOWN_MEMBER_ID


def test_join_with_an_unknown_member_id_to_an_existing_group_answers_unknown_member_id():
    coord, clock = make()
    stable_group(coord, clock, 1)
    assert join(coord, "ghost").pending.response.error_code == UNKNOWN_MEMBER_ID


def test_a_join_that_creates_a_group_writes_an_empty_group_metadata_record():
    coord, clock = make()
    result = join(coord, version=4)
    assert len(result.records) == 1
    assert result.records[0].value is not None


def test_join_beyond_group_max_size_answers_group_max_size_reached():
    coord, clock = make(group_max_size=2)
    stable_group(coord, clock, 2)
    p = join_new_member(coord)
    assert p.response.error_code == 81


def test_join_v7_errors_carry_a_null_protocol_name_and_v6_an_empty_one():
    coord, clock = make()
    assert join(coord, "ghost", version=7).pending.response.protocol_name is None
    assert join(coord, "ghost", version=6).pending.response.protocol_name == ""


def test_a_join_with_unchanged_metadata_in_completing_rebalance_gets_the_generation_again():
    coord, clock = make()
    a, _b = join_new_member(coord), join_new_member(coord)
    coord.poll()
    leader = a.response.leader
    again = join(coord, leader).pending
    assert again.done() and again.response.generation_id == 1
    assert len(again.response.members) == 2  # still the leader
    assert coord.groups[GROUP].state is GroupState.COMPLETING_REBALANCE


def test_a_join_with_changed_metadata_in_completing_rebalance_restarts_the_rebalance():
    coord, clock = make()
    _a, b = join_new_member(coord), join_new_member(coord)
    coord.poll()
    follower = b.response.member_id
    parked_sync = coord.sync_group(sync_req(follower, 1), 5).pending
    join(coord, follower, protocols=(("range", b"new"),))
    assert coord.groups[GROUP].state is GroupState.PREPARING_REBALANCE
    assert parked_sync.response.error_code == REBALANCE_IN_PROGRESS


# -- SyncGroup ---------------------------------------------------------------------------

def test_sync_to_an_unknown_or_empty_group_answers_unknown_member_id():
    coord, clock = make()
    assert coord.sync_group(sync_req("m", 1), 5).pending.response.error_code == UNKNOWN_MEMBER_ID
    join(coord, version=4)  # creates an Empty group
    assert coord.sync_group(sync_req("m", 0), 5).pending.response.error_code == UNKNOWN_MEMBER_ID


def test_sync_in_preparing_rebalance_answers_rebalance_in_progress():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    join(coord, leader)
    follower = next(m for m in ids if m != leader)
    p = coord.sync_group(sync_req(follower, gen), 5).pending
    assert p.response.error_code == REBALANCE_IN_PROGRESS


def test_sync_with_a_stale_generation_answers_illegal_generation():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    p = coord.sync_group(sync_req(ids[0], gen - 1), 5).pending
    assert p.response.error_code == ILLEGAL_GENERATION


def test_sync_v5_with_a_different_protocol_answers_inconsistent_group_protocol():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 1)
    bad = sync_req(ids[0], gen, protocol_type="consumer", protocol_name="roundrobin")
    assert coord.sync_group(bad, 5).pending.response.error_code == 23
    good = sync_req(ids[0], gen, protocol_type="consumer", protocol_name="range")
    assert coord.sync_group(good, 5).pending.response.error_code == 0
    assert coord.sync_group(bad, 4).pending.response.error_code == 0  # not checked before v5


def test_sync_in_stable_returns_the_members_current_assignment():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    p = coord.sync_group(sync_req(ids[1], gen), 5).pending
    assert p.response.assignment == f"assign-{ids[1]}".encode()


# -- Heartbeat ---------------------------------------------------------------------------

def test_heartbeat_answers_by_state():
    coord, clock = make()
    assert coord.heartbeat(hb_req("m", 0), 4).response.error_code == UNKNOWN_MEMBER_ID
    a, _b = join_new_member(coord), join_new_member(coord)
    mid = a.response.member_id if a.done() else None
    assert mid is None  # parked
    coord.poll()
    mid = a.response.member_id
    # CompletingRebalance: a heartbeat is a normal heartbeat
    assert coord.heartbeat(hb_req(mid, 1), 4).response.error_code == 0
    assert coord.heartbeat(hb_req(mid, 0), 4).response.error_code == ILLEGAL_GENERATION
    assert coord.heartbeat(hb_req("ghost", 1), 4).response.error_code == UNKNOWN_MEMBER_ID
    coord.sync_group(sync_req(a.response.leader, 1, {}), 5)
    assert coord.heartbeat(hb_req(mid, 1), 4).response.error_code == 0  # Stable
    join(coord, a.response.leader)  # -> PreparingRebalance
    assert coord.heartbeat(hb_req(mid, 1), 4).response.error_code == REBALANCE_IN_PROGRESS


# -- LeaveGroup --------------------------------------------------------------------------

def test_leave_v3_answers_per_member_and_unknown_ones_get_unknown_member_id():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    r = coord.leave_group(leave_req((ids[0], None), ("ghost", None)), 3).response
    assert r.error_code == 0
    assert [(m.member_id, m.error_code) for m in r.members] == [(ids[0], 0), ("ghost", 25)]
    assert coord.groups[GROUP].state is GroupState.PREPARING_REBALANCE


def test_leave_v0_to_v2_answers_with_the_top_level_error():
    from wire.messages import LeaveGroupRequest

    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 1)
    r = coord.leave_group(LeaveGroupRequest(group_id=GROUP, member_id="ghost"), 1).response
    assert r.error_code == UNKNOWN_MEMBER_ID and r.members == []
    r = coord.leave_group(LeaveGroupRequest(group_id=GROUP, member_id=ids[0]), 1).response
    assert r.error_code == 0


def test_leave_of_an_unknown_group_answers_unknown_member_id():
    coord, clock = make()
    assert coord.leave_group(leave_req(("m", None)), 4).response.error_code == UNKNOWN_MEMBER_ID


def test_a_pending_member_can_leave_before_joining():
    coord, clock = make()
    mid = join(coord).pending.response.member_id
    r = coord.leave_group(leave_req((mid, None)), 4).response
    assert r.members[0].error_code == 0
    assert not coord.groups[GROUP].is_pending_member(mid)


def test_a_leave_in_preparing_rebalance_can_complete_the_join_phase():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    p = join(coord, leader).pending
    follower = next(m for m in ids if m != leader)
    coord.leave_group(leave_req((follower, None)), 4)
    assert p.done() and p.response.generation_id == gen + 1


# -- OffsetCommit ------------------------------------------------------------------------

def _commit_codes(result):
    return [p.error_code for t in result.response.topics for p in t.partitions]


def test_commit_answers_by_state():
    coord, clock = make()
    a, _b = join_new_member(coord), join_new_member(coord)
    mid = a.response.member_id if a.done() else None
    coord.poll()
    mid, leader = a.response.member_id, a.response.leader
    # CompletingRebalance: REBALANCE_IN_PROGRESS
    r = coord.offset_commit(commit_req({("t", 0): 5}, generation=1, member_id=mid), 8)
    assert _commit_codes(r) == [REBALANCE_IN_PROGRESS] and r.records == []
    coord.sync_group(sync_req(leader, 1, {}), 5)
    # Stable: accepted from the current generation, refused from another
    r = coord.offset_commit(commit_req({("t", 0): 5}, generation=1, member_id=mid), 8)
    assert _commit_codes(r) == [0] and len(r.records) == 1
    r = coord.offset_commit(commit_req({("t", 0): 5}, generation=0, member_id=mid), 8)
    assert _commit_codes(r) == [ILLEGAL_GENERATION]
    r = coord.offset_commit(commit_req({("t", 0): 5}, generation=1, member_id="ghost"), 8)
    assert _commit_codes(r) == [UNKNOWN_MEMBER_ID]
    # a simple commit is refused while the group has members
    r = coord.offset_commit(commit_req({("t", 0): 5}), 8)
    assert _commit_codes(r) == [UNKNOWN_MEMBER_ID]
    # PreparingRebalance: the previous generation may still commit
    join(coord, leader)
    r = coord.offset_commit(commit_req({("t", 0): 6}, generation=1, member_id=mid), 8)
    assert _commit_codes(r) == [0]


def test_commit_with_a_generation_to_an_unknown_group_answers_illegal_generation():
    coord, clock = make()
    r = coord.offset_commit(commit_req({("t", 0): 1}, generation=3, member_id="m"), 8)
    assert _commit_codes(r) == [ILLEGAL_GENERATION]
    assert GROUP not in coord.groups
