"""``LocalTopicAdmin``: the ``TopicAdmin`` port of a single node (kbroker/server/services.py).  The
broker is the whole cluster, so it answers as Kafka's controller would and creates and
deletes its own logs.  ZooKeeper mode's implementation is kbroker/zk/zk_topic_admin.py.

CreateTopics, per topic, in the order Kafka's controller checks (ControllerApis,
ReplicationControlManager): a name listed twice INVALID_REQUEST; an illegal name or one
that collides with an existing topic on '.' vs '_' INVALID_TOPIC_EXCEPTION; an existing
topic TOPIC_ALREADY_EXISTS; manual assignments together with a partition count or
replication factor INVALID_REQUEST, assignments naming another broker
INVALID_REPLICA_ASSIGNMENT; num_partitions -1 = num.partitions, below 1
INVALID_PARTITIONS; replication_factor -1 = default.replication.factor, below 1 or above
the one broker INVALID_REPLICATION_FACTOR; unknown or invalid configs INVALID_CONFIG.
``validate_only`` checks without creating.  v5+ answers carry the partition count,
replication factor and the topic's configs.  The partitions' logs open on an executor
thread (kbroker/replica/topic_creation.py); a topic being created counts as existing for these
checks (Kafka's controller has it from the moment its records are written).  The answer
waits for the partitions up to ``timeout_ms``; past it the topic answers REQUEST_TIMED_OUT
(no message, partition count and configs reset) and the creation goes on, as Kafka's
ZooKeeper-mode DelayedCreatePartitions does; ``timeout_ms <= 0`` waits however long it
takes (see ``wait_for_creations``).  v7+ answers carry the new topic's id
(kbroker/replica/topic_ids.py; zero for ``validate_only``).

DeleteTopics: by name (v1-5) or name/id (v6); unknown names UNKNOWN_TOPIC_OR_PARTITION,
unknown ids UNKNOWN_TOPIC_ID, both given INVALID_REQUEST; the answer carries the topic's
id, as a KRaft controller's does; ``delete.topic.enable=false``
TOPIC_DELETION_DISABLED.  The topic leaves the broker's maps at once (on the event loop);
closing its logs, renaming the partition dirs ``...-delete`` (removed after
``log.segment.delete.delay.ms``) and rewriting the checkpoints take fsyncs, so they run on
an executor thread and the response waits for them (a client that deletes then re-creates
a topic finds the old dirs gone).  Creating a topic whose deletion has not finished yet
answers TOPIC_ALREADY_EXISTS "Topic 'x' is marked for deletion." as Kafka's ZooKeeper-mode
AdminZkClient does.

CreatePartitions, per topic, with the messages of Kafka's controller
(ReplicationControlManager.createPartitions): a name listed twice INVALID_REQUEST; an
unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count below the current one "The topic T
currently has N partition(s); M would not be an increase." and an equal one "Topic already
has N partition(s)." (both INVALID_PARTITIONS); manual assignments must name one replica,
this broker, per new partition (INVALID_REPLICA_ASSIGNMENT).  ``validate_only`` changes
nothing.  New partitions start empty and take the topic's configs; their logs open on an
executor thread and they appear together when all are open (a second CreatePartitions
meanwhile counts them already); ``timeout_ms`` as CreateTopics'.

Metadata's auto-creation waits for the creation with ``num.partitions`` (its logs open off
the event loop), so the answer already describes the new topic (Kafka answers
LEADER_NOT_AVAILABLE first and the client asks again; every client handles both, this saves
a round trip); a topic another request is creating, or whose deletion has not finished,
answers UNKNOWN_TOPIC_OR_PARTITION (Kafka's AutoTopicCreationManager for a topic in flight).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from kbroker.configs.json_file import answer_when_stored
from kbroker.configs.topic_configs import TopicConfigStore
from kbroker.replica.topic_admin_results import Result, created_topic_configs, failed
from kbroker.replica.topic_creation import creation_error_code
from wire.error_codes import ErrorCode
from wire.messages import (
    ZERO_UUID,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from wire.topic_names import invalid_reason, is_internal, unify_collision_chars

if TYPE_CHECKING:
    import uuid

    from kbroker.replica.broker_state import BrokerState

__all__ = ["LocalTopicAdmin", "wait_for_creations"]

TopicResult = CreatePartitionsResponse.CreatePartitionsTopicResult


class LocalTopicAdmin:
    def __init__(self, state: BrokerState, name_for_id: Callable[[uuid.UUID], str | None],
                 on_partitions_deleted: Callable[[list[tuple[str, int]]], None]) -> None:
        """``name_for_id``: a v6 DeleteTopics' topic id to its topic (None: unknown), as the
        broker's metadata resolves it (kbroker/metadata/metadata_view.py); ``on_partitions_deleted``:
        the group coordinator's (Kafka's GroupCoordinator.onPartitionsDeleted), told of the
        partitions a deletion removed so their committed offsets leave every group."""
        self._state = state
        self._name_for_id = name_for_id
        self._on_partitions_deleted = on_partitions_deleted

    # ------------------------------------------------------------ CreateTopics
    def _check(self, t: CreateTopicsRequest.CreatableTopic, dupes: set[str]
               ) -> tuple[Result | None, int, dict[str, str]]:
        """Validate one topic; returns (error result or None, partition count, config overrides)."""
        state = self._state
        name = t.name
        if name in dupes:
            return failed(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."), 0, {}
        why = invalid_reason(name)
        if why:
            return failed(name, ErrorCode.INVALID_TOPIC_EXCEPTION, why), 0, {}
        if name in state.topics or state.creations.creating(name):
            return failed(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."), 0, {}
        if state.topic_being_deleted(name):
            return failed(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion."), 0, {}
        unified = unify_collision_chars(name)
        for other in [*state.topics, *state.creations.topics_in_flight()]:
            if unify_collision_chars(other) == unified:
                return failed(name, ErrorCode.INVALID_TOPIC_EXCEPTION,
                              f"Topic '{name}' collides with existing topic: {other}"), 0, {}
        count = t.num_partitions
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                return failed(name, ErrorCode.INVALID_REQUEST,
                              "Both numPartitions or replicationFactor and replicasAssignments were set. "
                              "Both cannot be used at the same time."), 0, {}
            indexes = sorted(a.partition_index for a in t.assignments)
            if indexes != list(range(len(indexes))):
                return failed(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                              "Partitions should be numbered 0 to n-1 without gaps."), 0, {}
            for a in t.assignments:
                if a.broker_ids != [state.node_id]:
                    return failed(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                  f"Replica assignment {a.broker_ids} names brokers that are not "
                                  f"registered (only broker {state.node_id} is)."), 0, {}
            count = len(indexes)
        else:
            if count == -1:
                count = state.config["num.partitions"]
            if count < 1:
                return failed(name, ErrorCode.INVALID_PARTITIONS,
                              "Number of partitions was set to an invalid non-positive value."), 0, {}
            rf = t.replication_factor
            if rf == -1:
                rf = state.config["default.replication.factor"]
            if rf < 1:
                return failed(name, ErrorCode.INVALID_REPLICATION_FACTOR,
                              "Replication factor must be larger than 0, or -1 to use the default value."), 0, {}
            if rf > 1:
                return failed(name, ErrorCode.INVALID_REPLICATION_FACTOR,
                              f"Unable to replicate the partition {rf} time(s): The target replication "
                              f"factor of {rf} cannot be reached because only 1 broker(s) are registered."), 0, {}
        configs: dict[str, str] = {}
        for c in t.configs:
            if c.value is None:
                return failed(name, ErrorCode.INVALID_CONFIG,
                              f"Null value not supported for topic configs: {c.name}"), 0, {}
            configs[c.name] = c.value
        try:
            TopicConfigStore.validate(configs, state.config.log_config)
        except KeyError as e:
            return failed(name, ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {e.args[0]}"), 0, {}
        except ValueError as e:
            return failed(name, ErrorCode.INVALID_CONFIG, str(e)), 0, {}
        return None, count, configs

    def create_topics(self, req: CreateTopicsRequest, version: int
                      ) -> CreateTopicsResponse | Awaitable[CreateTopicsResponse]:
        state = self._state
        names = [t.name for t in req.topics]
        dupes = {n for n in names if names.count(n) > 1}
        results = []
        stored = []  # config override writes to wait for: Kafka answers once they are stored
        creating: list[tuple[Result, asyncio.Future]] = []
        for t in req.topics:
            refused, count, configs = self._check(t, dupes)
            if refused is not None:
                results.append(refused)
                continue
            r = Result(name=t.name, topic_id=ZERO_UUID if req.validate_only else state.topic_ids.get_or_assign(t.name),
                       error_code=ErrorCode.NONE, error_message=None)
            if not req.validate_only:
                # the name is taken from here on; the partitions open on an executor thread
                task = state.creations.start_topic(t.name, count, configs)
                if task is not None:
                    creating.append((r, task))
                if configs:
                    stored.append(state.topic_configs.durable())
            if version >= 5:
                r.num_partitions = count
                r.replication_factor = 1
                r.configs = created_topic_configs(state, configs)
            results.append(r)
        response = CreateTopicsResponse(throttle_time_ms=0, topics=results)
        if not creating:
            return answer_when_stored(response, stored)

        async def answer_when_created() -> CreateTopicsResponse:
            for r in await wait_for_creations(creating, req.timeout_ms):
                # KafkaApis.handleCreateTopicsResults: "Reset any configs in the response if Create failed"
                r.num_partitions, r.replication_factor = -1, -1
                if r.configs is not None:
                    r.configs = []
            for f in stored:
                await asyncio.wrap_future(f)
            return response

        return answer_when_created()

    # ------------------------------------------------------------ DeleteTopics
    def delete_topics(self, req: DeleteTopicsRequest, version: int
                      ) -> DeleteTopicsResponse | Awaitable[DeleteTopicsResponse]:
        state = self._state
        removed_topics = []
        if version >= 6:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        else:
            wanted = [(n, ZERO_UUID) for n in req.topic_names]
        # a topic still being created or grown is deleted once its partitions are open (Kafka
        # has it from the moment its records are written): else its late partitions would
        # outlive the deletion
        pending = [task for name, _ in wanted if name is not None
                   and (task := state.creations.in_flight(name)) is not None]
        if pending:
            async def delete_when_created() -> DeleteTopicsResponse:
                await asyncio.wait(pending)
                answer = self.delete_topics(req, version)
                return await answer if inspect.isawaitable(answer) else answer
            return delete_when_created()
        results = []
        R = DeleteTopicsResponse.DeletableTopicResult
        for name, topic_id in wanted:
            if name is not None and topic_id != ZERO_UUID:   # ControllerApis.deleteTopics
                results.append(R(name=name, topic_id=topic_id, error_code=ErrorCode.INVALID_REQUEST,
                                 error_message="You may not specify both topic name and topic id."))
                continue
            if name is None:   # v6 by id
                name = self._name_for_id(topic_id)
                if name is None:
                    code = ErrorCode.UNKNOWN_TOPIC_ID if topic_id != ZERO_UUID else ErrorCode.INVALID_REQUEST
                    results.append(R(name=None, topic_id=topic_id, error_code=code, error_message=None))
                    continue
            # the answer names the topic's id, as a KRaft controller's does
            topic_id = (state.topic_ids.id_of(name) if name in state.topics else None) or topic_id
            if not state.config["delete.topic.enable"]:
                code = ErrorCode.TOPIC_DELETION_DISABLED
            elif name not in state.topics:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif is_internal(name):
                code = ErrorCode.INVALID_REQUEST
            else:
                partitions = state.topics[name].partitions
                removed_topics.append((name, state.delete_topic(name)))
                # Kafka completes the DelayedFetches watching a removed partition at once
                # (ReplicaManager.stopPartitions): parked fetches answer UNKNOWN_TOPIC_OR_PARTITION now.
                for index in range(partitions):
                    state.fetch_waiters.notify((name, index))
                # GroupCoordinator.onPartitionsDeleted: committed offsets of the topic leave every group
                self._on_partitions_deleted([(name, index) for index in range(partitions)])
                code = ErrorCode.NONE
            results.append(R(name=name, topic_id=topic_id, error_code=code, error_message=None))
        response = DeleteTopicsResponse(throttle_time_ms=0, responses=results)
        if not removed_topics:
            return response

        def finish() -> None:  # on an executor thread: fsyncs, renames, checkpoint writes
            for name, removed in removed_topics:
                state.finish_topic_deletion(name, removed)

        stored = state.topic_configs.durable()  # the deleted topics' overrides are gone from the file

        async def answer_when_finished() -> DeleteTopicsResponse:
            await asyncio.get_running_loop().run_in_executor(None, finish)
            await asyncio.wrap_future(stored)
            return response

        return answer_when_finished()

    # ------------------------------------------------------------ CreatePartitions
    def create_partitions(self, req: CreatePartitionsRequest
                          ) -> CreatePartitionsResponse | Awaitable[CreatePartitionsResponse]:
        state = self._state
        names = Counter(t.name for t in req.topics)
        results = []
        growing = []
        for t in req.topics:
            code, message = self._check_partitions(t, names[t.name] > 1)
            result = TopicResult(name=t.name, error_code=code, error_message=message)
            if code == ErrorCode.NONE and not req.validate_only:
                # the new partitions open on an executor thread (kbroker/replica/topic_creation.py)
                task = state.creations.start_partitions(t.name, t.count)
                if task is not None:
                    growing.append((result, task))
            results.append(result)
        response = CreatePartitionsResponse(throttle_time_ms=0, results=results)
        if not growing:
            return response

        async def answer_when_added() -> CreatePartitionsResponse:
            await wait_for_creations(growing, req.timeout_ms)
            return response

        return answer_when_added()

    def _check_partitions(self, t: CreatePartitionsRequest.CreatePartitionsTopic,
                          duplicate: bool) -> tuple[ErrorCode, str | None]:
        state = self._state
        if duplicate:
            return ErrorCode.INVALID_REQUEST, "Duplicate topic name."
        info = state.topics.get(t.name)
        if info is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        # an unfinished CreatePartitions has grown it already (Kafka's controller has the
        # partitions from the moment their records are written)
        current = max(info.partitions, state.creations.growing_to(t.name) or 0)
        if t.count < current:
            return (ErrorCode.INVALID_PARTITIONS,
                    f"The topic {t.name} currently has {current} partition(s); {t.count} would not be an increase.")
        if t.count == current:
            return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
        if t.assignments is not None:
            added = t.count - current
            if len(t.assignments) != added:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Attempted to add {added} additional partition(s), but only "
                        f"{len(t.assignments)} assignment(s) were specified.")
            for a in t.assignments:
                if len(a.broker_ids) != 1:
                    return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"The manual partition assignment includes a partition with {len(a.broker_ids)} "
                            "replica(s), but this is not consistent with previous partitions, which have 1 replica(s).")
                if a.broker_ids[0] != state.node_id:
                    return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"The manual partition assignment includes broker {a.broker_ids[0]}, but no such "
                            "broker is registered.")
        return ErrorCode.NONE, None

    # ------------------------------------------------------------ Metadata's auto-creation
    def auto_create(self, names: list[str]) -> Mapping[str, int] | Awaitable[Mapping[str, int]]:
        state = self._state
        # the partitions open off the event loop (kbroker/replica/topic_creation.py); a topic whose
        # creation or deletion is under way: UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
        # AutoTopicCreationManager answers for a topic in flight
        busy = {name: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for name in names
                if state.creations.creating(name) or state.topic_being_deleted(name)}
        started = {name: task for name in names if name not in busy
                   if (task := state.creations.start_topic(name, state.config["num.partitions"])) is not None}
        if not started:
            return busy

        async def when_created() -> Mapping[str, int]:
            await asyncio.wait(started.values())
            failures = {name: creation_error_code(exc) for name, task in started.items()
                        if (exc := task.exception()) is not None}
            return {**busy, **failures}
        return when_created()


async def wait_for_creations(creating: list[tuple[Any, asyncio.Future]], timeout_ms: int) -> list[Any]:
    """Wait up to ``timeout_ms`` for the creations; a result whose creation has not ended
    by then answers REQUEST_TIMED_OUT (no message) while the creation goes on, one that
    failed UNKNOWN_SERVER_ERROR (KAFKA_STORAGE_ERROR for a log dir's I/O error) with the failure (Kafka's ZooKeeper-mode
    DelayedCreatePartitions: the answer waits until every new partition has a leader or
    the request's timeout passes).  ``timeout_ms <= 0`` waits for the creation however long
    it takes: Kafka's ZooKeeper mode answers such a request at once, before the partitions
    have leaders, but confluent-kafka sends 0 by default and a client that produces right
    after its CreateTopics would then meet UNKNOWN_TOPIC_OR_PARTITION (kbroker's creation
    was synchronous before, and callers rely on a created topic being usable).
    Returns the results given an error."""
    await asyncio.wait([task for _, task in creating], timeout=timeout_ms / 1000 if timeout_ms > 0 else None)
    failed_results = []
    for r, task in creating:
        if not task.done():
            r.error_code, r.error_message = ErrorCode.REQUEST_TIMED_OUT, None
        elif task.exception() is not None:
            exc = task.exception()
            r.error_code = creation_error_code(exc)
            r.error_message = str(exc)
        else:
            continue
        failed_results.append(r)
    return failed_results
