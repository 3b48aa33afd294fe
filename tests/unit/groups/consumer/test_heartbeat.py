"""ConsumerGroupHeartbeat (KIP-848) in the pure coordinator: joining, the revoke-then-assign
reconciliation, epochs, fencing, timers, bad input, offset commits and restart by replay."""

from __future__ import annotations

import uuid

import pytest

from groups import GroupCoordinator
from groups.consumer.topics import TopicImage, TopicsImage
from groups.records import decode_any_key
from tests.unit.groups.helpers import StoringCoordinator, join_req, make
from wire.error_codes import ErrorCode as E
from wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
)

T1 = uuid.UUID(int=0x11)
T2 = uuid.UUID(int=0x22)
G = "cg"


class Topics:
    """A mutable metadata source: a new image whenever a topic is added."""

    def __init__(self, **topics: int) -> None:
        self.image = TopicsImage([])
        self.ids = {"t": T1, "u": T2}
        for name, n in topics.items():
            self.add(name, n)

    def add(self, name: str, partitions: int) -> None:
        topic_id = self.ids.setdefault(name, uuid.UUID(int=len(self.ids) + 0x100))
        topics = list(self.image.by_name.values()) + [TopicImage(topic_id, name, partitions)]
        self.image = TopicsImage(topics, self.image.version + 1)

    def __call__(self) -> TopicsImage:
        return self.image


def coordinator(**topics: int) -> tuple[StoringCoordinator, object, Topics]:
    c, clock = make(consumer_session_timeout_ms=45_000, consumer_assignment_interval_ms=0)
    src = Topics(**(topics or {"t": 6}))
    c.coordinator.consumer.topics = src
    return c, clock, src


def hb(member_id: str, epoch: int, *, topics=("t",), owned=None, regex=None, instance_id=None,
       assignor=None, rebalance_ms: int = 30_000, group: str = G) -> ConsumerGroupHeartbeatRequest:
    first = epoch == 0
    return ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
        rebalance_timeout_ms=rebalance_ms if first else -1,
        subscribed_topic_names=list(topics) if first and topics is not None else None,
        subscribed_topic_regex=regex, server_assignor=assignor,
        topic_partitions=[] if first else (None if owned is None else [
            ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=sorted(p))
            for t, p in owned.items()]))


def call(c: StoringCoordinator, req: ConsumerGroupHeartbeatRequest, version: int = 1):
    return c.consumer_group_heartbeat(req, version).response


def assigned(resp) -> dict[uuid.UUID, list[int]]:
    assert resp.assignment is not None
    return {tp.topic_id: tp.partitions for tp in resp.assignment.topic_partitions}


def record_types(records) -> list[int]:
    return [decode_any_key(r.key)[0] for r in records]


def test_the_first_member_gets_every_partition_at_epoch_2_and_its_records_are_written_in_kafkas_order():
    c, _, _ = coordinator()
    resp = call(c, hb("m1", 0))
    assert (resp.error_code, resp.member_id, resp.member_epoch) == (0, "m1", 2)
    assert resp.heartbeat_interval_ms == 5_000
    assert assigned(resp) == {T1: [0, 1, 2, 3, 4, 5]}
    # member subscription, group epoch, target member, target metadata, current assignment
    assert record_types(c.log) == [5, 3, 7, 6, 8]


def test_a_second_member_waits_for_the_first_to_revoke_before_it_gets_partitions():
    c, _, _ = coordinator()
    call(c, hb("m1", 0))
    r2 = call(c, hb("m2", 0))
    assert r2.member_epoch == 3
    assert assigned(r2) == {}     # its target partitions are still owned by m1
    all_six = {T1: {0, 1, 2, 3, 4, 5}}
    r1 = call(c, hb("m1", 2, owned=all_six))
    assert r1.member_epoch == 2   # revoking: it stays at its epoch
    keep = assigned(r1)[T1]
    assert len(keep) == 3
    # m2 still gets nothing while m1 reports the partitions it is giving up
    assert call(c, hb("m2", 3, owned={})).assignment is None
    r1 = call(c, hb("m1", 2, owned={T1: set(keep)}))
    assert r1.member_epoch == 3
    r2 = call(c, hb("m2", 3, owned={}))
    assert sorted(assigned(r2)[T1]) == sorted({0, 1, 2, 3, 4, 5} - set(keep))
    d = c.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=[G]), 1).response.groups[0]
    assert (d.group_state, d.group_epoch, d.assignment_epoch) == ("Stable", 3, 3)


def test_no_partition_is_ever_owned_by_two_members_while_members_come_and_go():
    c, _, _ = coordinator(t=8)
    owned: dict[str, set[int]] = {}
    epochs: dict[str, int] = {}

    def beat(m: str) -> None:
        if m not in epochs:
            r = call(c, hb(m, 0))
        else:
            r = call(c, hb(m, epochs[m], owned={T1: owned[m]}))
        assert r.error_code == 0, r
        epochs[m] = r.member_epoch
        if r.assignment is not None:
            owned[m] = set(assigned(r).get(T1, []))
        owned.setdefault(m, set())
        everyone = [p for s in owned.values() for p in s]
        assert len(everyone) == len(set(everyone)), owned

    for step in ["a", "b", "a", "c", "b", "a", "c", "b", "a", "c", "d", "a", "b", "c", "d"] * 3:
        beat(step)
    assert sorted(p for s in owned.values() for p in s) == list(range(8))
    assert sorted(len(s) for s in owned.values()) == [2, 2, 2, 2]


def test_a_retried_heartbeat_with_the_previous_epoch_is_accepted_and_a_wrong_epoch_is_fenced():
    c, _, _ = coordinator()
    call(c, hb("m1", 0))
    call(c, hb("m2", 0))
    r = call(c, hb("m1", 2, owned={T1: {0, 1, 2, 3, 4, 5}}))
    keep = set(assigned(r)[T1])
    r = call(c, hb("m1", 2, owned={T1: keep}))
    assert r.member_epoch == 3
    # the answer above was lost: the client retries with epoch 1 and what it owns
    again = call(c, hb("m1", 2, owned={T1: keep}))
    assert (again.error_code, again.member_epoch) == (0, 3)
    assert call(c, hb("m1", 7, owned={T1: keep})).error_code == E.FENCED_MEMBER_EPOCH
    assert call(c, hb("m1", 2, owned={T1: {0, 1, 2, 3, 4, 5}})).error_code == E.FENCED_MEMBER_EPOCH


def test_a_member_whose_session_ends_is_fenced_and_the_group_epoch_moves():
    c, clock, _ = coordinator()
    call(c, hb("m1", 0))
    call(c, hb("m2", 0))
    before = len(c.log)
    clock.advance(40_000)
    call(c, hb("m1", 2, owned={T1: {0, 1, 2, 3, 4, 5}}))
    clock.advance(10_000)   # m2 has been silent for 50 s > 45 s
    c.poll()
    assert record_types(c.log[before:])[-4:] == [8, 7, 5, 3]
    d = c.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=[G]), 1).response.groups[0]
    assert [m.member_id for m in d.members] == ["m1"]
    assert d.group_epoch == 4


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced():
    c, clock, _ = coordinator()
    call(c, hb("m1", 0, rebalance_ms=20_000))
    call(c, hb("m2", 0))
    r = call(c, hb("m1", 2, owned={T1: {0, 1, 2, 3, 4, 5}}))
    assert r.member_epoch == 2
    clock.advance(21_000)
    call(c, hb("m2", 3, owned={}))
    c.poll()
    d = c.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=[G]), 1).response.groups[0]
    assert [m.member_id for m in d.members] == ["m2"]


def test_a_leaving_member_is_removed_and_the_last_one_leaves_the_group_empty():
    c, _, _ = coordinator()
    call(c, hb("m1", 0))
    r = call(c, hb("m1", -1))
    assert (r.error_code, r.member_epoch) == (0, -1)
    listed = c.list_groups(ListGroupsRequest(), 5).response.groups
    assert [(g.group_id, g.group_state, g.group_type, g.protocol_type) for g in listed] == \
        [(G, "Empty", "consumer", "consumer")]


@pytest.mark.parametrize("req,code", [
    (ConsumerGroupHeartbeatRequest(group_id="", member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                   subscribed_topic_names=["t"], topic_partitions=[]), E.INVALID_REQUEST),
    (ConsumerGroupHeartbeatRequest(group_id=G, member_id="", member_epoch=0, rebalance_timeout_ms=1,
                                   subscribed_topic_names=["t"], topic_partitions=[]), E.INVALID_REQUEST),
    (ConsumerGroupHeartbeatRequest(group_id=G, member_id="m", member_epoch=0,
                                   subscribed_topic_names=["t"], topic_partitions=[]), E.INVALID_REQUEST),
    (ConsumerGroupHeartbeatRequest(group_id=G, member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                   topic_partitions=[]), E.INVALID_REQUEST),
    (ConsumerGroupHeartbeatRequest(group_id=G, member_id="m", member_epoch=-3), E.INVALID_REQUEST),
    (ConsumerGroupHeartbeatRequest(group_id=G, member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                   subscribed_topic_names=["t"], topic_partitions=[],
                                   server_assignor="sticky"), E.UNSUPPORTED_ASSIGNOR),
    (ConsumerGroupHeartbeatRequest(group_id=G, member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                   subscribed_topic_regex="orders-(", topic_partitions=[]),
     E.INVALID_REGULAR_EXPRESSION),
    (ConsumerGroupHeartbeatRequest(group_id=G, member_id="m", member_epoch=3), E.GROUP_ID_NOT_FOUND),
])
def test_bad_heartbeats_get_kafkas_error_and_store_nothing(req, code):
    c, _, _ = coordinator()
    resp = call(c, req)
    assert resp.error_code == code
    assert c.log == []


def test_an_unknown_member_id_gets_unknown_member_id():
    c, _, _ = coordinator()
    call(c, hb("m1", 0))
    assert call(c, hb("ghost", 1, owned={})).error_code == E.UNKNOWN_MEMBER_ID


def test_a_heartbeat_for_a_classic_group_that_has_not_chosen_a_protocol_gets_group_id_not_found():
    c, _, _ = coordinator()
    c.join_group(join_req(group="classic"), 3)   # parked: the group is preparing its first rebalance
    r = call(c, hb("m1", 0, group="classic"))
    assert r.error_code == E.GROUP_ID_NOT_FOUND
    assert "classic" in c.coordinator.groups and "classic" not in c.coordinator.consumer.groups


def test_a_heartbeat_for_an_empty_classic_group_replaces_it_and_keeps_its_offsets():
    c, _, _ = coordinator()
    commit = OffsetCommitRequest(group_id="simple", generation_id_or_member_epoch=-1, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=7,
                                                             committed_metadata="")])])
    assert c.offset_commit(commit, 8).response.topics[0].partitions[0].error_code == 0
    assert "simple" in c.coordinator.groups
    start = len(c.log)
    r = call(c, hb("m1", 0, group="simple"))
    assert (r.error_code, r.member_epoch) == (0, 2)
    assert record_types(c.log[start:])[0] == 2          # the classic group's tombstone first
    assert c.log[start].value is None
    assert "simple" not in c.coordinator.groups
    assert c.coordinator.offsets.offsets["simple"][("t", 0)].offset == 7


def test_offset_commits_follow_member_epochs():
    c, _, _ = coordinator()
    call(c, hb("m1", 0))
    call(c, hb("m2", 0))

    def commit(member: str, epoch: int, partition: int, version: int = 9) -> int:
        req = OffsetCommitRequest(group_id=G, generation_id_or_member_epoch=epoch, member_id=member,
                                  topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                      name="t", partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                                          partition_index=partition, committed_offset=5,
                                          committed_metadata="")])])
        return c.offset_commit(req, version).response.topics[0].partitions[0].error_code

    assert commit("m1", 2, 0) == 0                    # its own epoch
    assert commit("m1", 3, 0) == E.STALE_MEMBER_EPOCH  # ahead of it
    assert commit("nobody", 2, 0) == E.UNKNOWN_MEMBER_ID
    assert commit("m1", 2, 0, version=8) == E.UNSUPPORTED_VERSION
    assert commit("m2", 2, 0) == E.STALE_MEMBER_EPOCH   # m2 never owned partition 0 at epoch 2


def test_a_restarted_coordinator_rebuilds_every_group_from_the_records():
    c, clock, src = coordinator()
    call(c, hb("m1", 0))
    call(c, hb("m2", 0, instance_id="i2"))
    r = call(c, hb("m1", 2, owned={T1: {0, 1, 2, 3, 4, 5}}))
    call(c, hb("m1", 2, owned={T1: set(assigned(r)[T1])}))
    live = c.coordinator.consumer.groups[G]
    fresh = GroupCoordinator(c.coordinator.config, clock, topics=src)
    for i, rec in enumerate(c.log):
        fresh.replay(rec.key, rec.value, i)
    again = fresh.consumer.groups[G]
    assert again.members == live.members
    assert again.target == live.target
    assert (again.group_epoch, again.assignment_epoch, again.state) == \
        (live.group_epoch, live.assignment_epoch, live.state)
    assert again.static_members == {"i2": "m2"}
    assert fresh.groups == {}


def test_a_failed_append_answers_the_mapped_error_and_leaves_the_group_as_it_was():
    c, _, _ = coordinator()
    call(c, hb("m1", 0))
    before = dict(c.coordinator.consumer.groups[G].members)
    c.fail_with = E.NOT_ENOUGH_REPLICAS
    r = call(c, hb("m2", 0))
    assert r.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert c.coordinator.consumer.groups[G].members == before


def test_a_group_epoch_bump_within_the_assignment_interval_waits_for_the_interval():
    c, clock = make(consumer_assignment_interval_ms=1_000)
    c.coordinator.consumer.topics = Topics(t=6)
    call(c, hb("m1", 0))                          # first target: computed at once
    r2 = call(c, hb("m2", 0))
    d = c.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=[G]), 1).response.groups[0]
    assert (d.group_epoch, d.assignment_epoch, d.group_state) == (3, 2, "Assigning")
    assert r2.member_epoch == 2 and assigned(r2) == {}   # the last target: nothing for it yet
    clock.advance(1_000)
    r1 = call(c, hb("m1", 2, owned={T1: {0, 1, 2, 3, 4, 5}}))
    assert r1.member_epoch == 2 and len(assigned(r1)[T1]) == 3   # revoking for epoch 3's target
    d = c.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=[G]), 1).response.groups[0]
    assert (d.group_epoch, d.assignment_epoch) == (3, 3)
