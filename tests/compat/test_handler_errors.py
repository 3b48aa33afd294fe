"""A handler that raises, in a real broker process: the request is answered with
UNKNOWN_SERVER_ERROR in its API's own layout, the traceback is logged once, and the same
connection answers the next request; stock clients report the error and go on.

Kafka (RequestHandlerHelper.handleError -> AbstractRequest.getErrorResponse) does the same;
the only request that closes its connection is an acks=0 Produce, which has no response to
carry the error.

No request from outside makes a kbroker handler raise (a crash is a bug, and the known ones
are fixed), so the broker is started with the test seam KBROKER_TEST_FAIL_API (see
kbroker/server/registry.py): the handlers of the listed API keys raise.  Everything else is real:
the broker process, its connection code, the error-response builder and the clients.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.compat.test_bad_input import Raw, a_batch, metadata_request, produce_request
from tests.support.broker_process import BrokerProcess
from wire.headers import encode_request
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    MetadataResponse,
    ProduceResponse,
)

UNKNOWN_SERVER_ERROR = -1
TEXT = "The server experienced an unexpected error when processing the request."
PRODUCE, DESCRIBE_CONFIGS = 0, 32
INJECTED = "InjectedHandlerFailure: KBROKER_TEST_FAIL_API"


@pytest.fixture
def failing_broker(tmp_path, monkeypatch):
    """A broker whose Produce and DescribeConfigs handlers raise; its other APIs are served."""
    monkeypatch.setenv("KBROKER_TEST_FAIL_API", f"{PRODUCE},{DESCRIBE_CONFIGS}")
    b = BrokerProcess(tmp_path / "data").start()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert admin.create_topics([NewTopic("t", 2, 1), NewTopic("u", 1, 1)],
                               operation_timeout=10)["t"].result(30) is None
    yield b
    assert b.alive()
    b.stop()


def describe_configs(*topics: str) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name=t, configuration_keys=None)
        for t in topics], include_synonyms=False, include_documentation=False)


def api_versions() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="raw-test", client_software_version="1")


def _encoded(msg, version: int, correlation_id: int) -> bytes:
    return encode_request(msg, version, correlation_id, "raw-test")


def wait_for_log(broker: BrokerProcess, text: str, count: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while broker.log_text().count(text) < count:
        assert time.monotonic() < deadline, broker.log_text()
        time.sleep(0.05)


def test_a_raising_handler_is_answered_in_its_layout_and_the_same_connection_answers_the_next_requests(
        failing_broker):
    raw = Raw(failing_broker.port)
    try:
        # pipelined: the failing request, then a served one, then the failing one again
        raw.send(b"".join([
            _encoded(describe_configs("t", "u"), 4, 1),
            _encoded(metadata_request(), 12, 2),
            _encoded(produce_request("t", a_batch(3), acks=-1, partition=1), 9, 3),
            _encoded(api_versions(), 3, 4),
        ]))
        corr, resp = raw.response(DescribeConfigsResponse, 4)
        assert corr == 1
        assert [(r.resource_type, r.resource_name, r.error_code, r.error_message, r.configs)
                for r in resp.results] == [(2, "t", UNKNOWN_SERVER_ERROR, TEXT, []),
                                           (2, "u", UNKNOWN_SERVER_ERROR, TEXT, [])]
        corr, meta = raw.response(MetadataResponse, 12)
        assert corr == 2
        assert sorted((t.name, t.error_code, len(t.partitions)) for t in meta.topics) == [("t", 0, 2), ("u", 0, 1)]
        corr, produced = raw.response(ProduceResponse, 9)
        assert corr == 3
        assert [(t.name, [(p.index, p.error_code, p.base_offset, p.log_start_offset, p.error_message)
                          for p in t.partition_responses]) for t in produced.responses] == [
            ("t", [(1, UNKNOWN_SERVER_ERROR, -1, -1, None)])]
        corr, versions = raw.response(ApiVersionsResponse, 3)
        assert (corr, versions.error_code) == (4, 0)
    finally:
        raw.close()
    # one traceback per failed request, and no connection was closed for it
    wait_for_log(failing_broker, INJECTED, 2)
    log = failing_broker.log_text()
    assert log.count("Traceback") == 2 and log.count(INJECTED) == 2, log
    assert "closing connection" not in log, log


def test_an_acks_0_produce_whose_handler_raises_closes_only_its_connection(failing_broker):
    raw, other = Raw(failing_broker.port), Raw(failing_broker.port)
    try:
        raw.request(produce_request("t", a_batch(2), acks=0), 9, 10)
        raw.assert_closed_without_answer()
        other.request(api_versions(), 3, 11)
        corr, versions = other.response(ApiVersionsResponse, 3)
        assert (corr, versions.error_code) == (11, 0)
    finally:
        raw.close()
        other.close()
    wait_for_log(failing_broker, "closing connection", 1)
    assert failing_broker.log_text().count(INJECTED) == 1


def test_confluent_kafka_clients_get_unknown_server_error_and_keep_working_on_their_connections(
        failing_broker):
    errors: list[str] = []
    admin = AdminClient({"bootstrap.servers": failing_broker.bootstrap,
                         "error_cb": lambda e: errors.append(str(e))})
    future = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "t")])[
        ConfigResource(ConfigResource.Type.TOPIC, "t")]
    with pytest.raises(KafkaException) as e:
        future.result(60)
    assert e.value.args[0].code() == KafkaError.UNKNOWN
    # the same client goes on: a topic created and listed through it
    assert admin.create_topics([NewTopic("after", 1, 1)], operation_timeout=10)["after"].result(60) is None
    assert "after" in admin.list_topics(timeout=60).topics

    reports: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": failing_broker.bootstrap, "acks": "all", "retries": 0,
                         "error_cb": lambda e: errors.append(str(e))})
    producer.produce("t", value=b"v", partition=0, on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(60) == 0
    assert [r.code() for r in reports] == [KafkaError.UNKNOWN]
    # the producer's connection is still there: its next metadata request is answered
    assert "t" in producer.list_topics(timeout=60).topics

    assert "closing connection" not in failing_broker.log_text(), failing_broker.log_text()
    assert errors == []
