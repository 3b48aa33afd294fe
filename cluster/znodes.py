"""Kafka's ZooKeeper layout: every path and JSON codec, byte-compatible with Kafka 3.9.

Source: ``core/src/main/scala/kafka/zk/ZkData.scala`` (Kafka 3.9.1).  Kafka serializes with
Jackson (``kafka.utils.Json.encodeAsBytes``): compact (no spaces), UTF-8, keys in the
iteration order of the Scala/Java map Kafka built (``cluster.jvm_order`` reproduces it), so
the same state gives the same bytes as Kafka's ZooKeeper mode.  The exact bytes are checked
against Kafka 3.9.1's own output in tests/unit/cluster/test_znodes.py.

Formats written (the version Kafka 3.9 writes; decoders accept the older ones too):

* ``/controller`` (ephemeral): ``{"version":2,"brokerid":B,"timestamp":"<ms>","kraftControllerEpoch":-1}``
* ``/controller_epoch``: decimal text; its znode version is the controller's fencing token.
* ``/brokers/ids/<id>`` (ephemeral), version 5: features, listener_security_protocol_map,
  endpoints, [rack], jmx_port, port, host, version, timestamp (``host``/``port`` are the first
  PLAINTEXT endpoint's, else null/-1).  The broker epoch is the znode's czxid.
* ``/brokers/topics/<t>``, version 3: partitions (``{"<p>":[replicas]}``), [topic_id
  (Kafka's base64 Uuid)], adding_replicas, removing_replicas, version.
* ``/brokers/topics/<t>/partitions/<p>/state``: controller_epoch, leader, version,
  [leader_recovery_state (only when RECOVERING, =1)], leader_epoch, isr; its znode version is
  the partition epoch.
* ``/config/<type>/<name>``: ``{"version":1,"config":{...}}`` (values are strings).
* ``/config/changes/config_change_<seq>`` (persistent sequential):
  ``{"version":2,"entity_path":"topics/foo"}``.
* ``/admin/delete_topics/<t>`` (empty), ``/admin/preferred_replica_election`` and
  ``/isr_change_notification/isr_change_<seq>``: ``{"version":1,"partitions":[{"topic":..,"partition":..}]}``,
  ``/admin/reassign_partitions`` (legacy, deprecated since 2.4):
  ``{"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}``,
  ``/log_dir_event_notification/log_dir_event_<seq>``: ``{"version":1,"broker":B,"event":1}``.
* ``/cluster/id``: ``{"version":"1","id":"<id>"}`` (the version is a string here).
* ``/feature``: ``{"features":{},"version":2,"status":1}`` (status 1 = enabled, 0 = disabled).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cluster.jvm_order import (
    java_properties_order,
    scala_immutable_map_order,
    scala_mutable_hashmap_order,
)
from wire.uuids import uuid_from_string, uuid_to_string

__all__ = [
    "ProducerIdBlock",
    "decode_producer_id_block",
    "encode_producer_id_block",
    "BROKER_IDS_PATH",
    "BROKER_SEQUENCE_ID_PATH",
    "CLUSTER_ID_PATH",
    "CONFIG_CHANGES_PATH",
    "CONFIG_CHANGE_PREFIX",
    "CONTROLLER_EPOCH_PATH",
    "CONTROLLER_PATH",
    "DEFAULT_ENTITY",
    "DELETE_TOPICS_PATH",
    "FEATURE_PATH",
    "ISR_CHANGE_NOTIFICATION_PATH",
    "ISR_CHANGE_PREFIX",
    "LOG_DIR_EVENT_NOTIFICATION_PATH",
    "LOG_DIR_EVENT_PREFIX",
    "PERSISTENT_PATHS",
    "PREFERRED_REPLICA_ELECTION_PATH",
    "PRODUCER_ID_BLOCK_PATH",
    "REASSIGN_PARTITIONS_PATH",
    "TOPICS_PATH",
    "BrokerRegistration",
    "EndPoint",
    "PartitionState",
    "TopicAssignment",
    "ZnodeFormatError",
    "broker_path",
    "config_entity_path",
    "decode_broker",
    "decode_cluster_id",
    "decode_config",
    "decode_config_change",
    "decode_controller",
    "decode_controller_epoch",
    "decode_partition_list",
    "decode_partition_state",
    "decode_reassignment",
    "decode_topic",
    "delete_topic_path",
    "encode_broker",
    "encode_cluster_id",
    "encode_config",
    "encode_config_change",
    "encode_controller",
    "encode_controller_epoch",
    "encode_feature",
    "encode_log_dir_event",
    "encode_partition_list",
    "encode_partition_state",
    "encode_reassignment",
    "encode_topic",
    "kafka_uuid_decode",
    "kafka_uuid_encode",
    "partition_state_path",
    "partitions_path",
    "topic_path",
]

# -- paths (ZkData's *ZNode.path) ---------------------------------------------------------

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
CLUSTER_ID_PATH = "/cluster/id"
FEATURE_PATH = "/feature"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
# ConfigEntityName.Default: the entity name of cluster-wide defaults (/config/brokers/<default>).
DEFAULT_ENTITY = "<default>"

# ZkData.PersistentZkPaths: what KafkaZkClient.createTopLevelPaths makes at start-up.
PERSISTENT_PATHS = (
    "/consumers",
    "/admin/delete_topics",
    "/brokers/ids",
    "/brokers/topics",
    "/config/changes",
    "/config/clients",
    "/config/brokers",
    "/config/topics",
    "/config/users",
    "/config/ips",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    """``/config/<type>/<name>``; ``entity_type`` is ``topics``, ``brokers``, ``clients``..."""
    return f"/config/{entity_type}/{entity_name}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


class ZnodeFormatError(ValueError):
    """A znode's bytes are not the JSON Kafka writes there."""


# -- JSON as Jackson writes it ------------------------------------------------------------

_CONTROL_ESCAPE = re.compile(r"\\u00([0-9a-f]{2})")


def _dumps(obj: object) -> bytes:
    # Jackson: compact, UTF-8 unescaped, control characters as \uXXXX with upper-case hex
    # (\b \t \n \f \r in short form), '/' not escaped.  Python's dict keeps the order we build.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _CONTROL_ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), text).encode("utf-8")


def _loads(data: bytes | None, what: str) -> dict:
    if not data:
        raise ZnodeFormatError(f"empty {what} znode")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ZnodeFormatError(f"{what} znode is not JSON: {data!r}") from e
    if not isinstance(obj, dict):
        raise ZnodeFormatError(f"{what} znode is not a JSON object: {data!r}")
    return obj


def _ordered(values: Mapping[str, object], order: Sequence[str | int]) -> dict[str, object]:
    return {str(k): values[str(k)] for k in order}


def _int(obj: dict, key: str, what: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ZnodeFormatError(f"{what}: {key!r} is not an integer: {v!r}")
    return v


def _int_list(v: object, what: str) -> list[int]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise ZnodeFormatError(f"{what}: expected a list of integers, got {v!r}")
    return list(v)


# -- Kafka's Uuid text form -----------------------------------------------------------------


def kafka_uuid_encode(u: uuid.UUID) -> str:
    """``org.apache.kafka.common.Uuid.toString`` (wire/uuids.py)."""
    return uuid_to_string(u)


def kafka_uuid_decode(s: str) -> uuid.UUID:
    """``Uuid.fromString`` (wire/uuids.py), failing as a znode format error."""
    try:
        return uuid_from_string(s)
    except ValueError as e:
        raise ZnodeFormatError(f"not a Kafka Uuid: {s!r} ({e})") from e


# -- /controller, /controller_epoch ---------------------------------------------------------


def encode_controller(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
    # ControllerZNode.encode: an immutable Map4 literal, so insertion order.
    return _dumps(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": kraft_controller_epoch,
        }
    )


def decode_controller(data: bytes) -> int:
    """The controller's broker id (versions 1 and 2)."""
    return _int(_loads(data, "controller"), "brokerid", "controller")


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ZnodeFormatError(f"controller_epoch is not a number: {data!r}") from e


# -- /brokers/ids/<id> ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One advertised listener: ``LISTENER://host:port`` and its security protocol."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def connection_string(self) -> str:
        # EndPoint.connectionString: an IPv6 host is bracketed.
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


def _parse_endpoint(s: str, protocol_map: Mapping[str, str] | None) -> EndPoint:
    m = _ENDPOINT.match(s)
    if m is None:
        raise ZnodeFormatError(f"Unable to parse {s} to a broker endpoint")
    listener, host, port = m.group(1), m.group(2), int(m.group(3))
    # Without a map (versions 2-3) the listener name is the security protocol's name.
    protocol = (protocol_map or {}).get(listener, listener)
    return EndPoint(listener, host, port, protocol)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """The JSON of ``/brokers/ids/<id>`` (``BrokerInfo``); ``czxid`` is not part of it."""

    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = 0
    # Supported features: name -> (min_version, max_version).
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    version: int = 5


def encode_broker(b: BrokerRegistration) -> bytes:
    plain = next((e for e in b.endpoints if e.security_protocol == "PLAINTEXT"), None)
    values: dict[str, object] = {
        "version": b.version,
        "host": plain.host if plain else None,
        "port": plain.port if plain else -1,
        "endpoints": [e.connection_string() for e in b.endpoints],
        "jmx_port": b.jmx_port,
        "timestamp": str(b.timestamp_ms),
    }
    keys: list[str] = list(values)
    if b.rack is not None:
        values["rack"] = b.rack
        keys.append("rack")
    # `.toMap` of the endpoints: an immutable Map (insertion order up to 4, CHAMP beyond).
    listeners = list(dict.fromkeys(e.listener for e in b.endpoints))
    protocols = {e.listener: e.security_protocol for e in b.endpoints}
    values["listener_security_protocol_map"] = {
        str(k): protocols[str(k)] for k in scala_immutable_map_order(listeners)
    }
    keys.append("listener_security_protocol_map")
    # Features.toMap: feature -> {"min_version":..,"max_version":..} (SupportedVersionRange).
    values["features"] = {
        str(name): {"min_version": b.features[str(name)][0], "max_version": b.features[str(name)][1]}
        for name in scala_immutable_map_order(list(b.features))
    }
    keys.append("features")
    return _dumps(_ordered(values, scala_mutable_hashmap_order(keys, literal_size=6)))


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    """``BrokerIdZNode.decode`` (versions 1 to 5)."""
    what = f"broker {broker_id} registration"
    obj = _loads(data, what)
    version = _int(obj, "version", what)
    jmx_port = _int(obj, "jmx_port", what)
    if version < 1:
        raise ZnodeFormatError(f"Unsupported version of broker registration: {data.decode()}")
    if version == 1:
        host = obj.get("host")
        if not isinstance(host, str):
            raise ZnodeFormatError(f"{what}: host missing")
        endpoints: tuple[EndPoint, ...] = (EndPoint("PLAINTEXT", host, _int(obj, "port", what)),)
    else:
        pmap = obj.get("listener_security_protocol_map")
        if pmap is not None and not isinstance(pmap, dict):
            raise ZnodeFormatError(f"{what}: bad listener_security_protocol_map")
        raw = obj.get("endpoints")
        if not isinstance(raw, list):
            raise ZnodeFormatError(f"{what}: endpoints missing")
        endpoints = tuple(_parse_endpoint(str(s), pmap) for s in raw)
    rack = obj.get("rack")
    feats = obj.get("features") or {}
    features = {
        name: (int(r.get("min_version", 0)), int(r.get("max_version", 0)))
        for name, r in feats.items()
        if isinstance(r, dict)
    }
    ts = obj.get("timestamp")
    return BrokerRegistration(
        broker_id=broker_id,
        endpoints=endpoints,
        rack=rack if isinstance(rack, str) else None,
        jmx_port=jmx_port,
        timestamp_ms=int(ts) if isinstance(ts, str) and ts.lstrip("-").isdigit() else 0,
        features=features,
        version=version,
    )


# -- /brokers/topics/<t> ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """``/brokers/topics/<t>``: partition -> replicas, reassignment in flight, topic id."""

    partitions: Mapping[int, tuple[int, ...]]
    topic_id: uuid.UUID | None = None
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def _partition_map(m: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    # mutable.Map[String, util.List[Int]]() filled with +=: default-sized HashMap order.
    by_key = {str(p): list(r) for p, r in m.items()}
    return {str(k): by_key[str(k)] for k in scala_mutable_hashmap_order(list(by_key))}


def encode_topic(t: TopicAssignment) -> bytes:
    values: dict[str, object] = {
        "version": 3,
        "partitions": _partition_map(t.partitions),
        "adding_replicas": _partition_map({p: r for p, r in t.adding_replicas.items() if r}),
        "removing_replicas": _partition_map({p: r for p, r in t.removing_replicas.items() if r}),
    }
    keys = list(values)
    if t.topic_id is not None:
        values["topic_id"] = kafka_uuid_encode(t.topic_id)
        keys.append("topic_id")
    return _dumps(_ordered(values, scala_mutable_hashmap_order(keys, literal_size=4)))


def decode_topic(data: bytes) -> TopicAssignment:
    """``TopicZNode.decode`` (versions 1 to 3)."""
    obj = _loads(data, "topic")

    def pmap(key: str) -> dict[int, tuple[int, ...]]:
        raw = obj.get(key) or {}
        if not isinstance(raw, dict):
            raise ZnodeFormatError(f"topic: {key} is not an object")
        try:
            return {int(p): tuple(_int_list(r, f"topic {key}")) for p, r in raw.items()}
        except ValueError as e:
            raise ZnodeFormatError(f"topic: bad partition in {key}: {raw!r}") from e

    tid = obj.get("topic_id")
    return TopicAssignment(
        partitions=dict(sorted(pmap("partitions").items())),
        topic_id=kafka_uuid_decode(tid) if isinstance(tid, str) else None,
        adding_replicas=pmap("adding_replicas"),
        removing_replicas=pmap("removing_replicas"),
    )


# -- /brokers/topics/<t>/partitions/<p>/state -----------------------------------------------------

LEADER_RECOVERY_RECOVERED = 0
LEADER_RECOVERY_RECOVERING = 1


@dataclass(frozen=True, slots=True)
class PartitionState:
    """``LeaderIsrAndControllerEpoch``: the JSON of a partition's state znode.

    The znode's version (the partition epoch) is kept beside it, not in it.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED


def encode_partition_state(s: PartitionState) -> bytes:
    values: dict[str, object] = {
        "version": 1,
        "leader": s.leader,
        "leader_epoch": s.leader_epoch,
        "controller_epoch": s.controller_epoch,
        "isr": list(s.isr),
    }
    keys = list(values)
    if s.leader_recovery_state == LEADER_RECOVERY_RECOVERING:
        values["leader_recovery_state"] = LEADER_RECOVERY_RECOVERING
        keys.append("leader_recovery_state")
    return _dumps(_ordered(values, scala_immutable_map_order(keys)))


def decode_partition_state(data: bytes) -> PartitionState:
    what = "partition state"
    obj = _loads(data, what)
    return PartitionState(
        leader=_int(obj, "leader", what),
        leader_epoch=_int(obj, "leader_epoch", what),
        isr=tuple(_int_list(obj.get("isr"), what)),
        controller_epoch=_int(obj, "controller_epoch", what),
        leader_recovery_state=int(obj.get("leader_recovery_state", LEADER_RECOVERY_RECOVERED)),
    )


# -- /config ----------------------------------------------------------------------------------


def encode_config(config: Mapping[str, str]) -> bytes:
    """``ConfigEntityZNode.encode``; ``config`` in the order Kafka set the properties."""
    props = {k: str(v) for k, v in config.items()}
    return _dumps({"version": 1, "config": {k: props[k] for k in java_properties_order(props)}})


def decode_config(data: bytes | None) -> dict[str, str]:
    """``ConfigEntityZNode.decode``: no bytes or no ``config`` object means no overrides."""
    if not data:
        return {}
    obj = _loads(data, "config")
    cfg = obj.get("config")
    if not isinstance(cfg, dict):
        return {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in cfg.items()}


def encode_config_change(entity_path: str) -> bytes:
    """A ``config_change_`` notification; ``entity_path`` is e.g. ``topics/foo``, ``brokers/<default>``."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    """The entity path of a version-2 notification (version 1 is refused, as Kafka 3.x does)."""
    obj = _loads(data, "config change")
    if obj.get("version") != 2 or not isinstance(obj.get("entity_path"), str):
        raise ZnodeFormatError(f"Unsupported config change notification: {data!r}")
    return obj["entity_path"]


# -- /admin, /isr_change_notification, /log_dir_event_notification ----------------------------------


def encode_partition_list(partitions: Sequence[tuple[str, int]]) -> bytes:
    """``/admin/preferred_replica_election`` and ``isr_change_`` notifications (version 1)."""
    return _dumps(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def decode_partition_list(data: bytes) -> list[tuple[str, int]]:
    obj = _loads(data, "partition list")
    raw = obj.get("partitions")
    if not isinstance(raw, list):
        raise ZnodeFormatError(f"partition list without partitions: {data!r}")
    out = []
    for item in raw:
        if not isinstance(item, dict):
            raise ZnodeFormatError(f"bad partition entry {item!r}")
        out.append((str(item.get("topic")), _int(item, "partition", "partition list")))
    return out


def encode_reassignment(assignment: Sequence[tuple[str, int, Sequence[int]]]) -> bytes:
    """The legacy ``/admin/reassign_partitions`` JSON (Jackson bean order: topic, partition, replicas)."""
    return _dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": list(r)} for t, p, r in assignment
            ],
        }
    )


def decode_reassignment(data: bytes) -> dict[tuple[str, int], list[int]]:
    obj = _loads(data, "reassign_partitions")
    raw = obj.get("partitions")
    if not isinstance(raw, list):
        raise ZnodeFormatError(f"reassign_partitions without partitions: {data!r}")
    return {
        (str(i["topic"]), _int(i, "partition", "reassignment")): _int_list(i.get("replicas"), "reassignment")
        for i in raw
        if isinstance(i, dict)
    }


def encode_log_dir_event(broker_id: int) -> bytes:
    # LogDirEventNotificationSequenceZNode: event 1 = LogDirFailureEvent.
    return _dumps({"version": 1, "broker": broker_id, "event": 1})


# -- /cluster/id, /feature ----------------------------------------------------------------------


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    obj = _loads(data, "cluster id")
    cid = obj.get("id")
    if not isinstance(cid, str):
        raise ZnodeFormatError(f"Failed to parse the cluster id json {data!r}")
    return cid


def encode_feature(enabled: bool = True) -> bytes:
    """``/feature`` with no finalized features (what a 3.9 ZooKeeper-mode controller writes
    when no feature is finalized); status 1 = Enabled, 0 = Disabled."""
    return _dumps({"features": {}, "version": 2, "status": 1 if enabled else 0})

# -- /latest_producer_id_block (ProducerIdBlockZNode) --------------------------------------


@dataclass(frozen=True)
class ProducerIdBlock:
    """A block of producer ids one broker claimed; ``first`` and ``last`` both inclusive."""

    broker: int
    first: int
    last: int


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    """Kafka's ``ProducerIdBlockZNode.generateProducerIdBlockJson`` (the ids as strings)."""
    return _dumps({"version": 1, "broker": block.broker, "block_start": str(block.first),
                   "block_end": str(block.last)})


def decode_producer_id_block(data: bytes) -> ProducerIdBlock | None:
    """None for the empty znode Kafka creates at start-up (no block claimed yet)."""
    if not data:
        return None
    what = "producer id block"
    obj = _loads(data, what)
    try:
        return ProducerIdBlock(_int(obj, "broker", what), int(obj["block_start"]), int(obj["block_end"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ZnodeFormatError(f"{what}: {e!r} in {data!r}") from e
