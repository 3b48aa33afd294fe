"""AlterPartition on the controller (Kafka's ``processAlterPartition``), on the in-memory
ZooKeeper: what is committed, what is refused and with which error code."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from cluster import znodes
from cluster.controller import AlterPartition, ControlledShutdown, ControllerOutput
from cluster.coordination import SetData
from tests.support.controller_harness import (
    Cluster,
    assert_store_matches_context,
    lai_partitions,
    of_type,
    run,
    topic_id,
    um_partitions,
)
from wire import codec
from wire.error_codes import ErrorCode
from wire.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    LeaderAndIsrRequest,
    UpdateMetadataRequest,
)

_Topic = AlterPartitionRequest.TopicData  # type: ignore[attr-defined]
_Partition = AlterPartitionRequest.PartitionData  # type: ignore[attr-defined]
_BrokerState = AlterPartitionRequest.BrokerState  # type: ignore[attr-defined]


def request(c: Cluster, broker: int, topic: str, partition: int, leader_epoch: int, isr: Sequence[int],
            partition_epoch: int, version: int = 3, broker_epoch: int | None = None,
            isr_epochs: Sequence[int] | None = None, recovery: int = 0,
            topic_uuid: uuid.UUID | None = None) -> AlterPartitionRequest:
    """A request as a leader's AlterPartitionManager builds it (v3: the ISR members' broker
    epochs from the registrations unless given)."""
    ctx = c.controller.context
    if broker_epoch is None:
        broker_epoch = run(c.admin.exists(znodes.broker_path(broker))).czxid
    if isr_epochs is None:
        isr_epochs = [ctx.broker_epoch(b) if ctx else -1 for b in isr]
    part = _Partition(partition_index=partition, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                      leader_recovery_state=recovery)
    if version >= 3:
        part.new_isr_with_epochs = [_BrokerState(broker_id=b, broker_epoch=e) for b, e in zip(isr, isr_epochs, strict=True)]
    else:
        part.new_isr = list(isr)
    tid = topic_uuid if topic_uuid is not None else topic_id(len(topic))
    t = _Topic(topic_name=topic if version < 2 else "", topic_id=tid if version >= 2 else uuid.UUID(int=0),
               partitions=[part])
    return AlterPartitionRequest(broker_id=broker, broker_epoch=broker_epoch, topics=[t])


def alter(c: Cluster, broker: int, topic: str, partition: int, leader_epoch: int, isr: Sequence[int],
          partition_epoch: int, version: int = 3, **kw: object) -> ControllerOutput:
    req = request(c, broker, topic, partition, leader_epoch, isr, partition_epoch, version, **kw)  # type: ignore[arg-type]
    # Through the codec, as the broker receives it.
    req = codec.decode(AlterPartitionRequest, codec.encode(req, version), version)
    return c.feed(AlterPartition(req, version))


def only(out: ControllerOutput):  # noqa: ANN201 - the generated PartitionData class
    resp = out.alter_partition
    assert resp is not None and resp.error_code == 0
    [t] = resp.topics
    [p] = t.partitions
    return p


def three_replica_topic() -> Cluster:
    c = Cluster([1, 2, 3])
    c.create_topic("t", {0: [1, 2, 3]})  # leader 1, epoch 0, ISR [1,2,3], partition epoch 0
    c.take_sent()
    return c


def test_a_leaders_shrink_is_written_to_the_state_znode_and_answered_with_its_new_version():
    c = three_replica_topic()
    p = only(alter(c, 1, "t", 0, 0, [1, 2], 0))
    assert (p.error_code, p.leader_id, p.leader_epoch, p.isr, p.partition_epoch) == (0, 1, 0, [1, 2], 1)
    data, stat = run(c.admin.get(znodes.partition_state_path("t", 0)))
    # A leader-made change keeps the leader epoch; only the znode version (partition epoch) moves.
    assert data == b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
    assert stat.version == 1
    sent = c.take_sent()
    assert of_type(sent, LeaderAndIsrRequest) == []  # Kafka sends no LeaderAndIsr for it
    ums = of_type(sent, UpdateMetadataRequest)
    assert sorted(r.broker_id for r in ums) == [1, 2, 3]
    for r in ums:
        um = um_partitions(r)[("t", 0)]
        assert (um.leader, um.leader_epoch, um.isr, um.zk_version) == (1, 0, [1, 2], 1)
    assert_store_matches_context(c)


def test_an_expand_back_is_committed_on_the_partition_epoch_the_shrink_answered():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 2], 0)
    p = only(alter(c, 1, "t", 0, 0, [1, 2, 3], 1))
    assert (p.isr, p.partition_epoch) == ([1, 2, 3], 2)
    assert c.state("t", 0) == (znodes.PartitionState(1, 0, (1, 2, 3), 1), 2)


def test_a_stale_partition_epoch_is_refused_with_invalid_update_version_and_nothing_is_written():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 2], 0)
    p = only(alter(c, 1, "t", 0, 0, [1], 0))
    assert p.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert c.state("t", 0) == (znodes.PartitionState(1, 0, (1, 2), 1), 1)


def test_a_retry_of_a_committed_change_is_answered_with_the_committed_state():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 2], 0)
    # The answer was lost; the leader sends the same change again on the old partition epoch.
    out = alter(c, 1, "t", 0, 0, [1, 2], 0)
    assert out.writes == []
    p = only(out)
    assert (p.error_code, p.isr, p.partition_epoch) == (0, [1, 2], 1)


def test_an_older_leader_epoch_is_fenced_and_a_newer_one_means_this_controller_is_behind():
    c = three_replica_topic()
    c.kill(3)
    c.broker_change()  # controller-made shrink: leader epoch 1, partition epoch 1
    assert c.state("t", 0) == (znodes.PartitionState(1, 1, (1, 2), 1), 1)
    assert only(alter(c, 1, "t", 0, 0, [1], 1)).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert only(alter(c, 1, "t", 0, 2, [1], 1)).error_code == ErrorCode.NOT_CONTROLLER
    assert only(alter(c, 1, "t", 0, 1, [1], 5)).error_code == ErrorCode.NOT_CONTROLLER
    assert c.state("t", 0)[1] == 1


def test_a_request_from_an_old_registration_or_an_unknown_broker_is_a_stale_broker_epoch():
    c = three_replica_topic()
    epoch = run(c.admin.exists(znodes.broker_path(1))).czxid
    for broker, broker_epoch in ((1, epoch - 1), (1, -1), (9, 5)):
        out = alter(c, broker, "t", 0, 0, [1, 2], 0, broker_epoch=broker_epoch, isr_epochs=[-1, -1])
        assert (out.alter_partition.error_code, out.alter_partition.topics) == (ErrorCode.STALE_BROKER_EPOCH, [])
        assert out.writes == []


def test_a_broker_that_does_not_lead_the_partition_may_not_change_its_isr():
    c = three_replica_topic()
    assert only(alter(c, 2, "t", 0, 0, [2, 3], 0)).error_code == ErrorCode.INVALID_REQUEST
    assert c.state("t", 0)[1] == 0


@pytest.mark.parametrize("isr", [[], [2, 3], [1, 1, 2], [1, 4]])
def test_an_isr_that_is_empty_lacks_the_leader_repeats_or_leaves_the_assignment_is_invalid(isr):
    c = Cluster([1, 2, 3, 4])
    c.create_topic("t", {0: [1, 2, 3]})
    out = alter(c, 1, "t", 0, 0, isr, 0, isr_epochs=[-1] * len(isr))
    assert only(out).error_code == ErrorCode.INVALID_REQUEST
    assert out.writes == []


def test_adding_a_dead_broker_to_the_isr_is_ineligible_replica_from_v2_and_not_attempted_before():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 2], 0)
    c.kill(3)
    c.broker_change()  # 3 was out of the ISR already: only metadata moves
    state, version = c.state("t", 0)
    for v, code in ((3, ErrorCode.INELIGIBLE_REPLICA), (2, ErrorCode.INELIGIBLE_REPLICA),
                    (1, ErrorCode.OPERATION_NOT_ATTEMPTED), (0, ErrorCode.OPERATION_NOT_ATTEMPTED)):
        out = alter(c, 1, "t", 0, state.leader_epoch, [1, 2, 3], version, version=v, isr_epochs=[-1, -1, -1])
        assert only(out).error_code == code, v
    assert c.state("t", 0) == (state, version)


def test_a_shutting_down_broker_cannot_rejoin_the_isr():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 2], 0)
    c.feed(ControlledShutdown(3, c.controller.context.broker_epoch(3)))
    state, version = c.state("t", 0)
    out = alter(c, 1, "t", 0, state.leader_epoch, [1, 2, 3], version)
    assert only(out).error_code == ErrorCode.INELIGIBLE_REPLICA


def test_v3_refuses_a_member_whose_broker_epoch_is_not_its_current_registration():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 2], 0)
    old = c.controller.context.broker_epoch(3)
    c.kill(3)
    c.broker_change()
    c.register(3)  # a new session: a new czxid, a new broker epoch
    c.broker_change()
    state, version = c.state("t", 0)
    e1, e2 = (c.controller.context.broker_epoch(b) for b in (1, 2))
    out = alter(c, 1, "t", 0, state.leader_epoch, [1, 2, 3], version, isr_epochs=[e1, e2, old])
    assert only(out).error_code == ErrorCode.INELIGIBLE_REPLICA
    new = c.controller.context.broker_epoch(3)
    assert new != old
    p = only(alter(c, 1, "t", 0, state.leader_epoch, [1, 2, 3], version, isr_epochs=[e1, e2, new]))
    assert (p.error_code, p.isr) == (0, [1, 2, 3])
    assert_store_matches_context(c)


def test_unknown_partitions_and_topic_ids_are_answered_per_partition():
    c = three_replica_topic()
    assert only(alter(c, 1, "t", 7, 0, [1], 0)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert only(alter(c, 1, "nope", 0, 0, [1], 0, version=1)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    stray = uuid.UUID(int=42)
    p = only(alter(c, 1, "t", 0, 0, [1], 0, version=2, topic_uuid=stray))
    assert p.error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert alter(c, 1, "t", 0, 0, [1], 0, version=2, topic_uuid=stray).alter_partition.topics[0].topic_id == stray


def test_versions_before_two_name_topics_and_later_ones_use_ids_in_the_answer():
    for version in (0, 1, 2, 3):
        c = three_replica_topic()
        resp = alter(c, 1, "t", 0, 0, [1, 2], 0, version=version).alter_partition
        [t] = resp.topics
        if version < 2:
            assert (t.topic_name, t.topic_id) == ("t", uuid.UUID(int=0))
        else:
            assert t.topic_id == topic_id(1)
        decoded = codec.decode(AlterPartitionResponse, codec.encode(resp, version), version)
        assert decoded == resp


def test_a_recovering_leader_clears_recovering_with_its_own_isr_and_may_not_widen_it_first():
    c = Cluster([1, 2], unclean={"t": True})
    c.create_topic("t", {0: [1, 2]})
    c.kill(2)
    c.broker_change()
    c.kill(1)
    c.broker_change()
    c.register(2)
    c.broker_change()  # unclean: leader 2, ISR [2], RECOVERING
    c.register(1)
    c.broker_change()
    state, version = c.state("t", 0)
    assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), 1)
    assert only(alter(c, 2, "t", 0, state.leader_epoch, [2, 1], version, recovery=1)).error_code == \
        ErrorCode.INVALID_REQUEST
    p = only(alter(c, 2, "t", 0, state.leader_epoch, [2], version, recovery=0))
    assert (p.error_code, p.leader_recovery_state, p.partition_epoch) == (0, 0, version + 1)
    raw = run(c.admin.get(znodes.partition_state_path("t", 0)))[0]
    assert b"leader_recovery_state" not in raw
    # RECOVERED never goes back to RECOVERING.
    assert only(alter(c, 2, "t", 0, state.leader_epoch, [2], version + 1, recovery=1)).error_code == \
        ErrorCode.INVALID_REQUEST


def test_a_controller_that_is_not_active_answers_not_controller():
    c = three_replica_topic()
    old = c.controller
    c.new_controller()
    req = request(c, 1, "t", 0, 0, [1, 2], 0)
    zombie = c.feed(AlterPartition(req, 3), controller=old)
    # The deposed controller's write fails its epoch check: it resigns, and the runner must
    # not send the answer it had computed (it answers NOT_CONTROLLER instead).
    assert zombie.resigned
    assert c.state("t", 0)[1] == 0
    resigned = old.handle(AlterPartition(req, 3)).alter_partition
    assert (resigned.error_code, resigned.topics) == (ErrorCode.NOT_CONTROLLER, [])


def test_an_election_after_a_shrink_starts_from_the_committed_isr_and_announces_the_znode_version():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 3], 0)  # partition epoch 1
    c.take_sent()
    c.kill(1)
    c.broker_change()
    state, version = c.state("t", 0)
    assert (state.leader, state.leader_epoch, state.isr, version) == (3, 1, (3,), 2)
    for r in of_type(c.take_sent(), LeaderAndIsrRequest):
        p = lai_partitions(r)[("t", 0)]
        assert (p.leader, p.isr, p.partition_epoch) == (3, [3], 2)
    assert_store_matches_context(c)


def test_a_new_controller_reads_the_partition_epoch_from_the_znode_version():
    c = three_replica_topic()
    alter(c, 1, "t", 0, 0, [1, 2], 0)
    # Someone else (a pre-2.7 leader) bumps the znode: the next controller must use its version.
    raw = run(c.admin.get(znodes.partition_state_path("t", 0)))[0]
    c.admin.multi_now([SetData(znodes.partition_state_path("t", 0), raw, 1)])
    c.new_controller()
    assert c.controller.context.leadership[("t", 0)].leader_and_isr.partition_epoch == 2
    for r in of_type(c.take_sent(), LeaderAndIsrRequest):
        assert lai_partitions(r)[("t", 0)].partition_epoch == 2
    p = only(alter(c, 1, "t", 0, 0, [1], 2))
    assert p.partition_epoch == 3
