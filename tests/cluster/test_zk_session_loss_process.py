"""A controller's ZooKeeper calls for a client request meet its session expiring (issue 28).

``test_brokers_reconnect_re_register_and_serve_after_zookeeper_restarts`` failed once with
UNKNOWN_SERVER_ERROR for its CreateTopics: the controller's session had expired during the
ZooKeeper restart, and the CreateTopics check's ``exists`` failed with SessionExpiredError
when the client reconnected.  Here that moment is made on purpose: the controller is frozen
(SIGSTOP) until ZooKeeper has expired its session, a CreateTopics is sent to it, and it is
thawed - the request is served while the broker finds its connection dropped and its
session gone.  Kafka's brokers wait for the connection (KafkaZkClient retries until
connected) and go on; the answer must be the topic created (or a retriable error the
client acts on), never UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time

import pytest

from kbroker.interbroker.broker_channel import send_once
from tests.support.cluster_processes import Cluster, wait_until
from wire.error_codes import ErrorCode
from wire.messages import CreateTopicsRequest

pytestmark = pytest.mark.timeout(600)


def test_a_create_topics_served_as_the_controllers_session_expires_creates_the_topic(
        zookeeper, tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("cluster"), zookeeper).start()
    try:
        controller, _ = wait_until(cluster.controller, "a controller")
        broker = cluster.brokers[controller]
        proc = broker.proc
        assert proc is not None
        req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="created-as-the-session-expires", num_partitions=3, replication_factor=1,
            assignments=[], configs=[])], timeout_ms=30000, validate_only=False)
        answers: list[object] = []
        proc.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: controller not in cluster.registered(),
                       "the frozen controller's session to expire", 120)
            sender = threading.Thread(target=lambda: answers.append(asyncio.run(
                send_once("127.0.0.1", broker.port, req, 4, "session-loss-test", 90))))
            sender.start()
            time.sleep(1.0)   # the request waits in the frozen broker's socket
        finally:
            proc.send_signal(signal.SIGCONT)
        sender.join(120)
        assert answers, "no answer to the CreateTopics"
        [result] = answers[0].topics   # type: ignore[attr-defined]
        log = broker.log_text()
        assert "handler for api key 19 " not in log, log[-6000:]   # CreateTopics never raised
        assert result.error_code in (ErrorCode.NONE, ErrorCode.NOT_CONTROLLER), result
        if result.error_code == ErrorCode.NONE:
            # served through the expiry: the topic's znode was written (on the new session)
            assert cluster.admin.exists("/brokers/topics/created-as-the-session-expires")
        wait_until(lambda: cluster.registered() == {1, 2, 3}, "the broker registered again", 120)
        cluster.wait_serving()
    finally:
        cluster.stop()
