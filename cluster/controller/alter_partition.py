"""AlterPartition (key 56, v0-3) on the controller: Kafka's ``KafkaController.
processAlterPartition`` (ZooKeeper mode, 3.x), with the checks KRaft's
``ReplicationControlManager`` adds that the ZooKeeper controller lacked.

Since Kafka 2.7 (KIP-497) a partition leader does not write its ISR changes to ZooKeeper
itself: it asks the controller, which validates, writes the state znode with a conditional
set (guarded by the ``/controller_epoch`` check like every controller write) and answers
with the committed state and the znode's new version as the partition epoch.  Then it sends
UpdateMetadata of the partitions asked about to every live or shutting-down broker (no
LeaderAndIsr: the leader learns from the answer, the followers need nothing).

Order of the checks (the first that applies answers):

1. Not the active controller: top-level NOT_CONTROLLER (the leader finds the new one).
2. The requesting broker is not registered, or its broker epoch is not its registration's
   czxid: top-level STALE_BROKER_EPOCH (a bounced broker's old request).
3. Per topic, v2+: an unknown topic id: UNKNOWN_TOPIC_ID for each of its partitions.
4. Per partition, in Kafka's order:

   * no state known: UNKNOWN_TOPIC_OR_PARTITION;
   * a partition epoch or leader epoch *newer* than ours: NOT_CONTROLLER (we are likely
     a deposed controller; Kafka's words);
   * an older leader epoch: FENCED_LEADER_EPOCH;
   * the requester is not the leader: INVALID_REQUEST (KRaft's check; Kafka's ZooKeeper
     controller would have written the requester in as leader);
   * the same leader, leader epoch, ISR and recovery state as committed: success with
     the committed state, whatever the partition epoch (idempotent retries);
   * an older partition epoch: INVALID_UPDATE_VERSION;
   * an ISR that is empty, repeats a broker, names a broker outside the assignment or
     leaves the leader out: INVALID_REQUEST (KRaft's ``validateIsr`` and "the ISR must
     always include the current leader");
   * RECOVERING with more than one ISR member, or RECOVERED -> RECOVERING: INVALID_REQUEST
     (KIP-704: only the leader's own AlterPartition clears RECOVERING);
   * an ISR member that is not live (not registered, or shutting down), or (v3) whose
     broker epoch is given (not -1) and is not its registration's czxid (KIP-903):
     INELIGIBLE_REPLICA for v2+, OPERATION_NOT_ATTEMPTED for v0-1 (KIP-841).

Accepted partitions are written with leader = the requester, the request's leader epoch,
ISR and recovery state, and this controller's epoch; the write's expected version is the
request's partition epoch (equal to ours by then).  As every controller write, a failure
makes the controller resign, and the runner then answers NOT_CONTROLLER instead of this
answer (the leader retries with the next controller, which validates afresh).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from cluster.controller.context import TopicPartition
from cluster.controller.step import Step
from cluster.election import RECOVERED, RECOVERING, LeaderAndIsr
from wire.error_codes import ErrorCode
from wire.messages import ZERO_UUID, AlterPartitionRequest, AlterPartitionResponse

__all__ = [
    "AlterPartitionItem",
    "alter_partitions",
    "committed_partitions",
    "items_of",
    "not_controller_response",
]

_RespTopic = AlterPartitionResponse.TopicData  # type: ignore[attr-defined]
_RespPartition = AlterPartitionResponse.PartitionData  # type: ignore[attr-defined]

UNKNOWN_EPOCH = -1  # a BrokerState without a broker epoch (Kafka's ZooKeeper-mode leaders send it)


@dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    """One partition of a request, whatever its version."""

    topic: str | None  # v0-1 (None: the id was not known)
    topic_id: uuid.UUID  # v2+ (ZERO_UUID before)
    partition: int
    leader_epoch: int
    isr: tuple[int, ...]
    isr_broker_epochs: tuple[int, ...]  # one per ISR member, -1 = not checked
    leader_recovery_state: int
    partition_epoch: int


def items_of(req: AlterPartitionRequest, version: int) -> list[AlterPartitionItem]:
    """The request's partitions (``AlterPartitionRequest.newIsrToSimpleNewIsrWithBrokerEpochs``
    for v0-2: every broker epoch -1)."""
    out = []
    for t in req.topics:
        for p in t.partitions:
            if version >= 3:
                isr = tuple(b.broker_id for b in p.new_isr_with_epochs)
                epochs = tuple(b.broker_epoch for b in p.new_isr_with_epochs)
            else:
                isr = tuple(p.new_isr)
                epochs = (UNKNOWN_EPOCH,) * len(isr)
            out.append(AlterPartitionItem(
                topic=t.topic_name if version < 2 else None,
                topic_id=t.topic_id if version >= 2 else ZERO_UUID,
                partition=p.partition_index, leader_epoch=p.leader_epoch, isr=isr,
                isr_broker_epochs=epochs,
                leader_recovery_state=p.leader_recovery_state if version >= 1 else RECOVERED,
                partition_epoch=p.partition_epoch))
    return out


def committed_partitions(resp: AlterPartitionResponse, topic_ids: dict[str, uuid.UUID],
                         version: int) -> set[TopicPartition]:
    """The partitions an answer reports committed (no error)."""
    names = {tid: name for name, tid in topic_ids.items()}
    out = set()
    for t in resp.topics:
        topic = t.topic_name if version < 2 else names.get(t.topic_id)
        if topic:
            out.update((topic, p.partition_index) for p in t.partitions if p.error_code == ErrorCode.NONE)
    return out


def not_controller_response() -> AlterPartitionResponse:
    return AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER, topics=[])


def alter_partitions(step: Step, req: AlterPartitionRequest, version: int) -> AlterPartitionResponse:
    """Validate, decide the writes (on ``step``) and build the answer."""
    ctx = step.ctx
    if req.broker_id not in ctx.brokers or ctx.broker_epoch(req.broker_id) != req.broker_epoch:
        return AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH, topics=[])
    names_by_id = {tid: name for name, tid in ctx.topic_ids.items()}
    answers: dict[TopicPartition, LeaderAndIsr | int] = {}
    unknown_ids: dict[uuid.UUID, list[int]] = {}
    asked: list[TopicPartition] = []
    for item in items_of(req, version):
        topic = item.topic if version < 2 else names_by_id.get(item.topic_id)
        if topic is None:
            unknown_ids.setdefault(item.topic_id, []).append(item.partition)
            continue
        tp = (topic, item.partition)
        if tp not in answers:
            asked.append(tp)
        answers[tp] = _check(step, req.broker_id, version, tp, item)  # a repeat: the last counts
    for tp in asked:
        new = answers[tp]
        if isinstance(new, _Write):
            # The expected version is ours, which _check found equal to the request's.
            written = step.update_partition_state(tp, new.lai)
            answers[tp] = written.leader_and_isr
    # Kafka sends UpdateMetadata for every partition asked about, changed or not.
    step.batch.add_update_metadata(sorted(ctx.live_or_shutting_down_ids()),
                                   [tp for tp in asked if tp in ctx.leadership])
    return _response(ctx.topic_ids, version, answers, unknown_ids)


@dataclass(frozen=True, slots=True)
class _Write:
    lai: LeaderAndIsr  # what to write (its partition_epoch: the version it replaces)


def _check(step: Step, broker_id: int, version: int, tp: TopicPartition,
           item: AlterPartitionItem) -> LeaderAndIsr | _Write | int:
    ctx = step.ctx
    lic = ctx.leadership.get(tp)
    if lic is None or ctx.is_topic_queued_for_deletion(tp[0]):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    current = lic.leader_and_isr
    if item.partition_epoch > current.partition_epoch or item.leader_epoch > current.leader_epoch:
        return ErrorCode.NOT_CONTROLLER
    if item.leader_epoch < current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if broker_id != current.leader:
        return ErrorCode.INVALID_REQUEST
    if (item.isr, item.leader_recovery_state) == (current.isr, current.leader_recovery_state):
        return current  # equalsAllowStalePartitionEpoch: already so
    if item.partition_epoch < current.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    replicas = ctx.replicas(tp)
    if (not item.isr or len(set(item.isr)) != len(item.isr) or any(r not in replicas for r in item.isr)
            or current.leader not in item.isr):
        return ErrorCode.INVALID_REQUEST
    if item.leader_recovery_state == RECOVERING and len(item.isr) > 1:
        return ErrorCode.INVALID_REQUEST
    if current.leader_recovery_state == RECOVERED and item.leader_recovery_state == RECOVERING:
        return ErrorCode.INVALID_REQUEST
    live = ctx.live_broker_ids()
    ineligible = [
        r for r, epoch in zip(item.isr, item.isr_broker_epochs, strict=True)
        if r not in live or (epoch != UNKNOWN_EPOCH and epoch != ctx.broker_epoch(r))
    ]
    if ineligible:
        return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return _Write(LeaderAndIsr(broker_id, item.leader_epoch, item.isr, item.leader_recovery_state,
                               item.partition_epoch))


def _response(
    topic_ids: dict[str, uuid.UUID], version: int, answers: dict[TopicPartition, LeaderAndIsr | int],
    unknown_ids: dict[uuid.UUID, list[int]],
) -> AlterPartitionResponse:
    by_topic: dict[str, list[object]] = {}
    for (topic, partition), answer in answers.items():
        if isinstance(answer, LeaderAndIsr):
            part = _RespPartition(
                partition_index=partition, error_code=ErrorCode.NONE, leader_id=answer.leader,
                leader_epoch=answer.leader_epoch, isr=list(answer.isr),
                leader_recovery_state=answer.leader_recovery_state,
                partition_epoch=answer.partition_epoch)
        else:
            part = _RespPartition(partition_index=partition, error_code=int(answer))
        by_topic.setdefault(topic, []).append(part)
    topics = [
        _RespTopic(topic_name=t if version < 2 else "",
                   topic_id=topic_ids.get(t, ZERO_UUID) if version >= 2 else ZERO_UUID,
                   partitions=parts)
        for t, parts in by_topic.items()
    ]
    topics.extend(
        _RespTopic(topic_id=tid, partitions=[
            _RespPartition(partition_index=p, error_code=ErrorCode.UNKNOWN_TOPIC_ID) for p in parts])
        for tid, parts in unknown_ids.items())
    return AlterPartitionResponse(error_code=ErrorCode.NONE, topics=topics)
