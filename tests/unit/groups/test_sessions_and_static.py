"""Session expiry, KIP-394 pending member expiry and static membership (KIP-345)."""

from groups import GroupState
from tests.unit.groups.helpers import (
    GROUP,
    SESSION_MS,
    hb_req,
    join,
    join_new_member,
    leave_req,
    make,
    stable_group,
    sync_req,
)


def test_a_member_that_stops_heartbeating_is_removed_after_its_session_timeout():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    alive = ids[0]
    for _ in range(3):
        clock.advance(SESSION_MS // 2)
        coord.heartbeat(hb_req(alive, gen), 4)
        coord.poll()
    group = coord.groups[GROUP]
    assert set(group.members) == {alive}
    assert group.state is GroupState.PREPARING_REBALANCE
    assert coord.heartbeat(hb_req(alive, gen), 4).response.error_code == 27


def test_heartbeats_keep_a_member_alive_past_its_session_timeout():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 1)
    for _ in range(10):
        clock.advance(SESSION_MS - 1)
        coord.heartbeat(hb_req(ids[0], gen), 4)
        coord.poll()
    assert coord.groups[GROUP].state is GroupState.STABLE


def test_the_next_deadline_is_the_earliest_session_expiry():
    coord, clock = make()
    stable_group(coord, clock, 1)
    assert coord.next_deadline_ms() == clock.milliseconds() + SESSION_MS


def test_a_pending_member_id_expires_after_the_session_timeout_and_unblocks_the_rebalance():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 1)
    pending_id = join(coord).pending.response.member_id  # MEMBER_ID_REQUIRED, never rejoins
    p = join(coord, leader).pending  # leader rejoins: waits for the pending member too
    assert not p.done()
    clock.advance(SESSION_MS)
    coord.heartbeat(hb_req(leader, gen), 4)
    coord.poll()
    assert p.done() and p.response.generation_id == gen + 1
    assert not coord.groups[GROUP].is_pending_member(pending_id)


def test_a_static_member_restarting_gets_its_assignment_back_without_a_rebalance():
    coord, clock = make()
    a = join_new_member(coord, instance_id="i-a")
    b = join_new_member(coord, instance_id="i-b")
    coord.poll()
    gen = a.response.generation_id
    ida, idb = a.response.member_id, b.response.member_id
    assert ida == "i-a-u1"
    coord.sync_group(sync_req(idb, gen, instance_id="i-b"), 5)
    coord.sync_group(sync_req(ida, gen, {ida: b"A", idb: b"B"}, instance_id="i-a"), 5)
    result = join(coord, "", instance_id="i-b")  # b restarts: no member id, same instance
    p = result.pending
    assert p.done() and p.response.error_code == 0
    new_b = p.response.member_id
    assert new_b != idb and p.response.generation_id == gen
    assert len(result.records) == 1  # the new member id is persisted
    assert coord.groups[GROUP].state is GroupState.STABLE
    s = coord.sync_group(sync_req(new_b, gen, instance_id="i-b"), 5).pending
    assert s.response.assignment == b"B"
    r = coord.heartbeat(hb_req(idb, gen, instance_id="i-b"), 4).response
    assert r.error_code == 82  # the old incarnation is fenced


def test_a_restarted_static_leader_is_told_the_old_leader_id_so_it_does_not_reassign():
    coord, clock = make()
    a = join_new_member(coord, instance_id="i-a")
    coord.poll()
    ida, gen = a.response.member_id, a.response.generation_id
    coord.sync_group(sync_req(ida, gen, {ida: b"A"}, instance_id="i-a"), 5)
    p = join(coord, "", instance_id="i-a").pending
    assert p.response.leader == ida and p.response.member_id != ida
    assert coord.groups[GROUP].leader_id == p.response.member_id


def test_a_static_member_with_a_parked_join_is_fenced_by_its_new_incarnation():
    coord, clock = make()
    a = join_new_member(coord, instance_id="i-a")
    again = join(coord, "", instance_id="i-a").pending
    assert a.response.error_code == 82  # FENCED_INSTANCE_ID
    coord.poll()
    assert again.response.error_code == 0


def test_a_static_member_that_misses_the_join_phase_stays_in_the_group():
    coord, clock = make()
    a = join_new_member(coord, instance_id="i-a")
    b = join_new_member(coord)
    coord.poll()
    gen, leader = a.response.generation_id, a.response.leader
    bid = b.response.member_id
    coord.sync_group(sync_req(bid, gen), 5)
    coord.sync_group(sync_req(leader, gen, {}), 5)
    p = join(coord, bid, protocols=(("range", b"x"),)).pending  # b changes metadata
    for _ in range(6):
        clock.advance(5000)
        coord.heartbeat(hb_req(a.response.member_id, gen, instance_id="i-a"), 4)
        coord.poll()
    assert p.done() and p.response.error_code == 0
    assert a.response.member_id in coord.groups[GROUP].members


def test_leave_by_group_instance_id_removes_the_static_member():
    coord, clock = make()
    join_new_member(coord, instance_id="i-a")
    coord.poll()
    r = coord.leave_group(leave_req(("", "i-a")), 4).response
    assert r.members[0].error_code == 0
    assert not coord.groups[GROUP].members
    r = coord.leave_group(leave_req(("", "i-zzz")), 4).response
    assert r.members[0].error_code == 25
