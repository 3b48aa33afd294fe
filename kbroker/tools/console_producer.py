"""``kbroker console-producer``: kafka-console-producer.sh: one record per line of stdin.

``--property parse.key=true`` splits each line at the first ``key.separator`` (default TAB)
into key and value; ``parse.headers=true`` takes a leading ``k1:v1,k2:v2`` part ending at
``headers.delimiter`` (TAB) as headers; ``null.marker=X`` turns a key, value or header value
equal to X into null.  Keyed records go to the partition Kafka's default partitioner picks
(murmur2 of the key, positive, modulo the partition count), so a key lands where a Java
producer would put it; records without a key go to one partition per batch, in turn
(Kafka's sticky partitioner).  Lines are sent in batches as they arrive; the command ends at
end of input, after every record is acknowledged (acks=all by default).
Exit status 1 if any record was refused (the error is printed to stderr).
"""

from __future__ import annotations

import os
import sys
import time

import click

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import connect, connection_options, fail
from wire.messages import MetadataRequest, ProduceRequest
from wire.record_batch import build_batch

BATCH_RECORDS = 1000


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (seed 0x9747b28c), as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def parse_properties(props: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for p in props:
        k, sep, v = p.partition("=")
        if not sep:
            raise ToolError(f"Invalid property: {p} (expected key=value)")
        out[k.strip()] = v
    return out


class LineReader:
    """Kafka's LineMessageReader: a line -> (key, value, headers)."""

    def __init__(self, props: dict[str, str]) -> None:
        self.parse_key = props.get("parse.key", "false").lower() == "true"
        self.key_sep = props.get("key.separator", "\t")
        self.parse_headers = props.get("parse.headers", "false").lower() == "true"
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_sep = props.get("headers.separator", ",")
        self.header_key_sep = props.get("headers.key.separator", ":")
        self.null_marker = props.get("null.marker")
        self.ignore_error = props.get("ignore.error", "false").lower() == "true"

    def _nullable(self, s: str) -> bytes | None:
        return None if self.null_marker is not None and s == self.null_marker else s.encode()

    def parse(self, line: str, number: int) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        headers: list[tuple[str, bytes | None]] = []
        rest = line
        if self.parse_headers:
            head, sep, rest = line.partition(self.headers_delimiter)
            if not sep:
                if not self.ignore_error:
                    raise ToolError(f"No headers delimiter found on line number {number}: '{line}'")
                head, rest = "", line
            for h in head.split(self.headers_sep) if head else []:
                k, s, v = h.partition(self.header_key_sep)
                if self.null_marker is not None and k == self.null_marker:
                    raise ToolError(f"Header keys should not be equal to the null marker '{self.null_marker}' as "
                                    "they can't be null")
                headers.append((k, self._nullable(v) if s else None))
        key: bytes | None = None
        if self.parse_key:
            k, sep, v = rest.partition(self.key_sep)
            if not sep:
                if not self.ignore_error:
                    raise ToolError(f"No key separator found on line number {number}: '{line}'")
                key, value = None, self._nullable(rest)
            else:
                key, value = self._nullable(k), self._nullable(v)
        else:
            value = self._nullable(rest)
        return key, value, headers


class Sender:
    def __init__(self, client: Client, topic: str, acks: int, timeout_ms: int) -> None:
        self.client, self.topic, self.acks, self.timeout_ms = client, topic, acks, timeout_ms
        self.leaders = self._leaders()
        self.next_sticky = 0
        self.failed = 0

    def _leaders(self) -> dict[int, int]:
        deadline = time.monotonic() + 60
        while True:  # the producer's metadata request may auto-create the topic
            resp, _ = self.client.send(MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)], allow_auto_topic_creation=True))
            self.client.nodes.update({b.node_id: (b.host, b.port) for b in resp.brokers})
            t = resp.topics[0]
            leaders = {p.partition_index: p.leader_id for p in t.partitions}
            if not t.error_code and leaders and all(v >= 0 for v in leaders.values()):
                return leaders
            if t.error_code and not KafkaError(t.error_code).name.startswith(("LEADER_NOT_AVAILABLE",
                                                                              "UNKNOWN_TOPIC")):
                raise KafkaError(t.error_code, what=f"topic {self.topic}")
            if time.monotonic() > deadline:
                raise KafkaError(t.error_code or 5, what=f"topic {self.topic}")
            time.sleep(0.2)

    def send(self, records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]) -> None:
        n = len(self.leaders)
        sticky = self.next_sticky % n
        self.next_sticky += 1
        by_partition: dict[int, list[tuple]] = {}
        for key, value, headers in records:
            p = partition_for_key(key, n) if key is not None else sticky
            by_partition.setdefault(p, []).append((key, value, headers, None))
        by_leader: dict[int, list[ProduceRequest.PartitionProduceData]] = {}
        for p, recs in by_partition.items():
            by_leader.setdefault(self.leaders[p], []).append(
                ProduceRequest.PartitionProduceData(index=p, records=build_batch(recs)))
        for leader, parts in by_leader.items():
            req = ProduceRequest(transactional_id=None, acks=self.acks, timeout_ms=self.timeout_ms, topic_data=[
                ProduceRequest.TopicProduceData(name=self.topic, partition_data=parts)])
            resp, _ = self.client.send(req, node=leader)
            if self.acks == 0:
                continue
            for t in resp.responses:
                for pr in t.partition_responses:
                    if pr.error_code:
                        self.failed += len(by_partition[pr.index])
                        msg = getattr(pr, "error_message", None)
                        click.echo(f"ERROR Error when sending message to topic {self.topic} partition {pr.index}: "
                                   f"{KafkaError(pr.error_code, msg).name}", err=True)


def _lines(stream_fd: int):
    """Yield lists of complete lines as they become available (a list per read burst)."""
    pending = b""
    while True:
        chunk = os.read(stream_fd, 1 << 16)  # blocks until some input: what came together goes together
        if not chunk:
            if pending:
                yield [pending.decode("utf-8", "replace")]
            return
        pending += chunk
        *complete, pending = pending.split(b"\n")
        if complete:
            yield [c.decode("utf-8", "replace").removesuffix("\r") for c in complete]


@click.command("console-producer", help="Send stdin lines as records (kafka-console-producer.sh).")
@connection_options
@click.option("--topic", required=True, help="REQUIRED: the topic to produce to.")
@click.option("--property", "--reader-property", "properties", multiple=True, metavar="KEY=VALUE",
              help="parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, "
                   "headers.key.separator, null.marker, ignore.error.")
@click.option("--request-required-acks", default="-1", show_default=True, help="acks: -1/all, 0 or 1.")
@click.option("--request-timeout-ms", type=int, default=1500, show_default=True,
              help="The broker's ack timeout for each produce request.")
@fail()
def console_producer(bootstrap_server: str, command_config: str | None, topic: str,
                     properties: tuple[str, ...], request_required_acks: str, request_timeout_ms: int) -> None:
    acks = -1 if request_required_acks == "all" else int(request_required_acks)
    reader = LineReader(parse_properties(properties))
    number = 0
    with connect(bootstrap_server, command_config) as client:
        sender = Sender(client, topic, acks, request_timeout_ms)
        for lines in _lines(sys.stdin.fileno()):
            records = []
            for line in lines:
                number += 1
                records.append(reader.parse(line, number))
            for i in range(0, len(records), BATCH_RECORDS):
                sender.send(records[i:i + BATCH_RECORDS])
        if sender.failed:
            raise ToolError(f"{sender.failed} record(s) were not written")
