"""The console's Kafka client: admin reads and writes over the Kafka protocol, async.

It speaks the project's own codec (wire/) over asyncio streams, so the console reads any
Kafka-compatible cluster the same way (kbroker or Apache Kafka), and the broker's built-in
console (``kbroker.console.listener``) reads its own broker through its listener, as a
client would: one data source, no private path into broker state.

Connections: kbroker.client's AsyncConnection, one per broker id (plus the bootstrap one),
each used by one request at a time (a lock), reopened after an error.  Versions: ApiVersions
is asked once per connection and each request goes at the highest version the broker, the
codec and ``PREFERRED`` (what this code reads and writes) allow; where the layout changes
across versions (FindCoordinator v4 batches keys, OffsetFetch v8 batches groups, DeleteTopics
v6 names topics in structs) both layouts are handled.

Routing: Fetch and ListOffsets go to the partition's leader (from Metadata), group requests
to the group's coordinator (FindCoordinator), CreateTopics/DeleteTopics and config changes
to the controller, DescribeLogDirs to every broker.

Groups: both types of Kafka 4, classic groups and consumer groups of the consumer group
protocol (KIP-848).  ListGroups v5 names each group's type; a group is described as Kafka's
admin client does it: ConsumerGroupDescribe (API 69) first, DescribeGroups when the
coordinator answers GROUP_ID_NOT_FOUND (a classic group, or none) or does not serve API 69.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field
from typing import Any

from kbroker.client import AsyncConnection, KafkaError, UnsupportedVersion
from wire.error_codes import ErrorCode
from wire.errors import WireError
from wire.messages import (
    ConsumerGroupDescribeRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetFetchRequest,
)
from wire.record_batch import LOG_OVERHEAD, RecordBatch

__all__ = ["ConsoleClient", "KafkaError", "Cluster", "PartitionMeta", "Message", "member_assignment",
           "GroupListing", "GroupInfo", "GroupMember", "LATEST", "EARLIEST"]

CLIENT_ID = "kbroker-console"
TIMEOUT_S = 30.0

SOFTWARE = ("kbroker-console", "1")   # ApiVersions' client software name and version

# The highest version of each API the console's code reads and writes (api key -> version);
# each broker's ApiVersions answer may hold it lower.
PREFERRED = {r.API_KEY: v for r, v in [
    (MetadataRequest, 12), (FetchRequest, 12), (ListOffsetsRequest, 7), (DescribeConfigsRequest, 4),
    (DescribeLogDirsRequest, 4), (ListGroupsRequest, 5), (DescribeGroupsRequest, 5), (OffsetFetchRequest, 8),
    (FindCoordinatorRequest, 4), (CreateTopicsRequest, 7), (DeleteTopicsRequest, 6),
    (IncrementalAlterConfigsRequest, 1), (ConsumerGroupDescribeRequest, 1)]}
RESOURCE_TOPIC = 2
LATEST, EARLIEST = -1, -2


@dataclass
class PartitionMeta:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]
    error: int


@dataclass
class Cluster:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, tuple[str, int, str | None]]     # id -> host, port, rack
    topics: dict[str, list[PartitionMeta]] = field(default_factory=dict)
    internal: set[str] = field(default_factory=set)


@dataclass
class GroupListing:
    group_id: str
    state: str
    protocol_type: str
    group_type: str       # "classic" or "consumer" (ListGroups v5; "classic" from older brokers)


@dataclass
class GroupMember:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assigned: list[tuple[str, int]]                   # sorted
    member_epoch: int | None = None                   # a consumer group's member
    target: list[tuple[str, int]] | None = None       # its target assignment, sorted


@dataclass
class GroupInfo:
    """A described group of either type."""

    group_id: str
    group_type: str       # "classic" or "consumer"
    state: str
    protocol_type: str
    protocol: str         # a classic group's protocol (assignor), a consumer group's assignor
    members: list[GroupMember]
    group_epoch: int | None = None                    # a consumer group's epochs
    assignment_epoch: int | None = None


@dataclass
class Message:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


class _Conn:
    """One broker's connection: opened on first use, reopened after a failure."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.lock = asyncio.Lock()
        self.conn: AsyncConnection | None = None

    async def request(self, message: Any) -> tuple[Any, int]:
        """(response, version used); one request at a time on this connection."""
        async with self.lock:
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = await AsyncConnection.open(self.host, self.port, client_id=CLIENT_ID,
                                                           timeout_s=TIMEOUT_S, caps=PREFERRED,
                                                           software=SOFTWARE)
                version = self.conn.version_for(message.API_KEY)
                return await self.conn.call(message, version), version
            except (OSError, WireError):
                self.close()
                raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class ConsoleClient:
    """Admin operations against the cluster reached through ``bootstrap`` ("host:port,...")."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = [_split(b) for b in bootstrap.split(",") if b.strip()]
        self._conns: dict[int | tuple[str, int], _Conn] = {}
        self.cluster: Cluster | None = None

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    # ------------------------------------------------------------ connections
    def _conn_to(self, broker_id: int) -> _Conn:
        if self.cluster is None or broker_id not in self.cluster.brokers:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not known")
        host, port, _ = self.cluster.brokers[broker_id]
        conn = self._conns.get(broker_id)
        if conn is None or (conn.host, conn.port) != (host, port):
            conn = self._conns[broker_id] = _Conn(host, port)
        return conn

    async def _any(self, message: Any) -> tuple[Any, int]:
        """To a known broker, else to a bootstrap address (the first that answers)."""
        errors: list[str] = []
        targets: list[_Conn] = []
        if self.cluster is not None:
            targets += [self._conn_to(b) for b in sorted(self.cluster.brokers)]
        for addr in self.bootstrap:
            targets.append(self._conns.setdefault(addr, _Conn(*addr)))
        for conn in targets:
            try:
                return await conn.request(message)
            except OSError as e:   # ConnectionError, TimeoutError: the next one then
                errors.append(f"{conn.host}:{conn.port}: {e!r}")
        raise ConnectionError("no broker answered: " + "; ".join(errors))

    async def _to(self, broker_id: int, message: Any) -> tuple[Any, int]:
        return await self._conn_to(broker_id).request(message)

    # ------------------------------------------------------------ cluster and topics
    async def metadata(self) -> Cluster:
        resp, _ = await self._any(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        cluster = Cluster(resp.cluster_id, resp.controller_id,
                          {b.node_id: (b.host, b.port, b.rack) for b in resp.brokers})
        for t in resp.topics:
            if t.error_code:
                continue
            cluster.topics[t.name] = sorted(
                (PartitionMeta(t.name, p.partition_index, p.leader_id, list(p.replica_nodes),
                               list(p.isr_nodes), list(p.offline_replicas or []), p.error_code)
                 for p in t.partitions), key=lambda p: p.partition)
            if t.is_internal:
                cluster.internal.add(t.name)
        self.cluster = cluster
        return cluster

    async def log_dir_sizes(self) -> dict[tuple[str, int], int]:
        """Bytes per partition (DescribeLogDirs to every broker; the leader's copy wins)."""
        cluster = self.cluster or await self.metadata()
        sizes: dict[tuple[str, int], dict[int, int]] = {}

        async def one(broker_id: int) -> None:
            try:
                resp, _ = await self._to(broker_id, DescribeLogDirsRequest(topics=None))
            except (OSError, KafkaError):
                return
            for d in resp.results:
                for t in d.topics:
                    for p in t.partitions:
                        if not p.is_future_key:
                            sizes.setdefault((t.name, p.partition_index), {})[broker_id] = p.partition_size

        await asyncio.gather(*(one(b) for b in cluster.brokers))
        out = {}
        for (topic, index), by_broker in sizes.items():
            leader = next((p.leader for p in cluster.topics.get(topic, []) if p.partition == index), -1)
            out[(topic, index)] = by_broker.get(leader, max(by_broker.values()))
        return out

    async def list_offsets(self, tps: list[tuple[str, int]], timestamp: int) -> dict[tuple[str, int], int]:
        """Offset per partition for ``timestamp`` (LATEST, EARLIEST or epoch ms; -1 when a
        timestamp is past every record).  Partitions without a leader are left out."""
        cluster = self.cluster or await self.metadata()
        by_leader: dict[int, dict[str, list[int]]] = {}
        for topic, index in tps:
            leader = next((p.leader for p in cluster.topics.get(topic, []) if p.partition == index), -1)
            if leader >= 0:
                by_leader.setdefault(leader, {}).setdefault(topic, []).append(index)
        out: dict[tuple[str, int], int] = {}

        async def one(leader: int, topics: dict[str, list[int]]) -> None:
            req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=i, current_leader_epoch=-1,
                                                            timestamp=timestamp) for i in parts])
                for t, parts in topics.items()])
            try:
                resp, _ = await self._to(leader, req)
            except (OSError, KafkaError):
                return
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code == 0:
                        out[(t.name, p.partition_index)] = p.offset

        await asyncio.gather(*(one(leader, topics) for leader, topics in by_leader.items()))
        return out

    async def fetch(self, topic: str, partition: int, offset: int, limit: int,
                    max_bytes: int = 1 << 20) -> tuple[list[Message], int]:
        """Up to ``limit`` records from ``offset`` (read_uncommitted); (messages, high watermark)."""
        cluster = self.cluster or await self.metadata()
        leader = next((p.leader for p in cluster.topics.get(topic, []) if p.partition == partition), -1)
        if leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
                           isolation_level=0, session_id=0, session_epoch=-1, rack_id="", topics=[
                               FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                                   partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                   last_fetched_epoch=-1, log_start_offset=-1,
                                   partition_max_bytes=max_bytes)])],
                           forgotten_topics_data=[])
        resp, _ = await self._to(leader, req)
        if resp.error_code:
            raise KafkaError(resp.error_code)
        pd = resp.responses[0].partitions[0]
        if pd.error_code:
            raise KafkaError(pd.error_code, f"{topic}-{partition} at offset {offset}")
        out: list[Message] = []
        buf = memoryview(bytes(pd.records or b""))
        pos = 0
        while pos + LOG_OVERHEAD + 5 <= len(buf) and len(out) < limit:
            batch = RecordBatch(buf, pos)
            if pos + batch.size_in_bytes > len(buf):
                break   # a partial batch at the end of the response
            pos += batch.size_in_bytes
            if batch.is_control:
                continue
            for r in batch:
                if r.offset >= offset and len(out) < limit:
                    out.append(Message(partition, r.offset, r.timestamp, r.key, r.value, list(r.headers)))
        return out, pd.high_watermark

    async def create_topic(self, name: str, partitions: int, replication_factor: int,
                           configs: dict[str, str]) -> None:
        cluster = self.cluster or await self.metadata()
        req = CreateTopicsRequest(timeout_ms=30000, validate_only=False, topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=replication_factor,
                assignments=[], configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                                         for k, v in configs.items()])])
        resp, _ = await self._to(cluster.controller_id, req)
        r = resp.topics[0]
        if r.error_code:
            raise KafkaError(r.error_code, r.error_message)

    async def delete_topic(self, name: str) -> None:
        cluster = self.cluster or await self.metadata()
        conn = self._conn_to(cluster.controller_id)
        req = DeleteTopicsRequest(timeout_ms=30000, topic_names=[name],
                                  topics=[DeleteTopicsRequest.DeleteTopicState(name=name)])
        resp, _ = await conn.request(req)
        r = resp.responses[0]
        if r.error_code:
            raise KafkaError(r.error_code, r.error_message)

    async def topic_configs(self, name: str) -> list[tuple[str, str | None, int, bool, bool]]:
        """(name, value, source, read_only, sensitive) of every config of a topic."""
        req = DescribeConfigsRequest(include_synonyms=False, include_documentation=False, resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=RESOURCE_TOPIC, resource_name=name,
                                                           configuration_keys=None)])
        resp, _ = await self._any(req)
        r = resp.results[0]
        if r.error_code:
            raise KafkaError(r.error_code, r.error_message)
        return sorted((c.name, c.value, c.config_source, c.read_only, c.is_sensitive) for c in r.configs)

    async def alter_topic_config(self, name: str, key: str, value: str | None) -> None:
        """Set ``key`` (value None: delete the override; back to the default)."""
        cluster = self.cluster or await self.metadata()
        req = IncrementalAlterConfigsRequest(validate_only=False, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=RESOURCE_TOPIC, resource_name=name, configs=[
                    IncrementalAlterConfigsRequest.AlterableConfig(
                        name=key, config_operation=0 if value is not None else 1, value=value)])])
        resp, _ = await self._to(cluster.controller_id, req)
        r = resp.responses[0]
        if r.error_code:
            raise KafkaError(r.error_code, r.error_message)

    # ------------------------------------------------------------ groups
    async def list_groups(self) -> list[GroupListing]:
        """Every group on every broker, by group id."""
        cluster = self.cluster or await self.metadata()
        found: dict[str, GroupListing] = {}

        async def one(broker_id: int) -> None:
            try:
                resp, version = await self._to(broker_id, ListGroupsRequest(states_filter=[], types_filter=[]))
            except (OSError, KafkaError):
                return
            for g in resp.groups:
                found[g.group_id] = GroupListing(g.group_id, g.group_state if version >= 4 else "", g.protocol_type,
                                                 (g.group_type or "classic") if version >= 5 else "classic")

        await asyncio.gather(*(one(b) for b in cluster.brokers))
        return [found[g] for g in sorted(found)]

    async def coordinator(self, group_id: str) -> int:
        resp, version = await self._any(FindCoordinatorRequest(key=group_id, key_type=0,
                                                               coordinator_keys=[group_id]))
        if version >= 4:
            c = resp.coordinators[0]
            code, message, node = c.error_code, c.error_message, c.node_id
        else:
            code, message, node = resp.error_code, resp.error_message, resp.node_id
        if code:
            raise KafkaError(code, message)
        return node

    async def describe_group(self, group_id: str) -> GroupInfo:
        """The group with its members: ConsumerGroupDescribe, else DescribeGroups."""
        if self.cluster is None:
            await self.metadata()
        node = await self.coordinator(group_id)
        try:
            resp, _ = await self._to(node, ConsumerGroupDescribeRequest(group_ids=[group_id],
                                                                        include_authorized_operations=False))
        except UnsupportedVersion:
            resp = None
        if resp is not None:
            d = resp.groups[0]
            if d.error_code == 0:
                return GroupInfo(group_id, "consumer", d.group_state, "consumer", d.assignor_name, [
                    GroupMember(m.member_id, m.instance_id, m.client_id, m.client_host,
                                _topic_partitions(m.assignment), m.member_epoch,
                                _topic_partitions(m.target_assignment))
                    for m in d.members], d.group_epoch, d.assignment_epoch)
            if d.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
                raise KafkaError(d.error_code, d.error_message)
        resp, _ = await self._to(node, DescribeGroupsRequest(groups=[group_id],
                                                             include_authorized_operations=False))
        g = resp.groups[0]
        if g.error_code:
            raise KafkaError(g.error_code)
        return GroupInfo(group_id, "classic", g.group_state, g.protocol_type, g.protocol_data, [
            GroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                        member_assignment(m.member_assignment) if g.protocol_type == "consumer" else [])
            for m in g.members])

    async def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        if self.cluster is None:
            await self.metadata()
        node = await self.coordinator(group_id)
        req = OffsetFetchRequest(group_id=group_id, topics=None, require_stable=False, groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group_id, topics=None)])
        resp, version = await self._to(node, req)
        if version >= 8:
            g = resp.groups[0]
            if g.error_code:
                raise KafkaError(g.error_code)
            topics = g.topics
        else:
            if resp.error_code:
                raise KafkaError(resp.error_code)
            topics = resp.topics
        return {(t.name, p.partition_index): p.committed_offset
                for t in topics for p in t.partitions if p.error_code == 0 and p.committed_offset >= 0}


def _split(addr: str) -> tuple[str, int]:
    host, _, port = addr.strip().rpartition(":")
    return host.strip("[]"), int(port)


def _topic_partitions(assignment: Any) -> list[tuple[str, int]]:
    """ConsumerGroupDescribe's Assignment as sorted (topic, partition) pairs."""
    return sorted((tp.topic_name, p) for tp in assignment.topic_partitions for p in tp.partitions)


def member_assignment(data: bytes | None) -> list[tuple[str, int]]:
    """The partitions in a consumer-protocol assignment (ConsumerProtocolAssignment: int16
    version, array of (string topic, array of int32 partition), user data); [] if unreadable."""
    if not data:
        return []
    try:
        mv = memoryview(data)
        pos = 2
        (n,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        out = []
        for _ in range(max(n, 0)):
            (tlen,) = struct.unpack_from(">h", mv, pos)
            pos += 2
            topic = bytes(mv[pos:pos + tlen]).decode()
            pos += tlen
            (pn,) = struct.unpack_from(">i", mv, pos)
            pos += 4
            for _ in range(max(pn, 0)):
                out.append((topic, struct.unpack_from(">i", mv, pos)[0]))
                pos += 4
        return sorted(out)
    except (struct.error, UnicodeDecodeError):
        return []
