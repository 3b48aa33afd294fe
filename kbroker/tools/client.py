"""The command-line tools' client: kbroker.client's blocking connection, one per node.

Why our own client and not a stock library: every request the tools send (Metadata,
DescribeTopicPartitions, CreateTopics, DescribeConfigs, ListOffsets, DescribeGroups,
OffsetFetch/OffsetCommit, ...) already exists as a generated message class in ``wire/``,
so the tools are a few lines per request, need no extra dependency at run time, and use
exactly the version each broker advertises (Apache Kafka 4.x dropped old versions that
some libraries still send).  The client is blocking (one connection per node, one request
in flight): a tool does a handful of round trips and exits.

Version choice: for each API the highest version both sides know (ApiVersions on each
connection), no higher than ``WRITTEN_FOR`` (what the tools' code reads and writes), and
optionally capped lower by the caller where a newer version changes the shape of a request
(Fetch v13+ names topics by id).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbroker.client import Connection, UnsupportedVersion, error_name
from kbroker.client import KafkaError as ClientKafkaError
from wire.messages import (
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
)

__all__ = ["Client", "KafkaError", "ToolError", "load_command_config", "error_name"]

CLIENT_ID = "kbroker-tools"
SOFTWARE = ("kbroker-tools", "1")   # ApiVersions' client software name and version


# The highest version of an API the tools' code was written for, where Kafka 4.4's schemas
# (the codec's) go higher: the newer versions change what a tool reads and writes (topic ids
# instead of names in OffsetFetch 10 and Produce 13, ...).  A tool moves up when its code does.
WRITTEN_FOR: dict[int, int] = {
    0: 11, 1: 17, 2: 10, 3: 12, 8: 9, 9: 9, 15: 5, 18: 4, 22: 5, 27: 1, 28: 4, 35: 4, 42: 2,
    45: 0, 60: 1, 66: 1, 69: 1, 74: 0,
}


class ToolError(Exception):
    """A failure a tool reports as ``Error: <message>`` with exit status 1."""


class KafkaError(ToolError, ClientKafkaError):
    """A Kafka error code in a response; ``code`` is the wire code."""

    def _text(self) -> str:   # the tools' wording: ``[what: ]NAME[ (message)]``
        text = f"{self.what}: {self.name}" if self.what else self.name
        return f"{text} ({self.message})" if self.message else text


def load_command_config(path: str | None) -> dict[str, str]:
    """Kafka's ``--command-config`` properties file (``key=value`` / ``key: value`` lines,
    ``#``/``!`` comments).  Only plaintext connections are supported by these tools; any
    other ``security.protocol`` is refused with a message rather than silently ignored."""
    props: dict[str, str] = {}
    if path is None:
        return props
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            props[line] = ""
        else:
            props[line[:sep].strip()] = line[sep + 1:].strip()
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol != "PLAINTEXT":
        raise ToolError(f"security.protocol={protocol} is not supported by the kbroker tools "
                        "(plaintext only)")
    return props


def _split_hostport(s: str) -> tuple[str, int]:
    host, _, port = s.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ToolError(f"invalid bootstrap server {s!r} (expected HOST:PORT)")
    return host.strip("[]"), int(port)


class Client:
    """Blocking client: ``send(request)`` goes to any broker, ``send(request, node=id)``
    to that broker (leaders, group coordinators)."""

    def __init__(self, bootstrap_servers: str, config: dict[str, str] | None = None,
                 timeout_s: float = 30.0) -> None:
        self.config = config or {}
        self.timeout_s = float(self.config.get("request.timeout.ms", timeout_s * 1000)) / 1000
        self.client_id = self.config.get("client.id", CLIENT_ID)
        self._conns: dict[int, Connection] = {}
        self.nodes: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        errors = []
        for hp in bootstrap_servers.split(","):
            host, port = _split_hostport(hp)
            try:
                self._conns[-1] = self._negotiated(self._connect(host, port))
                break
            except OSError as e:
                errors.append(f"{host}:{port}: {e}")
        else:
            raise ToolError("cannot connect to any bootstrap server: " + "; ".join(errors))

    # -- plumbing -----------------------------------------------------------------------

    def _connect(self, host: str, port: int) -> Connection:
        return Connection.open(host, port, client_id=self.client_id, timeout_s=self.timeout_s,
                               negotiate=False, caps=WRITTEN_FOR)

    @staticmethod
    def _negotiated(conn: Connection) -> Connection:
        try:
            conn.negotiate(SOFTWARE)
        except ClientKafkaError as e:
            conn.close()
            raise KafkaError(e.code, e.message, e.what) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _conn(self, node: int) -> Connection:
        conn = self._conns.get(node)
        if conn is None:
            if node not in self.nodes:
                self.metadata([])
            if node not in self.nodes:
                raise ToolError(f"broker {node} is not in the cluster's metadata")
            host, port = self.nodes[node]
            try:
                conn = self._connect(host, port)
            except OSError as e:
                raise ToolError(f"cannot connect to broker {node} at {host}:{port}: {e}") from e
            conn = self._conns[node] = self._negotiated(conn)
        return conn

    def supports(self, api_key: int, node: int = -1) -> bool:
        versions = self._conn(node).versions
        return versions is not None and versions.supports(api_key)

    def version(self, api_key: int, node: int = -1, cap: int | None = None) -> int:
        try:
            return self._conn(node).version_for(api_key, cap)
        except UnsupportedVersion as e:
            raise ToolError(e.message) from None

    def send(self, msg: Any, node: int = -1, cap: int | None = None) -> tuple[Any, int]:
        """Send and return (response, version used); (None, version) for a Produce with acks=0."""
        v = self.version(msg.API_KEY, node, cap)
        return self._conn(node).call(msg, v), v

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- common requests ----------------------------------------------------------------

    def metadata(self, topics: list[str] | None) -> Any:
        """Metadata for ``topics`` (None: every topic; []: brokers only); never auto-creates."""
        req = MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False)
        resp, _ = self.send(req)
        self.nodes = {b.node_id: (b.host, b.port) for b in resp.brokers}
        self.controller_id = resp.controller_id
        self.cluster_id = resp.cluster_id
        return resp

    def partition_leaders(self, topics: list[str] | None = None) -> dict[tuple[str, int], int]:
        """(topic, partition) -> leader id (-1 when it has none) for the named topics
        (None: all); an unknown topic raises."""
        md = self.metadata(topics)
        out: dict[tuple[str, int], int] = {}
        for t in md.topics:
            if t.error_code:
                raise KafkaError(t.error_code, what=f"topic {t.name}")
            for p in t.partitions:
                out[(t.name, p.partition_index)] = p.leader_id
        return out

    def find_coordinator(self, group: str, key_type: int = 0) -> int:
        """The node id coordinating ``group`` (key_type 0) or a transactional id (1)."""
        v = self.version(10)
        if v >= 4:
            req = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[group])
            resp = self._conn(-1).call(req, v)
            c = resp.coordinators[0]
            err, node, host, port, msg = c.error_code, c.node_id, c.host, c.port, c.error_message
        else:
            resp = self._conn(-1).call(FindCoordinatorRequest(key=group, key_type=key_type), v)
            err, node, host, port, msg = (resp.error_code, resp.node_id, resp.host, resp.port,
                                          getattr(resp, "error_message", None))
        if err:
            raise KafkaError(err, msg, what=f"FindCoordinator for {group!r}")
        self.nodes[node] = (host, port)
        return node

    def list_offsets(self, partitions: list[tuple[str, int]], timestamp: int,
                     isolation_level: int = 0) -> dict[tuple[str, int], int | None]:
        """ListOffsets at each partition's leader: ``timestamp`` -1 latest, -2 earliest,
        -3 max-timestamp (v7+), or a time in ms.  None where there is no such offset
        (offset -1), the partition has no leader, or the leader answered an error."""
        leaders = self.partition_leaders(sorted({t for t, _ in partitions}))
        by_leader: dict[int, dict[str, list[int]]] = {}
        out: dict[tuple[str, int], int | None] = {}
        for t, p in partitions:
            leader = leaders.get((t, p), -1)
            if leader < 0:
                out[(t, p)] = None
                continue
            by_leader.setdefault(leader, {}).setdefault(t, []).append(p)
        for leader, topics in by_leader.items():
            req = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1,
                                                            timestamp=timestamp, max_num_offsets=1)
                    for p in ps]) for t, ps in topics.items()], timeout_ms=30000)
            resp, v = self.send(req, node=leader)
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code:
                        out[(t.name, p.partition_index)] = None
                    elif v == 0:
                        out[(t.name, p.partition_index)] = p.old_style_offsets[0] if p.old_style_offsets else None
                    else:
                        out[(t.name, p.partition_index)] = p.offset if p.offset >= 0 else None
        return out
