"""Full rebalances of several members, on a manual clock."""

from groups import GroupState
from tests.unit.groups.helpers import (
    GROUP,
    REBALANCE_MS,
    join,
    join_new_member,
    make,
    stable_group,
    subscription,
    sync_req,
)


def test_three_members_reach_stable_and_each_gets_its_own_assignment():
    coord, clock = make()
    pendings = [join_new_member(coord) for _ in range(3)]
    assert not any(p.done() for p in pendings)  # the initial rebalance waits for its delay
    assert coord.groups[GROUP].state is GroupState.PREPARING_REBALANCE
    coord.poll()
    responses = [p.response for p in pendings]
    assert {r.generation_id for r in responses} == {1}
    leader = responses[0].leader
    assert all(r.leader == leader for r in responses)
    for r in responses:
        if r.member_id == leader:
            assert sorted(m.member_id for m in r.members) == sorted(x.member_id for x in responses)
            assert all(m.metadata == subscription("t") for m in r.members)
        else:
            assert r.members == []  # member metadata only to the leader
    assert coord.groups[GROUP].state is GroupState.COMPLETING_REBALANCE
    followers = [r.member_id for r in responses if r.member_id != leader]
    parked = [coord.sync_group(sync_req(f, 1), 5).pending for f in followers]
    assert not any(p.done() for p in parked)
    assignment = {followers[0]: b"A"}  # the other follower is missing: gets empty bytes
    result = coord.sync_group(sync_req(leader, 1, assignment), 5)
    assert result.pending.done() and result.pending.response.assignment == b""
    assert parked[0].response.assignment == b"A"
    assert parked[1].response.assignment == b""  # empty, never None
    assert parked[0].response.protocol_name == "range"
    assert parked[0].response.protocol_type == "consumer"
    assert len(result.records) == 1  # GroupMetadata with the assignment
    assert coord.groups[GROUP].state is GroupState.STABLE


def test_a_fourth_member_joining_a_stable_group_triggers_a_rebalance_to_the_next_generation():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 3)
    newcomer = join_new_member(coord)
    group = coord.groups[GROUP]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert not newcomer.done()
    # The others learn about it from their heartbeat and rejoin.
    from tests.unit.groups.helpers import hb_req

    assert coord.heartbeat(hb_req(ids[0], gen), 4).response.error_code == 27
    rejoins = [join(coord, mid).pending for mid in ids]
    assert all(p.done() for p in rejoins + [newcomer])  # all joined: completes at once
    assert {p.response.generation_id for p in rejoins} == {gen + 1}
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert len(group.members) == 4


def test_a_member_that_does_not_rejoin_is_dropped_when_the_rebalance_timeout_ends():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 3)
    rejoined = [join(coord, mid).pending for mid in ids[:2]]  # leader rejoins first
    assert not any(p.done() for p in rejoined)
    clock.advance(REBALANCE_MS)
    coord.poll()
    assert all(p.done() and p.response.error_code == 0 for p in rejoined)
    assert set(coord.groups[GROUP].members) == set(ids[:2])
    assert rejoined[0].response.generation_id == gen + 1


def test_the_leader_rejoining_a_stable_group_forces_a_rebalance_but_a_follower_does_not():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    follower = next(m for m in ids if m != leader)
    p = join(coord, follower).pending
    assert p.done() and p.response.generation_id == gen and p.response.members == []
    assert coord.groups[GROUP].state is GroupState.STABLE
    p = join(coord, leader).pending
    assert not p.done()
    assert coord.groups[GROUP].state is GroupState.PREPARING_REBALANCE


def test_the_protocol_every_member_supports_is_chosen_by_vote():
    coord, clock = make()
    a = join_new_member(coord, protocols=(("roundrobin", b"x"), ("range", b"y")))
    b = join_new_member(coord, protocols=(("range", b"y"), ("roundrobin", b"x")))
    c = join_new_member(coord, protocols=(("range", b"y"), ("sticky", b"z"), ("roundrobin", b"x")))
    coord.poll()
    assert {p.response.protocol_name for p in (a, b, c)} == {"range"}


def test_a_member_with_no_common_protocol_is_rejected_with_inconsistent_group_protocol():
    coord, clock = make()
    join_new_member(coord, protocols=(("range", b"y"),))
    coord.poll()
    p = join(coord, protocols=(("sticky", b"z"),)).pending
    assert p.response.error_code == 23
    p = join(coord, protocol_type="connect").pending
    assert p.response.error_code == 23


def test_the_initial_delay_holds_the_first_rebalance_and_stretches_for_late_joiners():
    coord, clock = make(delay_ms=3000)
    a = join_new_member(coord)
    clock.advance(2000)
    coord.poll()
    b = join_new_member(coord)
    clock.advance(1000)
    coord.poll()  # first delay ends, a new member came: wait another delay
    assert not a.done()
    clock.advance(3000)
    coord.poll()
    assert a.done() and b.done()
    assert a.response.generation_id == 1


def test_a_follower_sync_before_the_leader_waits_and_the_leader_completes_it():
    coord, clock = make()
    a, b = join_new_member(coord), join_new_member(coord)
    coord.poll()
    leader = a.response.leader
    follower = b.response.member_id if a.response.member_id == leader else a.response.member_id
    parked = coord.sync_group(sync_req(follower, 1), 3).pending
    got = []
    parked.add_done_callback(got.append)
    coord.sync_group(sync_req(leader, 1, {follower: b"F", leader: b"L"}), 3)
    assert got and got[0].assignment == b"F"


def test_a_member_that_never_syncs_is_removed_when_the_sync_phase_times_out():
    coord, clock = make()
    a, b = join_new_member(coord), join_new_member(coord)
    coord.poll()
    leader = a.response.leader
    follower = b.response.member_id if a.response.member_id == leader else a.response.member_id
    coord.sync_group(sync_req(leader, 1, {}), 5)
    from tests.unit.groups.helpers import hb_req

    for _ in range(REBALANCE_MS // 5000):  # both keep their sessions alive; one never syncs
        clock.advance(5000)
        for mid in (leader, follower):
            coord.heartbeat(hb_req(mid, 1), 4)
        coord.poll()
    group = coord.groups[GROUP]
    assert follower not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE


def test_every_member_leaving_takes_the_group_to_empty_with_a_record():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    from tests.unit.groups.helpers import leave_req

    result = coord.leave_group(leave_req(*[(m, None) for m in ids]), 4)
    assert [m.error_code for m in result.response.members] == [0, 0]
    group = coord.groups[GROUP]
    assert group.state is GroupState.EMPTY
    assert group.generation_id == gen + 1
    assert len(result.records) == 1
