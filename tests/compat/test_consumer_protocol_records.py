"""The consumer group protocol (KIP-848): committed offsets resumed exactly, the group's records in
``__consumer_offsets`` in Kafka's layout (read by Kafka's DumpLogSegments), and bad heartbeats
over TCP answered with Kafka's errors."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient

from groups.records import decode_any_key, decode_any_value
from tests.support.consumer_members import describe
from tests.support.group_helpers import create_topic, produce_numbers
from tests.support.kafka_tools import kafka_tool
from wire.error_codes import ErrorCode as E
from wire.record_batch import iter_batches


@pytest.fixture
def broker(fast_broker):
    """A broker with short group sessions (tests/compat/conftest.py)."""
    return fast_broker


def test_committed_offsets_resume_exactly_and_the_group_records_are_kafkas_layout(broker):
    create_topic(broker.bootstrap, "clicks", 1)
    produce_numbers(broker.bootstrap, 100)
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "g5", "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    c = Consumer(conf)
    c.subscribe(["clicks"])
    got: list[int] = []
    deadline = time.time() + 60
    while len(got) < 40 and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(int(m.value()))
            if len(got) == 40:
                c.commit(message=m, asynchronous=False)
    c.close()
    assert got == list(range(40))
    c = Consumer(conf)
    c.subscribe(["clicks"])
    rest: list[int] = []
    deadline = time.time() + 60
    while len(rest) < 60 and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            rest.append(int(m.value()))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (desc,) = admin.describe_consumer_groups(["g5"]).values()
    description = desc.result(15)
    c.close()
    assert rest == list(range(40, 100))
    assert description.type == ConsumerGroupType.CONSUMER
    assert description.state == ConsumerGroupState.STABLE
    listed = admin.list_consumer_groups().result(15)
    assert [(g.group_id, g.type) for g in listed.valid if g.group_id == "g5"] == \
        [("g5", ConsumerGroupType.CONSUMER)]
    # the group's records in __consumer_offsets, as Kafka writes them
    seg = sorted((broker.data_dir / "__consumer_offsets-0").glob("*.log"))[0]
    types = []
    for batch in iter_batches(seg.read_bytes()):
        for rec in batch.records():
            record_type, key = decode_any_key(rec.key)
            if getattr(key, "group_id", getattr(key, "group", None)) != "g5":
                continue
            types.append(record_type)
            if rec.value is not None:
                decode_any_value(record_type, rec.value)
    # member subscription, group epoch, target assignment (member, metadata), current assignment,
    # the commit, then the member leaving (tombstones) and a new epoch, then the second member
    assert types[:5] == [5, 3, 7, 6, 8]
    assert 1 in types
    assert types.count(5) >= 3   # two joins and one leave
    # Kafka's own DumpLogSegments reads every one of them
    dump = kafka_tool("org.apache.kafka.tools.DumpLogSegments", "--files", str(seg), "--offsets-decoder")
    lines = [ln for ln in dump.splitlines() if ln.startswith("| offset:")]
    assert lines and not [ln for ln in lines if "Error at offset" in ln], dump[-3000:]
    decoded = [int(t) for t in re.findall(r'key: \{"type":"(\d+)","data":\{"groupId":"g5"', dump)]
    assert decoded == [t for t in types if t != 1]
    assert '"classicMemberMetadata":null' in dump   # written as null for consumer-protocol members


def test_bad_heartbeats_over_tcp_get_kafkas_errors_store_nothing_and_leave_the_connection_serving(broker):
    """Raw ConsumerGroupHeartbeat requests a stock client would never send: each answered
    with Kafka's error code on the same connection, nothing written to __consumer_offsets,
    and a frame that does not parse closes only its own connection."""
    import socket
    import struct

    from tests.support.wire_client import WireClient
    from wire.messages import (
        ApiVersionsRequest,
        ApiVersionsResponse,
    )
    from wire.messages import (
        ConsumerGroupHeartbeatRequest as Req,
    )
    from wire.messages import (
        ConsumerGroupHeartbeatResponse as Resp,
    )

    create_topic(broker.bootstrap, "clicks", 1)
    join = {"member_epoch": 0, "rebalance_timeout_ms": 1000, "topic_partitions": []}
    cases = [
        (Req(group_id="", member_id="m", subscribed_topic_names=["clicks"], **join), E.INVALID_REQUEST),
        (Req(group_id="b", member_id="", subscribed_topic_names=["clicks"], **join), E.INVALID_REQUEST),
        (Req(group_id="b", member_id="m", **join), E.INVALID_REQUEST),
        (Req(group_id="b", member_id="m", member_epoch=-7), E.INVALID_REQUEST),
        (Req(group_id="b", member_id="m", subscribed_topic_names=["clicks"], server_assignor="sticky", **join),
         E.UNSUPPORTED_ASSIGNOR),
        (Req(group_id="b", member_id="m", subscribed_topic_regex="clicks-(", **join), E.INVALID_REGULAR_EXPRESSION),
        (Req(group_id="b", member_id="m", member_epoch=5, topic_partitions=[]), E.GROUP_ID_NOT_FOUND),
        (Req(group_id="b", member_id="m", subscribed_topic_names=[f"t{i}" for i in range(20_000)], **join),
         E.NONE),   # a large subscription is a subscription
        (Req(group_id="b", member_id="other", member_epoch=3, topic_partitions=[]), E.UNKNOWN_MEMBER_ID),
    ]
    client = WireClient(broker.bootstrap)
    try:
        for req, code in cases:
            resp = client.call(req, 1, Resp)
            assert resp.error_code == code, (req, resp)
        assert client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3,
                           ApiVersionsResponse).error_code == 0
    finally:
        client.close()
    d = describe(broker.bootstrap, "b")   # only the one valid join made a member
    assert [m.member_id for m in d.members] == ["m"]
    # a ConsumerGroupHeartbeat frame cut short: that connection closes, the broker serves on
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        body = struct.pack(">hhi", 68, 1, 1) + b"\x00\x01x\x00" + b"\x05"   # header, then garbage
        s.sendall(struct.pack(">i", len(body)) + body)
        s.settimeout(10)
        assert s.recv(4096) == b""
    assert describe(broker.bootstrap, "b").group_epoch == d.group_epoch
