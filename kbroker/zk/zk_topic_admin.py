"""``ZkTopicAdmin``: the ``TopicAdmin`` port in ZooKeeper mode (kbroker/server/services.py):
CreateTopics (19), DeleteTopics (20), CreatePartitions (37) and Metadata's auto-creation as
Kafka 2.x-3.x ZooKeeper mode served them (KafkaApis + ZkAdminManager).  A single node's
implementation is kbroker/replica/local_topic_admin.py.

* Only the controller serves CreateTopics, DeleteTopics and CreatePartitions; any other
  broker answers NOT_CONTROLLER per topic (the client refreshes its metadata and goes to
  the controller).
* CreateTopics checks in Kafka's order (duplicate name INVALID_REQUEST; illegal name or '.'
  vs '_' collision INVALID_TOPIC_EXCEPTION; existing TOPIC_ALREADY_EXISTS, also "marked
  for deletion"; assignments with a count or factor INVALID_REQUEST, naming brokers not
  registered INVALID_REPLICA_ASSIGNMENT; partitions < 1 INVALID_PARTITIONS; replication
  factor < 1 or above the live brokers INVALID_REPLICATION_FACTOR; configs INVALID_CONFIG),
  then writes ``/config/topics/<t>`` and ``/brokers/topics/<t>`` (kbroker/zk/zk_admin.py).
  The controller's own watch elects the leaders; the answer waits until every partition
  has a leader in this broker's metadata cache or ``timeout_ms`` passes (Kafka's
  DelayedCreatePartitions: REQUEST_TIMED_OUT then; ``timeout_ms`` <= 0 answers at once).
* DeleteTopics queues ``/admin/delete_topics/<t>`` and waits until the topic has left the
  metadata cache or ``timeout_ms`` (DelayedDeleteTopics: REQUEST_TIMED_OUT).
* Metadata's auto-creation (v1-3 always, v4+ when asked, ``auto.create.topics.enable``):
  the broker writes the topic znodes itself as Kafka 2.x's ZooKeeper mode did
  (AdminZkClient; any broker may) with ``num.partitions`` and
  ``default.replication.factor``, and answers LEADER_NOT_AVAILABLE for it; the client asks
  again once the controller has elected leaders.  Too few live brokers for the replication
  factor: INVALID_REPLICATION_FACTOR for that topic.  If ZooKeeper is not back within
  ``zookeeper.connection.timeout.ms`` the topic still answers LEADER_NOT_AVAILABLE (the
  client asks again) where Kafka answered the ZooKeeper timeout as UNKNOWN_SERVER_ERROR.
* Their ZooKeeper calls go through kbroker/runtime/zk_retry.py: a connection lost or a session
  expired meanwhile (a ZooKeeper restart) is waited out and the call made again, as
  KafkaZkClient retries until connected, for at most the request's ``timeout_ms`` (if
  positive, else ``zookeeper.connection.timeout.ms``); a topic whose calls did not get
  through by then answers REQUEST_TIMED_OUT (retriable), never UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cluster import znodes
from cluster.assignment import AdminOperationError
from cluster.coordination import NoNodeError
from kbroker.configs.topic_configs import TopicConfigStore
from kbroker.replica.topic_admin_results import Result, created_topic_configs, failed
from kbroker.runtime.zk_retry import ZkUnavailableError, deadline, until_connected
from kbroker.zk import zk_admin
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
    from cluster.coordination import Coordination
    from cluster.metadata_image import BrokerInfo
    from kbroker.metadata.metadata_cache import MetadataCache
    from kbroker.replica.broker_state import BrokerState
    from kbroker.zk.controller_runner import ControllerRunner

__all__ = ["ZK_TIMEOUT_MESSAGE", "ZkTopicAdmin"]

# The message of a topic whose ZooKeeper calls did not get through in time (REQUEST_TIMED_OUT).
ZK_TIMEOUT_MESSAGE = "Timed out waiting for the ZooKeeper connection."


async def _existing(zk: Any, name: str, by: float) -> tuple[bool, bool]:
    """(the topic's znode exists, it is marked for deletion), read through a lost connection."""
    async def read() -> tuple[bool, bool]:
        if await zk.exists(znodes.topic_path(name)) is None:
            return False, False
        return True, await zk.exists(znodes.delete_topic_path(name)) is not None

    return await until_connected(read, by, f"CreateTopics' check of {name}")


def _not_controller_create(req: CreateTopicsRequest) -> CreateTopicsResponse:
    return CreateTopicsResponse(throttle_time_ms=0, topics=[
        failed(t.name, ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.")
        for t in req.topics])


class ZkTopicAdmin:
    def __init__(self, zk: Coordination, cache: MetadataCache, runner: ControllerRunner,
                 live_brokers: Callable[[], list[BrokerInfo]], state: BrokerState) -> None:
        """``live_brokers``: where to place new replicas (the controller's own view while this
        broker is it, kbroker/zk/cluster_runtime.py); ``state``: the effective config, read per
        request, and the config levels a created topic's configs come from."""
        self._zk = zk
        self._cache = cache
        self._runner = runner
        self._live_brokers = live_brokers
        self._state = state

    async def _plan(self, t: CreateTopicsRequest.CreatableTopic, dupes: set[str],
                    by: float) -> tuple[Result | None, dict[int, list[int]], dict[str, str]]:
        """Kafka's checks of one topic; ZkUnavailableError if ZooKeeper did not answer by ``by``."""
        name = t.name
        if name in dupes:
            return failed(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."), {}, {}
        why = invalid_reason(name)
        if why:
            return failed(name, ErrorCode.INVALID_TOPIC_EXCEPTION, why), {}, {}
        exists, marked = await _existing(self._zk, name, by)
        if exists:
            if marked:
                return failed(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion."), {}, {}
            return failed(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."), {}, {}
        unified = unify_collision_chars(name)
        for other in self._cache.topic_names():
            if unify_collision_chars(other) == unified:
                return failed(name, ErrorCode.INVALID_TOPIC_EXCEPTION,
                              f"Topic '{name}' collides with existing topic: {other}"), {}, {}
        live = self._live_brokers()
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                return failed(name, ErrorCode.INVALID_REQUEST,
                              "Both numPartitions or replicationFactor and replicasAssignments were set. "
                              "Both cannot be used at the same time."), {}, {}
            assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            if sorted(assignment) != list(range(len(assignment))):
                return failed(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                              "Partitions should be numbered 0 to n-1 without gaps."), {}, {}
            live_ids = {b.broker_id for b in live}
            unknown = sorted({b for r in assignment.values() for b in r} - live_ids)
            if unknown:
                return failed(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                              f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}."), {}, {}
        else:
            count = t.num_partitions if t.num_partitions != -1 else self._state.config["num.partitions"]
            if count < 1:
                return failed(name, ErrorCode.INVALID_PARTITIONS,
                              "Number of partitions was set to an invalid non-positive value."), {}, {}
            rf = t.replication_factor if t.replication_factor != -1 else self._state.config["default.replication.factor"]
            if rf < 1:
                return failed(name, ErrorCode.INVALID_REPLICATION_FACTOR,
                              "Replication factor must be larger than 0, or -1 to use the default value."), {}, {}
            try:
                assignment = zk_admin.assign(live, count, rf)
            except AdminOperationError as e:
                return failed(name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(e)), {}, {}
            except ValueError as e:
                return failed(name, ErrorCode.INVALID_REPLICATION_FACTOR, str(e)), {}, {}
        configs: dict[str, str] = {}
        for c in t.configs:
            if c.value is None:
                return failed(name, ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {c.name}"), {}, {}
            configs[c.name] = c.value
        try:
            TopicConfigStore.validate(configs, self._state.config.log_config)
        except KeyError as e:
            return failed(name, ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {e.args[0]}"), {}, {}
        except ValueError as e:
            return failed(name, ErrorCode.INVALID_CONFIG, str(e)), {}, {}
        return None, assignment, configs

    async def create_topics(self, req: CreateTopicsRequest, version: int) -> CreateTopicsResponse:
        if not await self._runner.wait_ready(max(req.timeout_ms, 0) / 1000):
            return _not_controller_create(req)
        by = deadline(self._zk, req.timeout_ms)   # for all of this request's ZooKeeper calls
        names = [t.name for t in req.topics]
        dupes = {n for n in names if names.count(n) > 1}
        results: list[Result] = []
        created: list[tuple[Result, str, int]] = []
        for t in req.topics:
            try:
                refused, assignment, configs = await self._plan(t, dupes, by)
            except ZkUnavailableError:
                results.append(failed(t.name, ErrorCode.REQUEST_TIMED_OUT, ZK_TIMEOUT_MESSAGE))
                continue
            if refused is not None:
                results.append(refused)
                continue
            topic_id = ZERO_UUID
            if not req.validate_only:
                try:
                    topic_id = await zk_admin.create_topic(self._zk, t.name, assignment, configs, by)
                except zk_admin.TopicExistsError as e:
                    results.append(failed(t.name, ErrorCode.TOPIC_ALREADY_EXISTS, str(e)))
                    continue
                except ZkUnavailableError:
                    # written or not: a later creation of the same name may find it exists
                    results.append(failed(t.name, ErrorCode.REQUEST_TIMED_OUT, ZK_TIMEOUT_MESSAGE))
                    continue
            r = Result(name=t.name, topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None)
            if version >= 5:
                r.num_partitions = len(assignment)
                r.replication_factor = len(assignment[0])
                r.configs = created_topic_configs(self._state, configs)
            results.append(r)
            if not req.validate_only:
                created.append((r, t.name, len(assignment)))
        if created and req.timeout_ms > 0:
            image = self._cache.image

            def all_led() -> bool:
                return all(image.leader(name, p) >= 0 for _, name, count in created for p in range(count))

            if not await self._cache.wait_for(all_led, req.timeout_ms / 1000):
                for r, name, count in created:
                    if not all(image.leader(name, p) >= 0 for p in range(count)):
                        r.error_code = ErrorCode.REQUEST_TIMED_OUT
                        r.error_message = None
        return CreateTopicsResponse(throttle_time_ms=0, topics=results)

    async def delete_topics(self, req: DeleteTopicsRequest, version: int) -> DeleteTopicsResponse:
        R = DeleteTopicsResponse.DeletableTopicResult
        if version >= 6:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        else:
            wanted = [(n, ZERO_UUID) for n in req.topic_names]
        results = []
        queued: list[str] = []
        ready = await self._runner.wait_ready(max(req.timeout_ms, 0) / 1000)
        by = deadline(self._zk, req.timeout_ms)

        async def registered(name: str) -> bool:
            async def read() -> bool:
                return await self._zk.exists(znodes.topic_path(name)) is not None

            return await until_connected(read, by, f"DeleteTopics' check of {name}")

        for name, topic_id in wanted:
            if name is not None and topic_id != ZERO_UUID:   # as on a single node (local_topic_admin.py)
                results.append(R(name=name, topic_id=topic_id, error_code=ErrorCode.INVALID_REQUEST,
                                 error_message="You may not specify both topic name and topic id."))
                continue
            if name is None:
                name = self._cache.topic_name_for_id(topic_id)
                if name is None:
                    code = ErrorCode.UNKNOWN_TOPIC_ID if topic_id != ZERO_UUID else ErrorCode.INVALID_REQUEST
                    results.append(R(name=None, topic_id=topic_id, error_code=code, error_message=None))
                    continue
            try:
                if not ready:
                    code = ErrorCode.NOT_CONTROLLER
                elif not self._state.config["delete.topic.enable"]:
                    code = ErrorCode.TOPIC_DELETION_DISABLED
                elif self._cache.topic(name) is None and not await registered(name):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif is_internal(name):
                    code = ErrorCode.INVALID_REQUEST
                else:
                    await zk_admin.delete_topic(self._zk, name, by)
                    queued.append(name)
                    code = ErrorCode.NONE
            except ZkUnavailableError:
                code = ErrorCode.REQUEST_TIMED_OUT
            info = self._cache.topic(name)
            results.append(R(name=name, topic_id=info.topic_id if info and info.topic_id else topic_id,
                             error_code=code, error_message=None))
        if queued and req.timeout_ms > 0:
            def gone() -> bool:
                return all(self._cache.topic(n) is None for n in queued)

            if not await self._cache.wait_for(gone, req.timeout_ms / 1000):
                for r in results:
                    if r.name in queued and self._cache.topic(r.name) is not None:
                        r.error_code = ErrorCode.REQUEST_TIMED_OUT
        return DeleteTopicsResponse(throttle_time_ms=0, responses=results)

    async def create_partitions(self, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
        """CreatePartitions (37) on the controller (AdminZkClient.addPartitions): the topic
        znode is rewritten with the new partitions (placed by assignReplicasToBrokers from
        partition ``current`` on, at the topic's replication factor, or as assigned); the
        controller's data watch on the topic creates them.  Answers after they have leaders or
        ``timeout_ms`` (REQUEST_TIMED_OUT)."""
        TopicResult = CreatePartitionsResponse.CreatePartitionsTopicResult
        names = [t.name for t in req.topics]
        results = []
        waiting: list[tuple[Any, str, int]] = []
        ready = await self._runner.wait_ready(max(req.timeout_ms, 0) / 1000)
        by = deadline(self._zk, req.timeout_ms)
        live = self._live_brokers()
        for t in req.topics:
            def fail(code: ErrorCode, message: str | None = None, name: str = t.name) -> None:
                results.append(TopicResult(name=name, error_code=code, error_message=message))

            if not ready:
                fail(ErrorCode.NOT_CONTROLLER)
                continue
            if names.count(t.name) > 1:
                fail(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                continue
            try:
                data, _ = await until_connected(lambda name=t.name: self._zk.get(znodes.topic_path(name)),
                                                by, f"CreatePartitions' read of {t.name}")
            except NoNodeError:
                fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            except ZkUnavailableError:
                fail(ErrorCode.REQUEST_TIMED_OUT, ZK_TIMEOUT_MESSAGE)
                continue
            current = znodes.decode_topic(data)
            count = len(current.partitions)
            if t.count < count:
                fail(ErrorCode.INVALID_PARTITIONS,
                     f"The topic {t.name} currently has {count} partition(s); {t.count} would not be an increase.")
                continue
            if t.count == count:
                fail(ErrorCode.INVALID_PARTITIONS, f"Topic already has {count} partition(s).")
                continue
            rf = len(current.partitions[0])
            if t.assignments is not None:
                added = {count + i: list(a.broker_ids) for i, a in enumerate(t.assignments)}
                live_ids = {b.broker_id for b in live}
                if len(added) != t.count - count:
                    fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Attempted to add {t.count - count} additional partition(s), but only "
                         f"{len(added)} assignment(s) were specified.")
                    continue
                unknown = sorted({b for r in added.values() for b in r} - live_ids)
                if unknown:
                    fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
                    continue
            else:
                try:
                    placed = zk_admin.assign(live, t.count - count, rf, start_partition_id=count)
                except ValueError as e:
                    fail(ErrorCode.INVALID_REPLICATION_FACTOR, str(e))
                    continue
                added = {count + i: r for i, r in enumerate(placed[p] for p in sorted(placed))}
            if not req.validate_only:
                try:
                    await zk_admin.add_partitions(self._zk, t.name, current, added, by)
                except ZkUnavailableError:
                    fail(ErrorCode.REQUEST_TIMED_OUT, ZK_TIMEOUT_MESSAGE)
                    continue
            r = TopicResult(name=t.name, error_code=ErrorCode.NONE, error_message=None)
            results.append(r)
            if not req.validate_only:
                waiting.append((r, t.name, t.count))
        if waiting and req.timeout_ms > 0:
            image = self._cache.image

            def led(name: str, count: int) -> bool:
                return all(image.leader(name, p) >= 0 for p in range(count))

            if not await self._cache.wait_for(lambda: all(led(n, c) for _, n, c in waiting),
                                              req.timeout_ms / 1000):
                for r, n, c in waiting:
                    if not led(n, c):
                        r.error_code = ErrorCode.REQUEST_TIMED_OUT
        return CreatePartitionsResponse(throttle_time_ms=0, results=results)

    async def auto_create(self, names: list[str]) -> Mapping[str, int]:
        """Write each topic's znodes; per topic the error its Metadata entry answers meanwhile."""
        return {name: await self._auto_create_one(name) for name in names}

    async def _auto_create_one(self, name: str) -> ErrorCode:
        config = self._state.config
        try:
            assignment = zk_admin.assign(self._cache.live_brokers(), config["num.partitions"],
                                         config["default.replication.factor"])
        except (AdminOperationError, ValueError):
            return ErrorCode.INVALID_REPLICATION_FACTOR
        try:
            await zk_admin.create_topic(self._zk, name, assignment, {})
        except (zk_admin.TopicExistsError, ZkUnavailableError):
            pass
        return ErrorCode.LEADER_NOT_AVAILABLE
