"""A tiny Kafka "broker" for tests: it speaks just enough protocol, through our codec, for a
real producer to connect and produce, and keeps every partition's record bytes as sent.

Not the broker (``kbroker``): no log, no groups, no config.  One thread per connection on
127.0.0.1 with an ephemeral port; requests are answered in order with ``wire.headers``:

* ApiVersions: advertises ApiVersions 0-3, Metadata 0-12, Produce 0-9, InitProducerId 0-4,
  and also Fetch 0-12 and FindCoordinator 0-4 although it never answers them: librdkafka
  derives features from the advertised versions (rdkafka_feature.c) and writes magic-2
  batches only with Produce 3 *and Fetch 4*, zstd only with Produce 7 and Fetch 10, lz4
  only with FindCoordinator 0 (and compression at all only with Produce v0 advertised).
  A newer ApiVersions request gets UNSUPPORTED_VERSION with a v0 body listing those
  (KIP-511), which is how clients learn to step down.
* Metadata: one broker (this one, node 0), every requested topic with ``partitions``
  partitions led by node 0 (all known topics when the request names none).
* InitProducerId: producer id 1000, epoch 0.
* Produce: stores ``(topic, partition, bytes(records))`` and answers success with base
  offsets that grow by each batch's record count (nothing is answered for acks=0).

Any other request closes the connection and is recorded in ``unexpected``.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from wire import messages as m
from wire.codec import decode
from wire.error_codes import ErrorCode
from wire.errors import WireError
from wire.framing import FrameDecoder
from wire.headers import decode_request_header, encode_response
from wire.record_batch import iter_batches
from wire.schema import REQUESTS

ADVERTISED = {18: (0, 3), 3: (0, 12), 0: (0, 9), 22: (0, 4), 1: (0, 12), 10: (0, 4)}
SERVED = {18, 3, 0, 22}
PRODUCER_ID = 1000
PRODUCER_EPOCH = 0


@dataclass
class Captured:
    """One partition's records field of one Produce request, as the client wrote it."""

    topic: str
    partition: int
    records: bytes
    produce_version: int
    acks: int


@dataclass
class CaptureState:
    partitions: int = 1
    port: int = 0
    produced: list[Captured] = field(default_factory=list)
    requests: list[tuple[int, int]] = field(default_factory=list)   # (api key, version)
    unexpected: list[str] = field(default_factory=list)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    next_offset: dict[tuple[str, int], int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _api_versions(version: int) -> m.ApiVersionsResponse:
    keys = [m.ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(ADVERTISED.items())]
    lo, hi = ADVERTISED[18]
    if version > hi:
        return m.ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=keys)
    return m.ApiVersionsResponse(error_code=0, api_keys=keys)


def _metadata(state: CaptureState, req: m.MetadataRequest) -> m.MetadataResponse:
    with state.lock:
        names = [t.name for t in req.topics] if req.topics else list(state.topic_ids)
        topics = []
        for name in names:
            if name is None:
                continue
            tid = state.topic_ids.setdefault(name, uuid.uuid4())
            parts = [m.MetadataResponse.MetadataResponsePartition(
                error_code=0, partition_index=i, leader_id=0, leader_epoch=0,
                replica_nodes=[0], isr_nodes=[0], offline_replicas=[])
                for i in range(state.partitions)]
            topics.append(m.MetadataResponse.MetadataResponseTopic(
                error_code=0, name=name, topic_id=tid, is_internal=False, partitions=parts))
    return m.MetadataResponse(
        brokers=[m.MetadataResponse.MetadataResponseBroker(node_id=0, host="127.0.0.1",
                                                           port=state.port, rack=None)],
        cluster_id="capture-cluster", controller_id=0, topics=topics)


def _produce(state: CaptureState, req: m.ProduceRequest, version: int) -> m.ProduceResponse:
    responses = []
    for t in req.topic_data:
        parts = []
        for p in t.partition_data:
            raw = bytes(p.records) if p.records is not None else b""
            with state.lock:
                state.produced.append(Captured(t.name, p.index, raw, version, req.acks))
                key = (t.name, p.index)
                base = state.next_offset.get(key, 0)
                try:
                    count = sum(b.last_offset_delta + 1 for b in iter_batches(raw))
                except WireError:  # not magic 2: the test will say so; count it as one
                    count = 1
                state.next_offset[key] = base + count
            parts.append(m.ProduceResponse.PartitionProduceResponse(
                index=p.index, error_code=0, base_offset=base, log_append_time_ms=-1,
                log_start_offset=0))
        responses.append(m.ProduceResponse.TopicProduceResponse(name=t.name,
                                                                partition_responses=parts))
    return m.ProduceResponse(responses=responses, throttle_time_ms=0)


def answer(state: CaptureState, frame: bytearray) -> list[Any] | None:
    """The response frame parts for one request frame; None to send nothing (acks=0)."""
    head, at = decode_request_header(frame)
    key, version, cid = head.request_api_key, head.request_api_version, head.correlation_id
    with state.lock:
        state.requests.append((key, version))
    if key == 18:
        # The body of a too-new ApiVersions request may be unreadable: answer v0 (KIP-511).
        resp = _api_versions(version)
        return encode_response(resp, 0 if resp.error_code else version, cid)
    lo, hi = ADVERTISED.get(key, (0, -1))
    if key not in SERVED or not lo <= version <= hi:
        raise WireError(f"api {key} v{version} was not advertised")
    body = decode(REQUESTS[key].cls, memoryview(frame)[at:], version, strict=True)
    if key == 3:
        return encode_response(_metadata(state, body), version, cid)
    if key == 22:
        return encode_response(m.InitProducerIdResponse(
            error_code=0, producer_id=PRODUCER_ID, producer_epoch=PRODUCER_EPOCH), version, cid)
    if key == 0:
        resp = _produce(state, body, version)
        return None if body.acks == 0 else encode_response(resp, version, cid)
    raise WireError(f"api {key} is not served here")


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        frames = FrameDecoder()
        state = self.server.state
        while True:
            try:
                data = sock.recv(1 << 16)
            except OSError:
                return
            if not data:
                return
            try:
                frames.feed(data)
                while (frame := frames.next_frame()) is not None:
                    parts = answer(state, frame)
                    if parts is not None:
                        sock.sendall(b"".join(parts))
            except WireError as e:
                with state.lock:
                    state.unexpected.append(repr(e))
                return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, state: CaptureState):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        state.port = self.server_address[1]


@contextlib.contextmanager
def capture_broker(partitions: int = 1) -> Iterator[CaptureState]:
    """Run a capture broker for the duration of the block; yields its state (``.port``)."""
    state = CaptureState(partitions=partitions)
    server = _Server(state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
