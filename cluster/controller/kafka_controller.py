"""The controller as a pure state machine: Kafka's ``KafkaController`` (ZooKeeper mode, 3.x).

``Controller.handle(event)`` runs one event as Kafka's single controller thread runs one
``ControllerEvent`` and returns a ``ControllerOutput``: the fenced ZooKeeper writes to apply
(in order), then the requests to send (see ``commands`` for the runner's contract).

Inactive (before ``BecameController``, after a resignation) it ignores events, answering
ControlledShutdown and elections with NOT_CONTROLLER as Kafka does.  Any failed write
(``ZkWriteResult`` with an error) makes it resign: the epoch check failing means another
controller exists (ControllerMovedException); any other failure means its context no
longer matches ZooKeeper.  Resigning drops the context; the runner deletes nothing - the
next elected controller (maybe this broker again) rebuilds everything from ZooKeeper.

What each event does (the Kafka method it ports):

* ``BecameController`` (``onControllerFailover``): load the context, give topics without an
  id one (topic znode rewrite), UpdateMetadata to every broker, replica state machine
  startup (LeaderAndIsr of every partition to its live replicas; replicas on dead brokers
  leave the ISR), partition startup (elect where the leader is gone, initialise partitions
  without state), resume topic deletion, run a pending ``/admin/preferred_replica_election``.
* ``BrokerChange`` (``processBrokerChange``): new, dead and bounced (same id, newer broker
  epoch) brokers; ``onBrokerStartup`` / ``onBrokerFailure``.
* ``TopicChange`` / ``PartitionModifications``: ``onNewPartitionCreation``.
* ``TopicDeletion`` / ``TopicDeletionStopReplicaResult``: ``topic_deletion``.
* ``ControlledShutdown`` (``doControlledShutdown``), ``ReplicaLeaderElection``
  (``processReplicaLeaderElection``), ``AutoLeaderRebalance``
  (``checkAndTriggerAutoLeaderRebalance``).
* ``AlterPartition`` (``processAlterPartition``): a leader's ISR change, validated and
  written (``alter_partition``); a partition being reassigned may then complete.
* ``ApiPartitionReassignment`` / ``ZkPartitionReassignment`` / ``ListPartitionReassignments``
  (``processApiPartitionReassignment``, ``processZkPartitionReassignment``,
  ``processListPartitionReassignments``): ``reassignment``.
* ``TopicUncleanLeaderElectionEnable`` (``processTopicUncleanLeaderElectionEnable``): the
  topic's offline partitions are elected again, now allowed to pick an out-of-sync replica.

Not ported yet: log dir failures, broker feature checks and the per-broker ``/brokers/ids/<id>`` modification
handler.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

from cluster import znodes
from cluster.controller import reassignment, topic_deletion
from cluster.controller.alter_partition import (
    alter_partitions,
    committed_partitions,
    not_controller_response,
)
from cluster.controller.commands import (
    ControlledShutdownResult,
    ControllerOutput,
    ElectionOutcome,
)
from cluster.controller.config import ControllerConfig
from cluster.controller.context import (
    ControllerContext,
    LeaderIsrAndControllerEpoch,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from cluster.controller.events import (
    AlterPartition,
    ApiPartitionReassignment,
    AutoLeaderRebalance,
    BecameController,
    BrokerChange,
    ControlledShutdown,
    ElectionTrigger,
    ElectionType,
    Event,
    ListPartitionReassignments,
    PartitionModifications,
    ReplicaLeaderElection,
    Resign,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResult,
    TopicUncleanLeaderElectionEnable,
    ZkPartitionReassignment,
    ZkWriteResult,
)
from cluster.controller.partition_state_machine import (
    ElectionFailure,
    Strategy,
    handle_state_changes,
    trigger_online_partition_state_change,
)
from cluster.controller.replica_state_machine import (
    handle_replica_state_changes,
    startup_replica_states,
)
from cluster.controller.step import Step
from cluster.coordination import Delete, NoNodeError, SetData
from cluster.election import LeaderAndIsr, preferred_replica_election
from cluster.metadata_image import BrokerInfo
from wire.error_codes import ErrorCode

__all__ = ["Controller"]


class Controller:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.context: ControllerContext | None = None
        self._write_ids = itertools.count(1)

    @property
    def is_active(self) -> bool:
        return self.context is not None

    def handle(self, event: Event) -> ControllerOutput:
        if isinstance(event, BecameController):
            return self._became_controller(event)
        if isinstance(event, (Resign, ZkWriteResult)):
            if isinstance(event, ZkWriteResult) and event.error is None:
                return ControllerOutput()
            was_active = self.context is not None
            self.context = None
            return ControllerOutput(resigned=was_active)
        ctx = self.context
        if ctx is None:
            return self._inactive(event)
        step = Step(ctx, self.config, lambda: next(self._write_ids))
        if isinstance(event, BrokerChange):
            self._broker_change(step, event.brokers)
        elif isinstance(event, TopicChange):
            self._topic_change(step, event)
        elif isinstance(event, PartitionModifications):
            self._partition_modifications(step, event)
        elif isinstance(event, TopicDeletion):
            self._topic_deletion(step, event.topics)
        elif isinstance(event, TopicDeletionStopReplicaResult):
            self._stop_replica_result(step, event)
        elif isinstance(event, ControlledShutdown):
            step.out.controlled_shutdown = self._controlled_shutdown(step, event)
        elif isinstance(event, ReplicaLeaderElection):
            step.out.elections = self._replica_leader_election(step, event)
        elif isinstance(event, AutoLeaderRebalance):
            self._auto_rebalance(step)
        elif isinstance(event, AlterPartition):
            step.out.alter_partition = alter_partitions(step, event.request, event.version)
            # processAlterPartition: an ISR that grew may complete a reassignment.
            for tp in sorted(committed_partitions(step.out.alter_partition, ctx.topic_ids, event.version)):
                reassignment.maybe_complete(step, tp)
        elif isinstance(event, ApiPartitionReassignment):
            step.out.reassignments = reassignment.api_reassignment(step, event.reassignments)
        elif isinstance(event, ZkPartitionReassignment):
            reassignment.zk_reassignment(step, event.partitions)
        elif isinstance(event, ListPartitionReassignments):
            step.out.listed = dict(reassignment.list_reassignments(step, event.partitions))
        elif isinstance(event, TopicUncleanLeaderElectionEnable):
            # processTopicUncleanLeaderElectionEnable: the config reads true by now.
            trigger_online_partition_state_change(step, event.topic)
        else:  # pragma: no cover - Event is closed
            raise TypeError(f"unknown controller event {event!r}")
        return step.output()

    @staticmethod
    def _inactive(event: Event) -> ControllerOutput:
        out = ControllerOutput()
        if isinstance(event, ControlledShutdown):
            out.controlled_shutdown = ControlledShutdownResult(
                ErrorCode.NOT_CONTROLLER, error_message="Controller moved to another broker. "
                "Aborting controlled shutdown")
        elif isinstance(event, ReplicaLeaderElection) and event.partitions is not None:
            out.elections = {tp: ElectionOutcome(ErrorCode.NOT_CONTROLLER) for tp in event.partitions}
        elif isinstance(event, AlterPartition):
            out.alter_partition = not_controller_response()
        elif isinstance(event, (ApiPartitionReassignment, ListPartitionReassignments)):
            out.reassignment_error = ErrorCode.NOT_CONTROLLER
        return out

    # -- failover ------------------------------------------------------------------------

    def _became_controller(self, event: BecameController) -> ControllerOutput:
        ctx = ControllerContext(event.epoch, event.epoch_zk_version)
        self.context = ctx
        step = Step(ctx, self.config, lambda: next(self._write_ids))
        ctx.brokers = dict(event.brokers)
        ctx.all_topics = set(event.topics)
        self._add_topics(step, event.topics)
        for tp, (state, zk_version) in event.partition_states.items():
            if tp in ctx.assignments:
                ctx.leadership[tp] = LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(state.leader, state.leader_epoch, state.isr,
                                 state.leader_recovery_state, zk_version),
                    state.controller_epoch)
        ctx.partitions_being_reassigned = {tp for tp, a in ctx.assignments.items() if a.is_being_reassigned}
        # fetchTopicDeletionsInProgress: a topic with a replica on a dead broker, or being
        # reassigned, must wait.
        with_offline = {t for (t, _), a in ctx.assignments.items()
                        if any(not ctx.is_replica_online(r) for r in a.replicas)}
        topic_deletion.init(step, event.topics_to_delete,
                            with_offline | {t for t, _ in ctx.partitions_being_reassigned})
        step.batch.add_update_metadata(sorted(ctx.live_or_shutting_down_ids()), [])
        step.flush()
        startup_replica_states(step)
        # PartitionStateMachine.startup: initializePartitionState, then elect.
        for tp in ctx.all_partitions():
            lic = ctx.leadership.get(tp)
            if lic is None:
                ctx.partition_states[tp] = PartitionState.NEW
            elif ctx.is_replica_online(lic.leader_and_isr.leader):
                ctx.partition_states[tp] = PartitionState.ONLINE
            else:
                ctx.partition_states[tp] = PartitionState.OFFLINE
        trigger_online_partition_state_change(step)
        # initializePartitionReassignments: new ones in /admin/reassign_partitions, then
        # those in progress (topic znode) that it does not supersede.
        started = reassignment.zk_reassignment(step, event.zk_reassignment)
        reassignment.maybe_resume(step, lambda tp, _: tp not in started)
        if self.config.delete_topic_enable:
            topic_deletion.resume_deletions(step)
        if event.preferred_election is not None:
            self._replica_leader_election(step, ReplicaLeaderElection(
                event.preferred_election, ElectionType.PREFERRED, ElectionTrigger.ZK))
        return step.output()

    def _add_topics(self, step: Step, topics: Mapping[str, znodes.TopicAssignment]) -> None:
        """``processTopicIds`` + the assignments of topics new to the context."""
        ctx = step.ctx
        for topic in sorted(topics):
            ta = topics[topic]
            topic_id = ta.topic_id
            if topic_id is None:
                # setTopicIds: a 2.8+ controller gives every topic an id (any version).
                topic_id = self.config.new_topic_id()
                data = znodes.encode_topic(znodes.TopicAssignment(
                    ta.partitions, topic_id, ta.adding_replicas, ta.removing_replicas))
                step.write([SetData(znodes.topic_path(topic), data, -1)])
            ctx.topic_ids[topic] = topic_id
            for p, replicas in ta.partitions.items():
                ctx.assignments[(topic, p)] = ReplicaAssignment(
                    tuple(replicas), tuple(ta.adding_replicas.get(p, ())),
                    tuple(ta.removing_replicas.get(p, ())))

    # -- brokers -------------------------------------------------------------------------

    def _broker_change(self, step: Step, current: Mapping[int, BrokerInfo]) -> None:
        ctx = step.ctx
        now = dict(current)
        known = ctx.live_or_shutting_down_ids()
        new = sorted(set(now) - known)
        dead = sorted(known - set(now))
        bounced = sorted(b for b in set(now) & known if now[b].epoch > ctx.brokers[b].epoch)
        if new:
            for b in new:
                ctx.brokers[b] = now[b]
            self._on_broker_startup(step, new)
        if bounced:
            for b in bounced:
                del ctx.brokers[b]
            self._on_broker_failure(step, bounced)
            for b in bounced:
                ctx.brokers[b] = now[b]
            self._on_broker_startup(step, bounced)
        if dead:
            for b in dead:
                del ctx.brokers[b]
            self._on_broker_failure(step, dead)

    def _on_broker_startup(self, step: Step, new: list[int]) -> None:
        ctx = step.ctx
        existing = sorted(ctx.live_or_shutting_down_ids() - set(new))
        step.batch.add_update_metadata(existing, [])
        step.flush()
        with_leaders = [tp for tp in sorted(ctx.leadership) if not ctx.is_topic_queued_for_deletion(tp[0])]
        step.batch.add_update_metadata(new, with_leaders)
        step.flush()
        replicas = ctx.replicas_on_brokers(new)
        handle_replica_state_changes(step, replicas, ReplicaState.ONLINE)
        trigger_online_partition_state_change(step)
        reassignment.maybe_resume(step, lambda _, a: any(r in new for r in a.target))
        for_deletion = {r[0] for r in replicas if ctx.is_topic_queued_for_deletion(r[0])}
        if for_deletion:
            topic_deletion.resume_deletion_for_topics(step, for_deletion)

    def _on_broker_failure(self, step: Step, dead: list[int]) -> None:
        ctx = step.ctx
        ctx.shutting_down -= set(dead)
        self._on_replicas_become_offline(step, ctx.replicas_on_brokers(dead))

    def _on_replicas_become_offline(self, step: Step, replicas: list[tuple[str, int, int]]) -> None:
        ctx = step.ctx
        for_deletion = [r for r in replicas if ctx.is_topic_queued_for_deletion(r[0])]
        not_for_deletion = [r for r in replicas if not ctx.is_topic_queued_for_deletion(r[0])]
        handle_state_changes(step, ctx.partitions_with_offline_leader(), PartitionState.OFFLINE)
        results = trigger_online_partition_state_change(step)
        handle_replica_state_changes(step, not_for_deletion, ReplicaState.OFFLINE)
        if for_deletion:
            topic_deletion.fail_replica_deletion(step, for_deletion)
        if not not_for_deletion and all(isinstance(r, ElectionFailure) for r in results.values()):
            step.batch.add_update_metadata(sorted(ctx.live_or_shutting_down_ids()), [])
            step.flush()

    # -- topics --------------------------------------------------------------------------

    def _topic_change(self, step: Step, event: TopicChange) -> None:
        ctx = step.ctx
        topics = set(event.topics)
        new = topics - ctx.all_topics
        deleted = ctx.all_topics - topics
        ctx.all_topics = set(topics)
        for topic in sorted(deleted):
            ctx.remove_topic(topic)
        self._add_topics(step, {t: event.topics[t] for t in new})
        partitions = [tp for t in sorted(new) for tp in ctx.partitions_for_topic(t)]
        if partitions:
            self._on_new_partition_creation(step, partitions)

    def _partition_modifications(self, step: Step, event: PartitionModifications) -> None:
        ctx = step.ctx
        topic = event.topic
        if topic not in ctx.all_topics:
            return
        added = {p: r for p, r in event.assignment.partitions.items() if (topic, p) not in ctx.assignments}
        if ctx.is_topic_queued_for_deletion(topic):
            if added:
                # restorePartitionReplicaAssignment: the topic keeps the partitions it had.
                kept = {p: ctx.replicas((topic, p)) for t, p in ctx.partitions_for_topic(topic)}
                data = znodes.encode_topic(znodes.TopicAssignment(kept, ctx.topic_ids.get(topic)))
                step.write([SetData(znodes.topic_path(topic), data, -1)])
            return
        if added:
            for p, replicas in added.items():
                ctx.assignments[(topic, p)] = ReplicaAssignment(tuple(replicas))
            self._on_new_partition_creation(step, sorted((topic, p) for p in added))

    def _on_new_partition_creation(self, step: Step, partitions: list[TopicPartition]) -> None:
        ctx = step.ctx
        handle_state_changes(step, partitions, PartitionState.NEW)
        handle_replica_state_changes(step, ctx.replicas_for_partitions(partitions), ReplicaState.NEW)
        handle_state_changes(step, partitions, PartitionState.ONLINE, Strategy.OFFLINE)
        handle_replica_state_changes(step, ctx.replicas_for_partitions(partitions), ReplicaState.ONLINE)

    def _topic_deletion(self, step: Step, queued: Iterable[str]) -> None:
        ctx = step.ctx
        to_delete = set(queued)
        non_existent = to_delete - ctx.all_topics
        if non_existent:
            topic_deletion.delete_topic_deletion_entries(step, non_existent)
        to_delete -= non_existent
        if self.config.delete_topic_enable:
            if to_delete:
                topic_deletion.enqueue_topics_for_deletion(step, to_delete)
        else:
            topic_deletion.delete_topic_deletion_entries(step, to_delete)

    def _stop_replica_result(self, step: Step, event: TopicDeletionStopReplicaResult) -> None:
        ctx = step.ctx
        # Only replicas this controller asked to delete count (Kafka filters the response to
        # partitions of topics being deleted that the request deleted).
        asked = {tp: e for tp, e in event.partition_errors.items()
                 if ctx.replica_states.get((tp[0], tp[1], event.broker_id)) is ReplicaState.DELETION_STARTED}
        if event.error_code != 0:
            failed = set(asked)
        else:
            failed = {tp for tp, e in asked.items() if e != 0}
        topic_deletion.fail_replica_deletion(step, [(t, p, event.broker_id) for t, p in sorted(failed)])
        done = sorted(set(asked) - failed)
        if done:
            topic_deletion.complete_replica_deletion(step, [(t, p, event.broker_id) for t, p in done])

    # -- controlled shutdown -------------------------------------------------------------

    def _controlled_shutdown(self, step: Step, event: ControlledShutdown) -> ControlledShutdownResult:
        ctx = step.ctx
        b = event.broker_id
        if event.broker_epoch != -1 and b in ctx.brokers and event.broker_epoch < ctx.broker_epoch(b):
            return ControlledShutdownResult(
                ErrorCode.STALE_BROKER_EPOCH,
                error_message=f"Received controlled shutdown request from an old broker epoch "
                f"{event.broker_epoch} for broker {b}. Current broker epoch is {ctx.broker_epoch(b)}.")
        if b not in ctx.brokers:
            return ControlledShutdownResult(ErrorCode.BROKER_NOT_AVAILABLE,
                                            error_message=f"Broker id {b} does not exist.")
        ctx.shutting_down.add(b)
        to_act_on = [
            tp for tp in ctx.partitions_on_broker(b)
            if len(ctx.replicas(tp)) > 1 and tp in ctx.leadership
            and not ctx.is_topic_queued_for_deletion(tp[0])
        ]
        led = [tp for tp in to_act_on if ctx.leadership[tp].leader_and_isr.leader == b]
        followed = [tp for tp in to_act_on if ctx.leadership[tp].leader_and_isr.leader != b]
        handle_state_changes(step, led, PartitionState.ONLINE, Strategy.CONTROLLED_SHUTDOWN)
        for tp in followed:
            step.batch.add_stop_replica([b], tp, delete=False)
        step.flush()
        handle_replica_state_changes(step, [(t, p, b) for t, p in followed], ReplicaState.OFFLINE)
        return ControlledShutdownResult(ErrorCode.NONE, tuple(ctx.partition_leaders_on_broker(b)))

    # -- elections -----------------------------------------------------------------------

    def _replica_leader_election(
        self, step: Step, event: ReplicaLeaderElection
    ) -> dict[TopicPartition, ElectionOutcome]:
        ctx = step.ctx
        requested = set(ctx.all_partitions()) if event.partitions is None else set(event.partitions)
        known = {tp for tp in requested if tp in ctx.assignments}
        unknown = requested - known
        being_deleted = {tp for tp in known if ctx.is_topic_queued_for_deletion(tp[0])}
        live = known - being_deleted
        electable: set[TopicPartition] = set()
        for tp in live:
            lic = ctx.leadership.get(tp)
            leader = -1 if lic is None else lic.leader_and_isr.leader
            if event.election_type is ElectionType.PREFERRED:
                needed = leader != ctx.replicas(tp)[0]
            else:
                needed = leader == -1 or leader not in ctx.live_broker_ids()
            if needed:
                electable.add(tp)
        results = self._on_replica_election(step, sorted(electable), event.election_type, event.trigger)
        failed_code = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                       if event.election_type is ElectionType.PREFERRED
                       else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
        out: dict[TopicPartition, ElectionOutcome] = {}
        for tp in sorted(electable):
            r = results.get(tp)
            if isinstance(r, LeaderAndIsr):
                out[tp] = ElectionOutcome(ErrorCode.NONE, r.leader)
            elif isinstance(r, ElectionFailure):
                out[tp] = ElectionOutcome(failed_code, error_message=r.message)
            elif tp in ctx.leadership:  # a New partition that was initialised instead
                out[tp] = ElectionOutcome(ErrorCode.NONE, ctx.leadership[tp].leader_and_isr.leader)
            else:
                out[tp] = ElectionOutcome(failed_code)
        for tp in live - electable:
            out[tp] = ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED)
        for tp in being_deleted:
            out[tp] = ElectionOutcome(ErrorCode.INVALID_TOPIC_EXCEPTION, error_message="The topic is being deleted")
        for tp in unknown:
            out[tp] = ElectionOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      error_message="The partition does not exist.")
        return dict(sorted(out.items()))

    def _on_replica_election(
        self, step: Step, partitions: list[TopicPartition], election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> dict[TopicPartition, LeaderAndIsr | ElectionFailure]:
        if election_type is ElectionType.PREFERRED:
            strategy = Strategy.PREFERRED
        else:
            # Unclean only when an admin asked for it (Kafka is conservative here).
            strategy = Strategy.OFFLINE_ALLOW_UNCLEAN if trigger is ElectionTrigger.ADMIN else Strategy.OFFLINE
        results = handle_state_changes(step, partitions, PartitionState.ONLINE, strategy)
        if trigger is ElectionTrigger.ZK:
            # removePartitionsFromPreferredReplicaElection: the request znode is consumed.
            step.write([Delete(znodes.PREFERRED_REPLICA_ELECTION_PATH)], (NoNodeError,))
        return results

    def _auto_rebalance(self, step: Step) -> None:
        """``checkAndTriggerAutoLeaderRebalance``: per preferred broker, if more than
        ``leader.imbalance.per.broker.percentage`` of its partitions are led by another
        broker, move back those whose preferred replica can lead."""
        ctx = step.ctx
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp in ctx.all_partitions():
            if not ctx.is_topic_queued_for_deletion(tp[0]) and ctx.replicas(tp):
                by_preferred.setdefault(ctx.replicas(tp)[0], []).append(tp)
        for broker in sorted(by_preferred):
            parts = by_preferred[broker]
            not_preferred = [tp for tp in parts if tp in ctx.leadership
                             and ctx.leadership[tp].leader_and_isr.leader != broker]
            ratio = len(not_preferred) / len(parts)
            if ratio > self.config.leader_imbalance_per_broker_percentage / 100:
                candidates = [tp for tp in not_preferred if self._can_preferred_replica_lead(tp)]
                self._on_replica_election(step, candidates, ElectionType.PREFERRED, ElectionTrigger.AUTO)

    def _can_preferred_replica_lead(self, tp: TopicPartition) -> bool:
        ctx = self.context
        assert ctx is not None
        assignment = ctx.replicas(tp)
        live = {r for r in assignment if ctx.is_replica_online(r)}
        return preferred_replica_election(assignment, ctx.leadership[tp].leader_and_isr, live) is not None
