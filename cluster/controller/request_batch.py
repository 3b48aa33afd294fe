"""Per-broker batches of LeaderAndIsr / UpdateMetadata / StopReplica: Kafka's
``AbstractControllerBrokerRequestBatch`` (ControllerChannelManager.scala, 3.x).

One batch collects everything one event decides; :meth:`RequestBatch.build` turns it into
requests in Kafka's send order (all LeaderAndIsr, then UpdateMetadata, then StopReplica),
brokers in id order.  Rules kept from Kafka:

* every LeaderAndIsr entry also queues an UpdateMetadata of that partition to every live or
  shutting-down broker; a later entry for the same partition and broker replaces the
  earlier one (``is_new`` sticks once set, as does StopReplica's ``delete``);
* UpdateMetadata of a topic being deleted carries leader -2 (``LeaderDuringDelete``),
  leader epoch 0 and zk version 0 (``LeaderAndIsr.duringDelete``), its replicas and the
  offline ones; StopReplica's leader epoch is -2 for such a topic (``EpochDuringDelete``);
* requests go only to brokers that are live or shutting down when the batch is built, each
  stamped with the controller id and epoch and that broker's epoch (KIP-380);
* versions are a 3.4+ controller's (``IBP_3_4_IV0``): LeaderAndIsr v7, UpdateMetadata v8,
  StopReplica v4, with ``isKRaftController`` false and the LeaderAndIsr/UpdateMetadata
  ``type`` 0 (only a ZK-migration controller sends FULL); topic ids in LeaderAndIsr and
  UpdateMetadata (zero for a topic that has none).
* LeaderAndIsr's ``live_leaders`` are the leaders of its partitions with their endpoint on
  the inter-broker listener.
"""

from __future__ import annotations

from collections.abc import Iterable

from cluster.controller.commands import BrokerRequest
from cluster.controller.context import (
    LEADER_DURING_DELETE,
    ControllerContext,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)
from wire.messages import (
    ZERO_UUID,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)

__all__ = [
    "LEADER_AND_ISR_VERSION",
    "STOP_REPLICA_VERSION",
    "UPDATE_METADATA_VERSION",
    "RequestBatch",
]

LEADER_AND_ISR_VERSION = 7
UPDATE_METADATA_VERSION = 8
STOP_REPLICA_VERSION = 4

# SecurityProtocol ids (org.apache.kafka.common.security.auth.SecurityProtocol).
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

_LaiPartition = LeaderAndIsrRequest.LeaderAndIsrPartitionState  # type: ignore[attr-defined]
_LaiTopic = LeaderAndIsrRequest.LeaderAndIsrTopicState  # type: ignore[attr-defined]
_LaiLeader = LeaderAndIsrRequest.LeaderAndIsrLiveLeader  # type: ignore[attr-defined]
_UmPartition = UpdateMetadataRequest.UpdateMetadataPartitionState  # type: ignore[attr-defined]
_UmTopic = UpdateMetadataRequest.UpdateMetadataTopicState  # type: ignore[attr-defined]
_UmBroker = UpdateMetadataRequest.UpdateMetadataBroker  # type: ignore[attr-defined]
_UmEndpoint = UpdateMetadataRequest.UpdateMetadataEndpoint  # type: ignore[attr-defined]
_SrPartition = StopReplicaRequest.StopReplicaPartitionState  # type: ignore[attr-defined]
_SrTopic = StopReplicaRequest.StopReplicaTopicState  # type: ignore[attr-defined]


class RequestBatch:
    def __init__(self, ctx: ControllerContext, controller_id: int, inter_broker_listener: str) -> None:
        self._ctx = ctx
        self._controller_id = controller_id
        self._listener = inter_broker_listener
        self.leader_and_isr: dict[int, dict[TopicPartition, object]] = {}
        self.stop_replica: dict[int, dict[TopicPartition, tuple[int, bool]]] = {}
        self.update_metadata: dict[int, dict[TopicPartition, object]] = {}

    def is_empty(self) -> bool:
        return not (self.leader_and_isr or self.stop_replica or self.update_metadata)

    # -- adding (addLeaderAndIsrRequestForBrokers & co) -------------------------------------

    def add_leader_and_isr(
        self, broker_ids: Iterable[int], tp: TopicPartition, lic: LeaderIsrAndControllerEpoch,
        is_new: bool,
    ) -> None:
        lai = lic.leader_and_isr
        a = self._ctx.assignments[tp]
        for broker in broker_ids:
            if broker < 0:
                continue
            per_broker = self.leader_and_isr.setdefault(broker, {})
            prev = per_broker.get(tp)
            per_broker[tp] = _LaiPartition(
                partition_index=tp[1], controller_epoch=lic.controller_epoch, leader=lai.leader,
                leader_epoch=lai.leader_epoch, isr=list(lai.isr), partition_epoch=lai.partition_epoch,
                replicas=list(a.replicas), adding_replicas=list(a.adding),
                removing_replicas=list(a.removing),
                is_new=is_new or (prev is not None and prev.is_new),
                leader_recovery_state=lai.leader_recovery_state,
            )
        self.add_update_metadata(sorted(self._ctx.live_or_shutting_down_ids()), [tp])

    def add_stop_replica(self, broker_ids: Iterable[int], tp: TopicPartition, delete: bool) -> None:
        epoch = self._ctx.leader_epoch_for_stop_replica(tp)
        for broker in broker_ids:
            if broker < 0:
                continue
            per_broker = self.stop_replica.setdefault(broker, {})
            prev = per_broker.get(tp)
            per_broker[tp] = (epoch, delete or (prev is not None and prev[1]))

    def add_update_metadata(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]) -> None:
        """UpdateMetadata to ``broker_ids`` with the current state of ``partitions`` (may be none)."""
        states: dict[TopicPartition, object] = {}
        for tp in partitions:
            lic = self._ctx.leadership.get(tp)
            if lic is None:
                continue  # "Leader not yet assigned": Kafka skips the partition
            lai = lic.leader_and_isr
            replicas = self._ctx.replicas(tp)
            offline = [r for r in replicas if not self._ctx.is_replica_online(r)]
            if self._ctx.is_topic_queued_for_deletion(tp[0]):
                leader, leader_epoch, zk_version = LEADER_DURING_DELETE, 0, 0
            else:
                leader, leader_epoch, zk_version = lai.leader, lai.leader_epoch, lai.partition_epoch
            states[tp] = _UmPartition(
                partition_index=tp[1], controller_epoch=lic.controller_epoch, leader=leader,
                leader_epoch=leader_epoch, isr=list(lai.isr), zk_version=zk_version,
                replicas=list(replicas), offline_replicas=offline,
            )
        for broker in broker_ids:
            if broker >= 0:
                self.update_metadata.setdefault(broker, {}).update(states)

    # -- building (sendRequestsToBrokers) ------------------------------------------------------

    def build(self) -> list[BrokerRequest]:
        ctx = self._ctx
        targets = ctx.live_or_shutting_down_ids()
        out: list[BrokerRequest] = []
        for broker in sorted(self.leader_and_isr):
            if broker in targets:
                out.append(BrokerRequest(broker, LEADER_AND_ISR_VERSION,
                                         self._leader_and_isr(broker, self.leader_and_isr[broker])))
        live_brokers = self._live_brokers()
        for broker in sorted(self.update_metadata):
            if broker in targets:
                out.append(BrokerRequest(broker, UPDATE_METADATA_VERSION,
                                         self._update_metadata(broker, self.update_metadata[broker],
                                                               live_brokers)))
        for broker in sorted(self.stop_replica):
            if broker in targets:
                out.append(BrokerRequest(broker, STOP_REPLICA_VERSION,
                                         self._stop_replica(broker, self.stop_replica[broker])))
        self.leader_and_isr.clear()
        self.update_metadata.clear()
        self.stop_replica.clear()
        return out

    def _leader_and_isr(self, broker: int, states: dict[TopicPartition, object]) -> LeaderAndIsrRequest:
        ctx = self._ctx
        topics: dict[str, list[object]] = {}
        for tp in sorted(states):
            topics.setdefault(tp[0], []).append(states[tp])
        leader_ids = {s.leader for s in states.values()}  # type: ignore[attr-defined]
        leaders = []
        for b in sorted(leader_ids & ctx.live_or_shutting_down_ids()):
            info = ctx.brokers[b]
            ep = info.endpoint(self._listener) or (info.endpoints[0] if info.endpoints else None)
            if ep is not None:
                leaders.append(_LaiLeader(broker_id=b, host_name=ep.host, port=ep.port))
        return LeaderAndIsrRequest(
            controller_id=self._controller_id, is_k_raft_controller=False,
            controller_epoch=ctx.epoch, broker_epoch=ctx.broker_epoch(broker), type=0,
            topic_states=[
                _LaiTopic(topic_name=t, topic_id=ctx.topic_ids.get(t, ZERO_UUID), partition_states=ps)
                for t, ps in topics.items()
            ],
            live_leaders=leaders,
        )

    def _live_brokers(self) -> list[object]:
        out = []
        for b in sorted(self._ctx.brokers):
            info = self._ctx.brokers[b]
            out.append(_UmBroker(
                id=b,
                endpoints=[
                    _UmEndpoint(port=e.port, host=e.host, listener=e.listener,
                                security_protocol=SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0))
                    for e in info.endpoints
                ],
                rack=info.rack,
            ))
        return out

    def _update_metadata(
        self, broker: int, states: dict[TopicPartition, object], live_brokers: list[object]
    ) -> UpdateMetadataRequest:
        ctx = self._ctx
        topics: dict[str, list[object]] = {}
        for tp in sorted(states):
            topics.setdefault(tp[0], []).append(states[tp])
        return UpdateMetadataRequest(
            controller_id=self._controller_id, is_k_raft_controller=False, type=0,
            controller_epoch=ctx.epoch, broker_epoch=ctx.broker_epoch(broker),
            topic_states=[
                _UmTopic(topic_name=t, topic_id=ctx.topic_ids.get(t, ZERO_UUID), partition_states=ps)
                for t, ps in topics.items()
            ],
            live_brokers=live_brokers,
        )

    def _stop_replica(self, broker: int, states: dict[TopicPartition, tuple[int, bool]]) -> StopReplicaRequest:
        ctx = self._ctx
        topics: dict[str, list[object]] = {}
        for tp in sorted(states):
            epoch, delete = states[tp]
            topics.setdefault(tp[0], []).append(
                _SrPartition(partition_index=tp[1], leader_epoch=epoch, delete_partition=delete))
        return StopReplicaRequest(
            controller_id=self._controller_id, is_k_raft_controller=False,
            controller_epoch=ctx.epoch, broker_epoch=ctx.broker_epoch(broker),
            topic_states=[_SrTopic(topic_name=t, partition_states=ps) for t, ps in topics.items()],
        )

