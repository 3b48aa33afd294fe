"""A small synchronous Kafka protocol client for the command-line tools.

Why our own client and not a stock library: every request the tools send (Metadata,
DescribeTopicPartitions, CreateTopics, DescribeConfigs, ListOffsets, DescribeGroups,
OffsetFetch/OffsetCommit, ...) already exists as a generated message class in ``wire/``,
so the tools are a few lines per request, need no extra dependency at run time, and use
exactly the version each broker advertises (Apache Kafka 4.x dropped old versions that
some libraries still send).  The client is blocking (plain sockets, one connection per
node, one request in flight): a tool does a handful of round trips and exits.

Version choice: for each API the highest version both sides know (ApiVersions on the
first connection), optionally capped by the caller where a newer version changes the
shape of a request (Fetch v13+ names topics by id).
"""

from __future__ import annotations

import itertools
import socket
import struct
from pathlib import Path
from typing import Any

from wire.error_codes import ErrorCode
from wire.headers import decode_response, encode_request
from wire.messages import (
    ApiVersionsRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
)
from wire.schema import REQUESTS, RESPONSES

__all__ = ["Client", "KafkaError", "ToolError", "load_command_config", "error_name"]

_I32 = struct.Struct(">i")
CLIENT_ID = "kbroker-tools"


# The highest version of an API the tools' code was written for, where Kafka 4.4's schemas
# (the codec's) go higher: the newer versions change what a tool reads and writes (topic ids
# instead of names in OffsetFetch 10 and Produce 13, ...).  A tool moves up when its code does.
WRITTEN_FOR: dict[int, int] = {
    0: 11, 1: 17, 2: 10, 3: 12, 8: 9, 9: 9, 15: 5, 18: 4, 22: 5, 27: 1, 28: 4, 35: 4, 42: 2,
    45: 0, 60: 1, 66: 1, 69: 0, 74: 0,
}


class ToolError(Exception):
    """A failure a tool reports as ``Error: <message>`` with exit status 1."""


class KafkaError(ToolError):
    """A Kafka error code in a response; ``code`` is the wire code."""

    def __init__(self, code: int, message: str | None = None, what: str = "") -> None:
        self.code = code
        self.name = error_name(code)
        text = f"{what}: {self.name}" if what else self.name
        if message:
            text += f" ({message})"
        super().__init__(text)


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


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


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def roundtrip(self, frame: bytes) -> bytes:
        self.sock.sendall(frame)
        (size,) = _I32.unpack(self._read(4))
        return self._read(size)

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


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
        self._correlation = itertools.count(1)
        self._conns: dict[int, _Connection] = {}
        self._versions: dict[int, dict[int, tuple[int, int]]] = {}
        self.nodes: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        errors = []
        for hp in bootstrap_servers.split(","):
            host, port = _split_hostport(hp)
            try:
                self._conns[-1] = _Connection(host, port, self.timeout_s)
                self._handshake(-1)
                break
            except OSError as e:
                errors.append(f"{host}:{port}: {e}")
        else:
            raise ToolError("cannot connect to any bootstrap server: " + "; ".join(errors))

    # -- plumbing -----------------------------------------------------------------------

    def _handshake(self, node: int) -> None:
        req = ApiVersionsRequest(client_software_name="kbroker-tools", client_software_version="1")
        resp = self._roundtrip(node, req, 3)
        if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:  # an old broker: v0 then
            resp = self._roundtrip(node, ApiVersionsRequest(), 0)
        if resp.error_code:
            raise KafkaError(resp.error_code, what="ApiVersions")
        self._versions[node] = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def _roundtrip(self, node: int, msg: Any, version: int) -> Any:
        cid = next(self._correlation)
        frame = self._conn(node).roundtrip(encode_request(msg, version, cid, self.client_id))
        got, resp = decode_response(RESPONSES[msg.API_KEY].cls, frame, version)
        if got != cid:
            raise ToolError(f"correlation id {got} answered for {cid}")
        return resp

    def _conn(self, node: int) -> _Connection:
        conn = self._conns.get(node)
        if conn is None:
            if node not in self.nodes:
                self.metadata([])
            if node not in self.nodes:
                raise ToolError(f"broker {node} is not in the cluster's metadata")
            host, port = self.nodes[node]
            try:
                conn = self._conns[node] = _Connection(host, port, self.timeout_s)
            except OSError as e:
                raise ToolError(f"cannot connect to broker {node} at {host}:{port}: {e}") from e
            self._handshake(node)
        return conn

    def supports(self, api_key: int, node: int = -1) -> bool:
        self._conn(node)
        return api_key in self._versions[node]

    def version(self, api_key: int, node: int = -1, cap: int | None = None) -> int:
        self._conn(node)
        theirs = self._versions[node].get(api_key)
        spec = REQUESTS[api_key]
        if theirs is None:
            raise ToolError(f"the broker does not support {spec.name[:-len('Request')]}")
        ours = WRITTEN_FOR.get(api_key, spec.valid[1])
        hi = min(theirs[1], ours if ours is not None else theirs[1])
        if cap is not None:
            hi = min(hi, cap)
        if hi < max(theirs[0], spec.valid[0]):
            raise ToolError(f"no common version of {spec.name[:-len('Request')]}")
        return hi

    def send(self, msg: Any, node: int = -1, cap: int | None = None) -> tuple[Any, int]:
        """Send and return (response, version used)."""
        v = self.version(msg.API_KEY, node, cap)
        return self._roundtrip(node, msg, v), v

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
            resp = self._roundtrip(-1, req, v)
            c = resp.coordinators[0]
            err, node, host, port, msg = c.error_code, c.node_id, c.host, c.port, c.error_message
        else:
            resp = self._roundtrip(-1, FindCoordinatorRequest(key=group, key_type=key_type), v)
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
