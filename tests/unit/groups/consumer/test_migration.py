"""Online migration between the classic and the consumer group protocol (KIP-848) in the pure
coordinator: a live classic group upgraded by a consumer-protocol member, its classic
members reconciled through JoinGroup/SyncGroup/Heartbeat, and the group downgraded again
when the last consumer-protocol member leaves."""

from __future__ import annotations

from groups.consumer.conversion import decode_assignment, encode_assignment
from groups.group_state import GroupState
from tests.unit.groups.consumer.test_heartbeat import (
    T1,
    assigned,
    call,
    coordinator,
    hb,
    record_types,
)
from tests.unit.groups.helpers import hb_req, join_req, leave_req, subscription, sync_req
from wire.error_codes import ErrorCode as E
from wire.messages import ConsumerGroupDescribeRequest

G = "mig"


def stable_classic_group(c, clock):
    """Two classic members (range over t's six partitions), Stable at generation 1."""
    r1 = c.join_group(join_req(group=G), 3).pending
    r2 = c.join_group(join_req(group=G), 3).pending
    clock.advance(1)
    c.poll()
    j1, j2 = r1.response, r2.response
    assert j1.error_code == j2.error_code == 0
    leader = j1 if j1.leader == j1.member_id else j2
    image = c.coordinator.consumer.topics()
    shares = {j1.member_id: {T1: frozenset({0, 1, 2})}, j2.member_id: {T1: frozenset({3, 4, 5})}}
    assignments = {m: encode_assignment(p, image, 0) for m, p in shares.items()}
    follower = j2 if leader is j1 else j1
    s_follower = c.sync_group(sync_req(follower.member_id, 1, group=G), 3).pending
    s_leader = c.sync_group(sync_req(leader.member_id, 1, assignments, group=G), 3).pending
    assert s_leader.response.error_code == s_follower.response.error_code == 0
    assert c.coordinator.groups[G].state is GroupState.STABLE
    return j1.member_id, j2.member_id


def describe(c):
    return c.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=[G]), 1).response.groups[0]


def rejoin(c, member_id: str, owned: list[int]) -> tuple[int, list[int]]:
    """A classic member's JoinGroup (cooperative: it reports what it owns) then SyncGroup:
    (generation, the partitions of t it is given)."""
    sub = subscription("t", version=0)
    j = c.join_group(join_req(member_id, group=G, protocols=(("range", sub),)), 5).pending.response
    assert j.error_code == 0, j
    assert (j.leader, j.members) == ("", [])
    s = c.sync_group(sync_req(member_id, j.generation_id, group=G), 3).pending.response
    if s.error_code == E.REBALANCE_IN_PROGRESS:
        return j.generation_id, owned
    assert s.error_code == 0, s
    topics, _ = decode_assignment(bytes(s.assignment))
    return j.generation_id, topics.get("t", [])


def test_a_consumer_protocol_member_upgrades_a_live_classic_group_and_everyone_converges():
    c, clock, _ = coordinator()
    a, b = stable_classic_group(c, clock)
    start = len(c.log)
    r = call(c, hb("new", 0, group=G))
    assert r.error_code == 0
    types = record_types(c.log[start:])
    assert types[:2] == [2, 5] and c.log[start].value is None   # classic tombstone, then the members
    assert G not in c.coordinator.groups
    d = describe(c)
    assert {m.member_id: m.member_type for m in d.members} == {a: 0, b: 0, "new": 1}
    # the classic members are told to rejoin, and converge through JoinGroup/SyncGroup
    owned = {a: [0, 1, 2], b: [3, 4, 5]}
    for _ in range(4):
        for m in (a, b):
            if c.heartbeat(hb_req(m, describe_epoch(c, m), group=G), 3).response.error_code \
                    == E.REBALANCE_IN_PROGRESS:
                _, owned[m] = rejoin(c, m, owned[m])
        r = call(c, hb("new", r.member_epoch, group=G, owned={T1: set(assigned(r).get(T1, []))}
                       if r.assignment is not None else {T1: set()}))
    d = describe(c)
    assert d.group_state == "Stable"
    shares = {m.member_id: sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions)
              for m in d.members}
    assert sorted(p for s in shares.values() for p in s) == list(range(6))
    assert all(len(s) == 2 for s in shares.values())


def describe_epoch(c, member_id: str) -> int:
    return next(m.member_epoch for m in describe(c).members if m.member_id == member_id)


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group_to_classic():
    c, clock, _ = coordinator()
    a, b = stable_classic_group(c, clock)
    r = call(c, hb("new", 0, group=G))
    start = len(c.log)
    left = call(c, hb("new", -1, group=G))
    assert left.error_code == 0
    types = record_types(c.log[start:])
    assert types[-1] == 2 and c.log[-1].value is not None     # the classic group's record last
    assert G not in c.coordinator.consumer.groups
    group = c.coordinator.groups[G]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert sorted(group.members) == sorted([a, b])
    assert r.member_epoch == group.generation_id
    # the classic members rejoin as in any classic rebalance
    assert c.heartbeat(hb_req(a, group.generation_id, group=G), 3).response.error_code == \
        E.REBALANCE_IN_PROGRESS


def test_a_classic_member_of_a_consumer_group_is_refused_with_a_wrong_generation():
    c, clock, _ = coordinator()
    a, _ = stable_classic_group(c, clock)
    call(c, hb("new", 0, group=G))
    assert c.heartbeat(hb_req(a, 99, group=G), 3).response.error_code == E.ILLEGAL_GENERATION
    assert c.heartbeat(hb_req("ghost", 1, group=G), 3).response.error_code == E.UNKNOWN_MEMBER_ID


def test_with_migration_disabled_a_live_classic_group_is_not_upgraded():
    c, clock, _ = coordinator()
    c.coordinator.consumer.config = c.coordinator.config = \
        type(c.coordinator.config)(**{**_fields(c.coordinator.config), "consumer_migration_policy": "disabled"})
    stable_classic_group(c, clock)
    r = call(c, hb("new", 0, group=G))
    assert r.error_code == E.GROUP_ID_NOT_FOUND
    assert "online upgrade is disabled" in r.error_message


def _fields(cfg) -> dict:
    return {f: getattr(cfg, f) for f in cfg.__dataclass_fields__}


def test_a_classic_member_leaving_a_consumer_group_is_fenced():
    c, clock, _ = coordinator()
    a, b = stable_classic_group(c, clock)
    call(c, hb("new", 0, group=G))
    resp = c.leave_group(leave_req((a, None), group=G), 3).response
    assert resp.error_code == 0 and [m.error_code for m in resp.members] == [0]
    assert sorted(m.member_id for m in describe(c).members) == sorted([b, "new"])
