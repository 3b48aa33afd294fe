"""``Services``: the narrow, named services a request handler may use, built once at start-up.

Theory of operation.  A handler is a function ``(ctx, request)``; ``ctx.services`` is its
only way into the broker.  Each field is a *port*: a ``Protocol`` naming just what handlers
call, so a handler module depends on this file and on value types, never on the objects that
implement the ports (``BrokerState``, ``ClusterRuntime``, ``ReplicaManager``, the
coordinators' adapters).  The composition root (kbroker/app/wiring.py) builds one ``Services``
per broker after the logs are loaded and before the listeners accept anything, and hands it
to every connection; it never changes afterwards (frozen).  A port whose answer changes over
time (the effective config after AlterConfigs, a metadata snapshot) is an object that is
read per request, not a value copied in here.

Single node and ZooKeeper mode are two implementations of the same ports.  Where a mode has
nothing to do, a null object stands in instead of ``None``: ``AllowAll`` when no
``authorizer.class.name`` is set, ``LocalReplicas`` (this broker leads every partition it
has; an acks=all wait returns at once), so that handlers carry no "which mode am I in"
branches and no ``getattr(state, ..., None)`` guards.  This is Redpanda's per-handler
``request_context`` accessors, and Tansu's trait-typed state, in Python.

Implementations satisfy the ``Protocol``s structurally: nothing that implements a port
imports this module, so the one-way import rule holds (handlers -> services -> value types).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import uuid

    from cluster.controller import ElectionOutcome, ElectionType
    from groups import GroupCoordinator, Result
    from kbroker.configs.config import BrokerConfig
    from kbroker.metadata.catalog import TopicInfo
    from kbroker.metadata.metadata_view import MetadataView
    from kbroker.replica.appends import AppendCheck, Appends
    from kbroker.replica.fetch_session import FetchSessionCache
    from kbroker.replica.fetch_waiters import FetchWaiters
    from kbroker.replica.partition import Partition
    from kbroker.security.quotas import Entity
    from kbroker.security.scram_credentials import ScramCredential
    from log.clock import Clock
    from log.config import LogConfig
    from log.producer_state import AppendOrigin
    from txn import TransactionCoordinator
    from wire.acl import AclBinding, AclBindingFilter
    from wire.error_codes import ErrorCode
    from wire.messages import (
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        CreateTopicsRequest,
        CreateTopicsResponse,
        DeleteTopicsRequest,
        DeleteTopicsResponse,
    )

TopicPartition = tuple[str, int]


class ConfigView(Protocol):
    """This broker's configuration.  ``config`` is the effective one (static file plus
    dynamic broker configs) and is replaced when AlterConfigs changes a broker level: read it
    per request, never keep it."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def static_config(self) -> BrokerConfig: ...

    def advertised_address(self, listener_name: str | None = None) -> tuple[str, int]:
        """Host and port clients should connect to on ``listener_name`` (default the first)."""
        ...


class TopicCatalog(Protocol):
    """Which topics and partitions this broker holds (single node: every topic; cluster
    mode: the partitions the controller assigned here)."""

    @property
    def topics(self) -> Mapping[str, TopicInfo]: ...

    @property
    def partitions(self) -> Mapping[TopicPartition, Partition]:
        """Every partition whose log is open here."""
        ...

    def partition(self, topic: str, index: int) -> Partition | None:
        """The local partition, or None when this broker holds no replica of it."""
        ...

    def topic_being_deleted(self, name: str) -> bool: ...


class Replicas(Protocol):
    """Who leads what, and the wait of acks=all (Kafka's ``ReplicaManager``)."""

    @property
    def replicated(self) -> bool:
        """True in cluster mode (partitions have followers; acks=all waits for the ISR)."""
        ...

    @property
    def reads_from_followers(self) -> bool:
        """A consumer may be sent to read from a follower (KIP-392): never on a single node."""
        ...

    def is_follower(self, replica_id: int) -> bool:
        """A Fetch or ListOffsets with this ``replica_id`` comes from a follower of this
        broker's partitions (replica_id >= 0 in a cluster); a single node has none and reads
        every replica id as a consumer's."""
        ...

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        """None when this broker may serve ``topic-index`` as its leader, else the error a
        client gets (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION).  A single node leads
        every partition it holds: None (whether the partition exists is the caller's check)."""
        ...

    def follower_partition(self, topic: str, index: int) -> Partition | None:
        """The local partition when this broker follows it (consumer fetch from a follower,
        KIP-392); always None on a single node."""
        ...

    def append_records(self, entries: Sequence[tuple[TopicPartition, memoryview]], required_acks: int,
                       origin: AppendOrigin = ..., check: AppendCheck | None = None) -> Appends:
        """The one door for writes (kbroker/replica/appends.py, Kafka's
        ``ReplicaManager.appendRecords``): each entry's records appended to its partition as
        leader, in order, before this returns (existence, internal topics, leadership, the
        caller's ``check``, min ISR, validation); ``Appends.replicated`` waits for acks=all."""
        ...

    def wait_for_acks(self, required: dict[TopicPartition, int],
                      timeout_ms: int) -> Awaitable[dict[TopicPartition, ErrorCode]]:
        """acks=all: complete when each partition's high watermark reaches the offset given
        (Kafka's DelayedProduce), answering each with NONE or its error; at once with NONE for
        all on a single node, where the high watermark moves with the append."""
        ...


class Authorizer(Protocol):
    """``authorizer.class.name`` (kbroker/security/authorizer.py), or ``AllowAll`` when unset.
    ``configured`` is False only for the null object: the ACL admin APIs then answer
    SECURITY_DISABLED, as Kafka does without an authorizer."""

    @property
    def configured(self) -> bool: ...

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool: ...

    def authorize_by_resource_type(self, principal: str, host: str, operation: int, resource_type: int) -> bool: ...

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int: ...


class AclAdmin(Protocol):
    """The ACLs of the configured authorizer (DescribeAcls, CreateAcls, DeleteAcls): the
    ``AclAuthorizer`` itself (its store a log-dir file, or ZooKeeper in cluster mode), or
    ``NoAcls`` when none is configured, which handlers do not ask: they answer
    SECURITY_DISABLED when ``authorizer.configured`` is False."""

    def acls(self, flt: AclBindingFilter) -> list[AclBinding]: ...

    def create_acls(self, bindings: list[AclBinding]
                    ) -> tuple[list[tuple[int, str] | None], Future[None] | None]:
        """Per binding None (added) or its (error code, message); the future of the store's
        write, None when nothing changed."""
        ...

    def delete_acls(self, filters: list[AclBindingFilter]
                    ) -> tuple[list[list[AclBinding]], Future[None] | None]:
        """Per filter the bindings it removed; the future of the store's write, None when
        nothing changed."""
        ...


class ConfigAdmin(Protocol):
    """Config entities, Kafka's ``ConfigAdminManager`` with ``AdminZkClient.changeEntityConfig``:
    topic overrides and dynamic broker levels (DescribeConfigs, AlterConfigs,
    IncrementalAlterConfigs), client quotas (AlterClientQuotas), SCRAM credentials
    (AlterUserScramCredentials).  Single node: the log-dir stores (kbroker/replica/local_config_admin.py);
    ZooKeeper mode: the same stores as mirrors of ZooKeeper, every change also written there
    with its change notification (kbroker/zk/zk_config_admin.py).  Broker levels are named as
    the BROKER resource: "" the cluster-wide default, else this broker's node id.  A change is
    validated by the caller, applied at once, and returns the writes its answer waits for."""

    def refresh(self, topics: Iterable[str], brokers: Iterable[str]) -> Awaitable[None] | None:
        """Re-read these topics' configs and broker levels from where the cluster keeps them,
        before a describe or an alter; None when this broker's stores are the truth."""
        ...

    def topic_exists(self, topic: str) -> bool:
        """On this broker or, in a cluster, on any broker."""
        ...

    def topic_overrides(self, topic: str) -> dict[str, str]: ...

    def topic_config(self, topic: str) -> LogConfig:
        """The topic's effective log config (overrides over the broker's defaults)."""
        ...

    def broker_level(self, resource_name: str) -> dict[str, str]: ...

    def validate_broker_level(self, resource_name: str, props: dict[str, str]) -> None:
        """ConfigError (Kafka's message) when ``props`` cannot become the level's whole set."""
        ...

    def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> list[Future[None]]: ...

    def set_broker_level(self, resource_name: str, props: dict[str, str]) -> list[Future[None]]: ...

    def set_client_quota(self, entity: Entity, values: dict[str, float | None]) -> list[Future[None]]:
        """Set (a number) or remove (None) quota values of one (user, client id) entity."""
        ...

    def set_scram_credentials(self, changes: list[tuple[str, str, ScramCredential | None]]
                              ) -> list[Future[None]]:
        """Upsert (a credential) or delete (None) each (user, mechanism name)."""
        ...


class Quotas(Protocol):
    """Client quotas (kbroker/security/quotas.py): the configured values of each (user, client id)
    entity, in bytes/s or percent."""

    @property
    def configs(self) -> Mapping[Entity, Mapping[str, float]]: ...


class ScramCredentials(Protocol):
    """The SCRAM credentials this broker authenticates with (kbroker/security/scram_credentials.py);
    mechanisms by name (SCRAM-SHA-256, SCRAM-SHA-512)."""

    def users(self) -> list[str]:
        """Every user with a credential, sorted."""
        ...

    def mechanisms(self, user: str) -> dict[str, ScramCredential]: ...

    def get(self, user: str, mechanism: str) -> ScramCredential | None: ...


class MetadataSource(Protocol):
    """A consistent view of topics, partitions and brokers for one request
    (kbroker/metadata/metadata_view.py): take one per request, never keep it."""

    def view(self) -> MetadataView: ...

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        """The topic whose id is ``topic_id`` (None: ZERO_UUID or unknown, UNKNOWN_TOPIC_ID);
        one dict look-up."""
        ...

    def known(self) -> bool:
        """The metadata describes the cluster: always on a single node; in ZooKeeper mode once
        the controller's first UpdateMetadata has been applied."""
        ...

    def wait_known(self, timeout_s: float) -> Awaitable[bool]:
        """Until ``known()`` (True) or ``timeout_s`` seconds have passed (False)."""
        ...


class TopicAdmin(Protocol):
    """Topics created, deleted and grown: a single node checks as Kafka's controller does and
    opens or deletes its own logs (kbroker/replica/local_topic_admin.py); in ZooKeeper mode the
    controller's znodes are written and the answer waits for the metadata cache
    (kbroker/zk/zk_topic_admin.py).  Each answers a whole request, at once or later."""

    def create_topics(self, req: CreateTopicsRequest, version: int
                      ) -> CreateTopicsResponse | Awaitable[CreateTopicsResponse]: ...

    def delete_topics(self, req: DeleteTopicsRequest, version: int
                      ) -> DeleteTopicsResponse | Awaitable[DeleteTopicsResponse]: ...

    def create_partitions(self, req: CreatePartitionsRequest
                          ) -> CreatePartitionsResponse | Awaitable[CreatePartitionsResponse]: ...

    def auto_create(self, names: list[str]) -> Mapping[str, int] | Awaitable[Mapping[str, int]]:
        """Metadata's auto-creation of ``names`` (unknown, legal, not internal) with
        ``num.partitions``: per topic the error its entry answers instead of its partitions
        (a topic not in the answer is described as it now is)."""
        ...


class Controller(Protocol):
    """The cluster controller's admin operations, as the broker a client asked sees them
    (Kafka answers ElectLeaders and the reassignment APIs on the controller only).  A single
    node is its own controller (kbroker/replica/local_controller.py); in ZooKeeper mode this broker's
    controller runner, NOT_CONTROLLER when another broker is it (kbroker/zk/zk_controller.py)."""

    def elect_leaders(self, requested: list[TopicPartition] | None, election_type: ElectionType,
                      timeout_s: float) -> Awaitable[dict[TopicPartition, ElectionOutcome]]:
        """Per partition (``None``: every partition the metadata knows), its outcome; NONE
        only once this broker's metadata shows the elected leader (REQUEST_TIMED_OUT after
        ``timeout_s``), NOT_CONTROLLER for all when this broker is not the controller."""
        ...

    def alter_partition_reassignments(self, targets: dict[TopicPartition, tuple[int, ...] | None], timeout_s: float
                                      ) -> Awaitable[tuple[ErrorCode, dict[TopicPartition, tuple[int, str | None]]]]:
        """(top-level error, per partition (error, message)); ``None`` target: cancel."""
        ...

    def list_partition_reassignments(self, partitions: frozenset[TopicPartition] | None, timeout_s: float
                                     ) -> Awaitable[tuple[ErrorCode, dict[TopicPartition, Any]]]:
        """(top-level error, ongoing reassignments: replicas / adding / removing)."""
        ...


class InterBroker(Protocol):
    """What the ZooKeeper-era inter-broker APIs do here (kbroker/zk/zk_inter_broker.py;
    ``NoInterBroker`` on a single node, which proves no sender a broker)."""

    @property
    def controller_active(self) -> bool: ...

    def is_registered_broker(self, broker_id: int) -> Awaitable[bool]: ...

    def controller_request_error(self, req: Any) -> Awaitable[ErrorCode | None]:
        """LeaderAndIsr / StopReplica / UpdateMetadata: None, or why it is refused
        (CLUSTER_AUTHORIZATION_FAILED, STALE_CONTROLLER_EPOCH, STALE_BROKER_EPOCH)."""
        ...

    def become_leader_or_follower(self, req: Any) -> Awaitable[dict[TopicPartition, int]]: ...

    def stop_replicas(self, req: Any) -> Awaitable[dict[TopicPartition, int]]: ...

    def apply_update_metadata(self, req: Any) -> None: ...

    def controller_ready(self, timeout_s: float) -> Awaitable[bool]: ...

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> Awaitable[Any]: ...

    def alter_partition(self, req: Any, version: int) -> Awaitable[Any]: ...


# FindCoordinator's answer for one key: (error, message, node id, host, port); a key
# without a coordinator is (error, message or None, -1, "", -1)
Coordinator = tuple["ErrorCode", "str | None", int, str, int]


class CoordinatorLocator(Protocol):
    """Where a group's / a transactional id's coordinator is (FindCoordinator), on the
    listener the request came on.  Single node: this broker, once the internal topic exists
    (created on the first lookup; kbroker/coordinators/local_coordinators.py).  ZooKeeper mode: the leader
    of the key's internal-topic partition in the metadata cache, the topic created through
    ZooKeeper on the first lookup (kbroker/zk/zk_coordinators.py)."""

    def group_coordinator(self, group_id: str, listener_name: str) -> Coordinator | Awaitable[Coordinator]:
        """The answer now, or an awaitable of it while ``__consumer_offsets`` is created."""
        ...

    def transaction_coordinator(self, transactional_id: str, listener_name: str) -> Awaitable[Coordinator]:
        """``transactional_id`` is not empty (the handler answers that)."""
        ...


class Groups(Protocol):
    """The classic group coordinator on this broker (kbroker/coordinators/group_service.py): the pure
    ``groups.GroupCoordinator`` answers, ``answer`` stores its writes in
    ``__consumer_offsets`` and returns the response (or an awaitable of it)."""

    @property
    def coordinator(self) -> GroupCoordinator: ...

    def answer(self, result: Result) -> Any: ...

    def ensure_topic(self) -> None:
        """Single node: create ``__consumer_offsets`` if missing; both modes: hash groups
        over the partitions it has."""
        ...

    def complete_txn_offsets(self, producer_id: int, producer_epoch: int, commit: bool,
                             partitions: list[int]) -> None:
        """A transaction's marker is in these ``__consumer_offsets`` partitions."""
        ...


class Transactions(Protocol):
    """The transaction coordinator on this broker (kbroker/coordinators/txn_service.py)."""

    @property
    def coordinator(self) -> TransactionCoordinator: ...

    @property
    def verification_enabled(self) -> bool:
        """``transaction.partition.verification.enable`` (KIP-890 part 1)."""
        ...

    def call(self, start: Callable[[Callable[..., None]], None], build: Callable[..., Any]) -> Any:
        """Run a coordinator call whose ``respond`` gets the answer's values: ``build(*values)``
        now, or a future of it while the answer waits for replication or markers."""
        ...


class ProducerIds(Protocol):
    """Producer ids never handed out twice (kbroker/coordinators/producer_ids.py): a log-dir block file on
    a single node, blocks claimed in ZooKeeper in cluster mode."""

    def generate(self) -> int:
        """The next id; ``ProducerIdsNotReady`` while the next block is being claimed."""
        ...


@dataclass(frozen=True, slots=True)
class Services:
    """What handlers may reach: every field a port (a ``Protocol`` above, or a value type of
    a lower room), each with a single-node and a ZooKeeper implementation where the modes
    differ, built once by kbroker/app/wiring.py."""

    node_id: int
    cluster_id: str
    config: ConfigView
    catalog: TopicCatalog
    replicas: Replicas
    metadata: MetadataSource
    authorizer: Authorizer
    groups: Groups
    txns: Transactions
    producer_ids: ProducerIds
    quotas: Quotas
    scram: ScramCredentials
    fetch_waiters: FetchWaiters        # parked fetches, woken by appends
    fetch_sessions: FetchSessionCache  # KIP-227 incremental fetch sessions
    clock: Clock              # the broker's clock (log/clock.py): ms timestamps it writes
    topic_admin: TopicAdmin           # topics created, deleted, grown
    config_admin: ConfigAdmin         # configs, client quotas, SCRAM
    acls: AclAdmin                    # the configured authorizer's ACLs, or NoAcls
    coordinators: CoordinatorLocator  # FindCoordinator
    controller: Controller            # elections and reassignments
    inter_broker: InterBroker         # LeaderAndIsr & co. (NoInterBroker on a single node)
