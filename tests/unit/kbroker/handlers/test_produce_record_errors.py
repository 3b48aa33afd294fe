"""Produce names each rejected record (v8+ record_errors) when the log refuses records."""

from __future__ import annotations

import os
from dataclasses import replace

from kbroker.handlers.produce import handle_produce
from kbroker.server.request_context import RequestContext
from log.clock import ManualClock
from log.config import LogConfig
from log.log import Log
from log.scheduler import Scheduler
from tests.support.fakes import services
from wire.error_codes import ErrorCode
from wire.headers import decode_response, encode_response
from wire.messages import ProduceRequest, ProduceResponse
from wire.record_batch import build_batch


class _Partition:
    def __init__(self, log: Log) -> None:
        self.log = log

    def append_records_as_leader(self, records, required_acks=1, origin=None):
        return self.log.append_as_leader(records)


class _State:
    def __init__(self, log: Log) -> None:
        self._partition = _Partition(log)

    def partition(self, topic: str, index: int):
        return self._partition if (topic, index) == ("compacted", 0) else None


def _produce(tmp_path, version: int, records: bytes):
    clock = ManualClock()
    log = Log.open(os.path.join(str(tmp_path), "compacted-0"), replace(LogConfig(), cleanup_policy=("compact",)),
                   clock, Scheduler(clock))
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="compacted", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=memoryview(bytearray(records)))])])
    state = _State(log)
    ctx = RequestContext(api_key=0, api_version=version, correlation_id=1, client_id="t",
                         services=services(catalog=state))
    resp = handle_produce(ctx, req)
    # what the client decodes from the wire
    frame = b"".join(bytes(p) for p in encode_response(resp, version, 1))[4:]
    _, decoded = decode_response(ProduceResponse, frame, version)
    return decoded.responses[0].partition_responses[0], log


def test_keyless_records_on_a_compacted_topic_are_named_one_by_one_in_v8_and_nothing_is_appended(tmp_path):
    ts = ManualClock().milliseconds()
    batch = build_batch([(b"k", b"1", None, ts), (None, b"2", None, ts), (None, b"3", None, ts)])
    part, log = _produce(tmp_path, 8, batch)
    assert part.error_code == ErrorCode.INVALID_RECORD and part.base_offset == -1
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (1, "Compacted topic cannot accept message without key in topic partition compacted-0"),
        (2, "Compacted topic cannot accept message without key in topic partition compacted-0")]
    assert part.error_message.startswith("One or more records have been rejected due to 2 record errors")
    assert log.log_end_offset == 0


def test_before_v8_the_same_refusal_carries_only_the_error_code(tmp_path):
    ts = ManualClock().milliseconds()
    part, _ = _produce(tmp_path, 7, build_batch([(None, b"1", None, ts)]))
    assert part.error_code == ErrorCode.INVALID_RECORD
    assert part.record_errors == [] and part.error_message is None
