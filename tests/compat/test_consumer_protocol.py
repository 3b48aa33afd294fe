"""Kafka 4's consumer group protocol (KIP-848) with stock clients in ``group.protocol=consumer``
(confluent-kafka, and Kafka's own Java consumer from kafka-clients 4.x) against a real broker
process: the coordinator assigns, members reconcile, a member killed
with -9 is fenced after its session and its partitions resume from its commits, a regex
subscription picks up a topic created later, a static member comes back without a
rebalance, and the group's records in ``__consumer_offsets`` are Kafka's."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient

from groups.records import decode_any_key, decode_any_value
from tests.support.broker_process import BrokerProcess
from tests.support.consumer_members import Member, describe, settled, wait_until
from tests.support.group_helpers import create_topic, produce_numbers
from tests.support.kafka_tools import kafka_tool
from wire.error_codes import ErrorCode as E
from wire.record_batch import iter_batches

# Sessions short enough for a test (Kafka's minimums are 45 s / 5 s: lowered with them)
FAST = {"group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
        "offsets.topic.num.partitions": "1"}


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory(**FAST)


@pytest.fixture(params=["confluent", "java"])
def client(request) -> str:
    return request.param


def member(broker: BrokerProcess, client: str, group: str, subscription: str, out, instance_id=None) -> Member:
    return Member(broker.bootstrap, group, subscription, out, instance_id, java=client == "java")


def test_three_consumer_protocol_members_split_six_partitions_and_read_every_record_once(broker, client, tmp_path):
    create_topic(broker.bootstrap, "clicks", 6)
    members = [member(broker, client, "g1", "clicks", tmp_path / f"m{i}.out") for i in range(3)]
    try:
        wanted = {f"clicks:{p}" for p in range(6)}
        wait_until(lambda: settled(members, wanted) and all(len(m.assignment()) == 2 for m in members),
                   what="three members with two partitions each")
        produce_numbers(broker.bootstrap, 3000)
        wait_until(lambda: sum(len(m.records()) for m in members) >= 3000, what="3000 records")
        time.sleep(0.5)
        values = sorted(v for m in members for v, _, _ in m.records())
        assert values == list(range(3000))
        for m in members:  # each member read only its own partitions
            own = {int(tp.split(":")[1]) for tp in m.assignment()}
            assert {p for _, p, _ in m.records()} <= own
        d = describe(broker.bootstrap, "g1")
        assert (d.error_code, d.group_state, d.assignor_name) == (0, "Stable", "uniform")
        assert d.group_epoch == d.assignment_epoch
        assert len(d.members) == 3
        assert all(m.member_epoch == d.group_epoch and m.member_type == 1 for m in d.members)
        assert sorted(p for m in d.members for tp in m.assignment.topic_partitions
                      for p in tp.partitions) == list(range(6))
        assert all(m.assignment == m.target_assignment for m in d.members)
    finally:
        for m in members:
            m.stop()


def test_a_member_killed_with_minus_9_is_fenced_and_its_partitions_resume_from_its_commits(broker, client, tmp_path):
    create_topic(broker.bootstrap, "clicks", 4)
    a = member(broker, client, "g2", "clicks", tmp_path / "a.out")
    b = member(broker, client, "g2", "clicks", tmp_path / "b.out")
    try:
        wait_until(lambda: settled([a, b], {f"clicks:{p}" for p in range(4)}), what="a split")
        produce_numbers(broker.bootstrap, 400)
        wait_until(lambda: len(a.records()) + len(b.records()) >= 400, what="the first 400")
        b_partitions = {int(tp.split(":")[1]) for tp in b.assignment()}
        b.kill()
        produce_numbers(broker.bootstrap, 400, start=400)
        wait_until(lambda: len(a.records()) + len(b.records()) >= 800, timeout_s=60,
                   what="the survivor to take over and read the next 400")
        time.sleep(0.5)
        values = sorted(v for m in (a, b) for v, _, _ in m.records())
        assert values == list(range(800))   # nothing lost, nothing read twice
        later = [(p, o) for v, p, o in a.records() if v >= 400 and p in b_partitions]
        assert later, "the survivor read the killed member's partitions"
        d = describe(broker.bootstrap, "g2")
        assert [m.member_id for m in d.members] and len(d.members) == 1
        assert d.group_state == "Stable"
    finally:
        a.stop()
        b.stop()


def test_a_regex_subscription_picks_up_a_topic_created_later(broker, client, tmp_path):
    create_topic(broker.bootstrap, "orders-eu", 2)
    create_topic(broker.bootstrap, "payments", 2)
    m = member(broker, client, "g3", "^orders-.*", tmp_path / "m.out")
    try:
        wait_until(lambda: m.assignment() == {"orders-eu:0", "orders-eu:1"}, what="orders-eu")
        create_topic(broker.bootstrap, "orders-us", 2)
        wait_until(lambda: m.assignment() == {"orders-eu:0", "orders-eu:1", "orders-us:0", "orders-us:1"},
                   timeout_s=60, what="orders-us picked up")
        produce_numbers(broker.bootstrap, 10, topic="orders-us")
        produce_numbers(broker.bootstrap, 10, topic="payments", start=100)
        wait_until(lambda: len(m.records()) >= 10, what="orders-us records")
        time.sleep(0.5)
        assert sorted(v for v, _, _ in m.records()) == list(range(10))
        d = describe(broker.bootstrap, "g3")
        # librdkafka sends its regex subscriptions as one alternation in parentheses
        assert d.members[0].subscribed_topic_regex == ("(^orders-.*)" if client == "confluent" else "^orders-.*")
    finally:
        m.stop()


def test_a_static_member_that_restarts_gets_its_partitions_back_without_a_new_group_epoch(
        broker_factory, client, tmp_path):
    # a static member that left keeps its place for its session: 30 s here, time enough for a
    # JVM to start again on a busy machine (6 s was not always)
    broker = broker_factory(**{**FAST, "group.consumer.session.timeout.ms": "30000"})
    create_topic(broker.bootstrap, "clicks", 4)
    a = member(broker, client, "g4", "clicks", tmp_path / "a.out", instance_id="a")
    b = member(broker, client, "g4", "clicks", tmp_path / "b.out", instance_id="b")
    try:
        wait_until(lambda: settled([a, b], {f"clicks:{p}" for p in range(4)}), what="a split")
        before = describe(broker.bootstrap, "g4")
        b_share = b.assignment()
        b.stop()   # a static member leaves with epoch -2: it keeps its place
        assert "closed" in b.lines(), "b closed cleanly (it was not killed)"
        wait_until(lambda: [m.member_epoch for m in describe(broker.bootstrap, "g4").members
                            if m.instance_id == "b"] == [-2], what="b's static leave (epoch -2)")
        b2 = member(broker, client, "g4", "clicks", tmp_path / "b2.out", instance_id="b")
        try:
            wait_until(lambda: b2.assignment() == b_share, what="b's partitions back")
            after = describe(broker.bootstrap, "g4")
            assert after.group_epoch == before.group_epoch
            assert a.assignment() == {f"clicks:{p}" for p in range(4)} - b_share
            assert sorted(m.instance_id for m in after.members) == ["a", "b"]
        finally:
            b2.stop()
    finally:
        a.stop()
        b.stop()


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


def _group_type(bootstrap: str, group: str) -> str:
    from tests.support.wire_client import WireClient
    from wire.messages import ListGroupsRequest, ListGroupsResponse

    client = WireClient(bootstrap)
    try:
        resp = client.call(ListGroupsRequest(states_filter=[], types_filter=[]), 5, ListGroupsResponse)
    finally:
        client.close()
    return next(g.group_type for g in resp.groups if g.group_id == group)


def test_a_running_classic_group_is_rolled_to_the_consumer_protocol_and_back_without_losing_or_repeating_a_record(
        broker, client, tmp_path):
    """Kafka 4's rolling upgrade: members restarted one at a time with the other protocol.
    Every record is read and committed exactly once across all the members' lives."""
    create_topic(broker.bootstrap, "clicks", 4)
    everyone: list[Member] = []
    produced = 0

    def start(name: str, protocol: str) -> Member:
        m = Member(broker.bootstrap, "roll", "clicks", tmp_path / f"{name}.out",
                   java=client == "java", protocol=protocol)
        everyone.append(m)
        return m

    def phase(live: list[Member], expect_type: str) -> None:
        nonlocal produced
        wait_until(lambda: settled(live, {f"clicks:{p}" for p in range(4)}), what=f"a split ({expect_type})")
        assert _group_type(broker.bootstrap, "roll") == expect_type
        produce_numbers(broker.bootstrap, 200, start=produced)
        produced += 200
        wait_until(lambda: len({v for m in everyone for v, _, _ in m.records()}) >= produced,
                   what=f"{produced} records")

    try:
        a, b = start("a-classic", "classic"), start("b-classic", "classic")
        phase([a, b], "classic")
        a.stop()
        a = start("a-consumer", "consumer")      # the upgrade: the group becomes a consumer group
        phase([a, b], "consumer")
        b.stop()
        b = start("b-consumer", "consumer")
        phase([a, b], "consumer")
        a.stop()
        a = start("a-classic-again", "classic")  # and back
        phase([a, b], "consumer")
        b.stop()
        b = start("b-classic-again", "classic")  # the last consumer-protocol member left: classic
        phase([a, b], "classic")
        time.sleep(0.5)
        values = sorted(v for m in everyone for v, _, _ in m.records())
        assert values == list(range(produced))   # nothing lost, nothing committed twice
    finally:
        for m in everyone:
            m.stop()


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
