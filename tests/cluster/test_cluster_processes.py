"""Three kbroker processes against one real ZooKeeper, driven by stock clients over TCP.

One cluster per module (start-up costs a few seconds per broker on this machine); the tests
run in file order and the disruptive ones (kills, SIGTERM, a ZooKeeper restart) come last,
each leaving all three brokers registered again.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from cluster import znodes
from kbroker.interbroker.broker_channel import send_once
from tests.support.broker_process import ROOT, BrokerProcess, free_port
from tests.support.cluster_processes import SESSION_TIMEOUT_MS, Cluster, wait_until
from tests.support.java_admin import java_client_classpath
from wire.error_codes import ErrorCode
from wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeLogDirsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    UpdateMetadataRequest,
)
from wire.record_batch import build_batch

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"), zookeeper).start()
    yield c
    c.stop()


def admin(cluster: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def leaders(cluster: Cluster, topic: str, bootstrap: str | None = None) -> dict[int, int]:
    client = AdminClient({"bootstrap.servers": bootstrap}) if bootstrap else admin(cluster)
    md = client.list_topics(topic, timeout=30)
    t = md.topics[topic]
    if t.error is not None:
        return {}
    return {p: info.leader for p, info in t.partitions.items()}


def create_topic(cluster: Cluster, name: str, partitions: int, rf: int = 1,
                 assignment: list[list[int]] | None = None) -> None:
    nt = (NewTopic(name, len(assignment), replica_assignment=assignment) if assignment
          else NewTopic(name, partitions, rf))
    client = admin(cluster)  # kept referenced until the answer: a collected client cancels it
    for f in client.create_topics([nt], request_timeout=60, operation_timeout=60).values():
        f.result(60)
    # The answer means the controller's broker has the leaders; the others learn them from
    # the UpdateMetadata the controller sends each (asynchronously, as in Kafka).
    count = len(assignment) if assignment else partitions

    def everywhere() -> bool:
        for b in cluster.brokers.values():
            if b.alive():
                led = leaders(cluster, name, b.bootstrap)
                if len(led) != count or min(led.values()) < 0:
                    return False
        return True

    wait_until(everywhere, f"every broker to see {name}'s leaders")


# -- every client sees the cluster ----------------------------------------------------------


def test_kcat_and_the_python_clients_see_three_brokers_and_the_controller(cluster):
    controller, _ = wait_until(cluster.controller, "a controller")
    out = subprocess.run(["kcat", "-b", cluster.brokers[2].bootstrap, "-L"], capture_output=True,
                         text=True, timeout=60).stdout
    assert re.search(r"^ 3 brokers:", out, re.M), out
    for broker_id, b in cluster.brokers.items():
        suffix = " (controller)" if broker_id == controller else ""
        assert f"  broker {broker_id} at {b.bootstrap}{suffix}\n" in out, out

    md = wait_until(lambda: (m := admin(cluster).list_topics(timeout=30)).controller_id >= 0 and m,
                    "confluent-kafka to see the controller")
    assert sorted(md.brokers) == [1, 2, 3]
    assert md.controller_id == controller

    from kafka import KafkaAdminClient
    ka = KafkaAdminClient(bootstrap_servers=cluster.brokers[3].bootstrap)
    try:
        described = ka.describe_cluster()
    finally:
        ka.close()
    assert sorted(b["broker_id"] for b in described["brokers"]) == [1, 2, 3]  # DescribeCluster
    assert described["controller_id"] == controller

    from aiokafka.admin import AIOKafkaAdminClient

    async def aio() -> tuple[list[int], int]:
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.brokers[1].bootstrap)
        await client.start()
        try:
            d = await client.describe_cluster()
        finally:
            await client.close()
        return sorted(b["node_id"] for b in d["brokers"]), d["controller_id"]

    assert asyncio.run(aio()) == ([1, 2, 3], controller)


def test_the_java_admin_client_sees_three_brokers_and_the_controller(cluster):
    controller, _ = cluster.controller()
    done = subprocess.run(["java", "-cp", java_client_classpath(), str(ROOT / "tests/support/java/DescribeCluster.java"),
                           cluster.brokers[2].bootstrap], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert sorted(line for line in lines if line.startswith("broker ")) == [
        f"broker {i} 127.0.0.1:{cluster.brokers[i].port}" for i in (1, 2, 3)]
    assert f"controller {controller}" in lines


# -- topics, routing, produce and consume -----------------------------------------------------


def test_twelve_partitions_are_led_by_all_three_brokers_and_every_record_round_trips(cluster):
    create_topic(cluster, "spread", 12)
    led = leaders(cluster, "spread")
    assert sorted(led) == list(range(12))
    assert set(led.values()) == {1, 2, 3}
    assert sorted(list(led.values()).count(b) for b in (1, 2, 3)) == [4, 4, 4]

    p = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    sent = {(i % 12, f"k{i}".encode(), f"v{i}".encode()) for i in range(600)}
    for part, k, v in sorted(sent):
        p.produce("spread", v, k, partition=part)
    assert p.flush(60) == 0

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("spread", i, 0) for i in range(12)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        for m in c.consume(500, 1.0):
            assert m.error() is None, m.error()
            got.append((m.partition(), m.key(), m.value()))
    c.close()
    assert len(got) == len(sent)
    assert set(got) == sent


def test_a_produce_to_a_broker_that_does_not_lead_the_partition_is_not_leader_or_follower(cluster):
    led = leaders(cluster, "spread")
    other = next(b for b in (1, 2, 3) if b != led[0])
    batch = build_batch([(b"k", b"v", [], int(time.time() * 1000))])
    req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name="spread", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    resp = asyncio.run(send_once("127.0.0.1", cluster.brokers[other].port, req, 9, "test"))
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_log_dirs_list_each_brokers_own_partitions_and_only_the_leader_deletes_records_or_answers_epochs(
        cluster):
    led = leaders(cluster, "spread")

    def call(broker_id: int, req, version: int):
        return asyncio.run(send_once("127.0.0.1", cluster.brokers[broker_id].port, req, version, "test"))

    for b in (1, 2, 3):
        dirs = call(b, DescribeLogDirsRequest(topics=None), 4)
        held = {p.partition_index for r in dirs.results for t in r.topics if t.name == "spread"
                for p in t.partitions}
        assert held == {p for p, leader in led.items() if leader == b}, b
    leader = led[0]
    other = next(b for b in (1, 2, 3) if b != leader)
    epochs = OffsetForLeaderEpochRequest(replica_id=-1, topics=[
        OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic="spread", partitions=[
            OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)])])
    answer = call(other, epochs, 4).topics[0].partitions[0]
    assert (answer.error_code, answer.end_offset) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    answer = call(leader, epochs, 4).topics[0].partitions[0]
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, 0, 50)
    delete = DeleteRecordsRequest(timeout_ms=10000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name="spread", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=10)])])
    answer = call(other, delete, 2).topics[0].partitions[0]
    assert (answer.error_code, answer.low_watermark) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    answer = call(leader, delete, 2).topics[0].partitions[0]
    assert (answer.error_code, answer.low_watermark) == (0, 10)

def test_producer_ids_from_different_brokers_never_collide_and_are_claimed_in_zookeeper(cluster):
    def init_producer_id(broker_id: int) -> int:
        resp = asyncio.run(send_once("127.0.0.1", cluster.brokers[broker_id].port, InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60000), 4, "test"))
        # COORDINATOR_LOAD_IN_PROGRESS while a block is being claimed: asked again
        assert resp.error_code in (ErrorCode.NONE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), resp
        return resp.producer_id if resp.error_code == ErrorCode.NONE else -1

    ids = [wait_until(lambda b=b: (pid := init_producer_id(b)) >= 0 and pid + 1, f"a producer id from {b}") - 1
           for b in (1, 2, 3) for _ in range(2)]
    assert len(set(ids)) == 6, ids
    data, _ = cluster.admin.get(znodes.PRODUCER_ID_BLOCK_PATH)
    block = znodes.decode_producer_id_block(data)
    assert block is not None and block.broker in (1, 2, 3) and block.last - block.first == 999
    assert data == (f'{{"version":1,"broker":{block.broker},"block_start":"{block.first}",'
                    f'"block_end":"{block.last}"}}').encode()


def test_controller_requests_are_not_advertised_and_are_refused_unless_from_a_registered_broker(cluster):
    port = cluster.brokers[1].port
    versions = asyncio.run(send_once("127.0.0.1", port, ApiVersionsRequest(
        client_software_name="test", client_software_version="1"), 3, "test"))
    assert versions.error_code == 0
    assert not {k.api_key for k in versions.api_keys} & {4, 5, 6, 7}

    def update_metadata(controller_id: int, controller_epoch: int) -> int:
        req = UpdateMetadataRequest(controller_id=controller_id, is_k_raft_controller=False, type=0,
                                    controller_epoch=controller_epoch, broker_epoch=-1,
                                    ungrouped_partition_states=[], topic_states=[], live_brokers=[])
        return asyncio.run(send_once("127.0.0.1", port, req, 8, "test")).error_code

    _, epoch = cluster.controller()
    assert update_metadata(99, epoch + 1) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert update_metadata(2, epoch - 1) == ErrorCode.STALE_CONTROLLER_EPOCH
    # the broker still lists all three (nothing was applied)
    assert sorted(admin(cluster).list_topics(timeout=30).brokers) == [1, 2, 3]


def test_create_topics_sent_to_a_broker_that_is_not_the_controller_is_not_controller(cluster):
    controller, _ = cluster.controller()
    other = next(b for b in (1, 2, 3) if b != controller)
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="nc", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=5000, validate_only=False)
    resp = asyncio.run(send_once("127.0.0.1", cluster.brokers[other].port, req, 7, "test"))
    assert [(t.name, t.error_code) for t in resp.topics] == [("nc", ErrorCode.NOT_CONTROLLER)]


def test_create_partitions_adds_led_partitions_and_delete_topics_removes_the_topic_everywhere(cluster):
    from confluent_kafka.admin import NewPartitions

    create_topic(cluster, "grow", 2)
    client = admin(cluster)
    for f in client.create_partitions([NewPartitions("grow", 5)], request_timeout=60,
                                      operation_timeout=60).values():
        f.result(60)
    wait_until(lambda: all(len(led := leaders(cluster, "grow", b.bootstrap)) == 5 and min(led.values()) >= 0
                           for b in cluster.brokers.values()), "five led partitions everywhere")
    dirs = [d for b in cluster.brokers.values() for d in b.data_dir.glob("grow-*") if d.is_dir()]
    assert sorted(d.name for d in dirs) == [f"grow-{i}" for i in range(5)]

    for f in client.delete_topics(["grow"], request_timeout=60, operation_timeout=60).values():
        f.result(60)

    def gone_everywhere() -> bool:
        for b in cluster.brokers.values():
            md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=30)
            if "grow" in md.topics:
                return False
        return True

    wait_until(gone_everywhere, "the topic gone from every broker's metadata")
    wait_until(lambda: not cluster.admin.exists("/brokers/topics/grow")
               and not cluster.admin.exists("/admin/delete_topics/grow"), "the topic's znodes deleted")
    # the partition directories were renamed for deletion (removed after the delete delay)
    assert not [d for b in cluster.brokers.values() for d in b.data_dir.glob("grow-*")
                if d.is_dir() and not d.name.endswith("-delete")]


def test_a_topic_config_altered_on_any_broker_reaches_every_broker_through_zookeeper(cluster):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    create_topic(cluster, "conf", 1, assignment=[[1]])
    entry = ConfigEntry("retention.ms", "123456",
                        incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "conf", incremental_configs=[entry])
    client = AdminClient({"bootstrap.servers": cluster.brokers[3].bootstrap})  # holds no replica
    for f in client.incremental_alter_configs([resource], request_timeout=60).values():
        f.result(60)
    data, _ = cluster.admin.get("/config/topics/conf")
    assert data == b'{"version":1,"config":{"retention.ms":"123456"}}'
    notes = cluster.admin.get_children("/config/changes")
    assert any(cluster.admin.get(f"/config/changes/{n}")[0] == b'{"version":2,"entity_path":"topics/conf"}'
               for n in notes)

    def retention_on(broker_id: int) -> str:
        a = AdminClient({"bootstrap.servers": cluster.brokers[broker_id].bootstrap})
        described = a.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "conf")],
                                       request_timeout=30)
        (cfg,) = [f.result(30) for f in described.values()]
        return cfg["retention.ms"].value

    for broker_id in (1, 2, 3):
        wait_until(lambda b=broker_id: retention_on(b) == "123456", f"broker {broker_id} to describe it")
    # the broker holding the partition applied it to its log (its local mirror says so)
    wait_until(lambda: "123456" in (cluster.brokers[1].data_dir / "kbroker-topic-configs.json").read_text(),
               "the leader's local mirror")


def test_a_producer_auto_creates_a_topic_through_zookeeper(cluster):
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    p.produce("auto-made", b"x")
    assert p.flush(60) == 0
    led = leaders(cluster, "auto-made")
    assert list(led) == [0] and led[0] in (1, 2, 3)
    assert cluster.admin.exists("/brokers/topics/auto-made")


# -- groups ------------------------------------------------------------------------------------


def test_a_group_coordinated_on_another_broker_than_its_partition_commits_and_resumes(cluster):
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition as KTP

    group = "g-across"
    wait_until(lambda: _coordinator(cluster, group) >= 0, "the group's coordinator")
    coordinator = _coordinator(cluster, group)
    leader = next(b for b in (1, 2, 3) if b != coordinator)
    create_topic(cluster, "g-topic", 1, assignment=[[leader]])
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(20):
        p.produce("g-topic", f"v{i}".encode(), partition=0)
    assert p.flush(60) == 0

    def consume(n: int) -> tuple[list[bytes], int | None]:
        c = KafkaConsumer("g-topic", bootstrap_servers=cluster.bootstrap, group_id=group,
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          consumer_timeout_ms=30000, max_poll_records=n)
        out = []
        for m in c:
            out.append(m.value)
            if len(out) == n:
                break
        c.commit()
        committed = c.committed(KTP("g-topic", 0))
        c.close()
        return out, committed

    assert consume(10) == ([f"v{i}".encode() for i in range(10)], 10)
    # the coordinator restarts: it loads the group's offsets from its __consumer_offsets
    # partition again, and the group resumes where it committed
    cluster.brokers[coordinator].restart()
    wait_until(lambda: _coordinator(cluster, group) == coordinator, "the coordinator back")
    assert consume(10) == ([f"v{i}".encode() for i in range(10, 20)], 20)
    assert leaders(cluster, "g-topic") == {0: leader}


def _coordinator(cluster: Cluster, group: str) -> int:
    req = FindCoordinatorRequest(key=group, key_type=0, coordinator_keys=[])
    resp = asyncio.run(send_once("127.0.0.1", cluster.brokers[1].port, req, 3, "test"))
    return resp.node_id if resp.error_code == 0 else -1


# -- failures ----------------------------------------------------------------------------------


def test_kill_9_of_the_controller_elects_another_with_a_higher_epoch_and_create_topics_works_again(cluster):
    controller, epoch = cluster.controller()
    started = time.monotonic()
    cluster.brokers[controller].kill()
    new, new_epoch = wait_until(
        lambda: (c := cluster.controller()) and c[0] != controller and c,
        "a new controller", timeout_s=SESSION_TIMEOUT_MS / 1000 + 30)
    assert time.monotonic() - started < SESSION_TIMEOUT_MS / 1000 + 30
    assert new_epoch > epoch
    assert new in (1, 2, 3)
    wait_until(lambda: all(AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10).controller_id
                           == new for b in cluster.brokers.values() if b.alive()),
               "every live broker to name the new controller")
    create_topic(cluster, "after-failover", 2)
    led = leaders(cluster, "after-failover")
    assert sorted(led) == [0, 1] and all(b in (1, 2, 3) and b != controller for b in led.values())
    cluster.brokers[controller].start(timeout_s=120)
    wait_until(lambda: cluster.registered() == {1, 2, 3}, "the old controller back")
    cluster.wait_serving()


def test_kill_9_of_a_broker_leaves_its_partitions_leaderless_until_it_returns(cluster):
    # the previous test's broker is back: wait until it leads its partitions again
    led = wait_until(lambda: (m := leaders(cluster, "spread")) and all(b >= 0 for b in m.values()) and m,
                     "every partition led")
    controller, _ = cluster.controller()
    victim = next(b for b in (1, 2, 3) if b != controller)
    mine = sorted(p for p, b in led.items() if b == victim)
    assert mine
    cluster.brokers[victim].kill()
    wait_until(lambda: all(leaders(cluster, "spread").get(p) == -1 for p in mine),
               "the dead broker's partitions at leader -1")
    now = leaders(cluster, "spread")
    assert all(now[p] == led[p] for p in led if p not in mine)
    cluster.brokers[victim].start(timeout_s=120)
    cluster.wait_serving()
    wait_until(lambda: all(leaders(cluster, "spread").get(p) == victim for p in mine),
               "the partitions led again by their broker")


def test_sigterm_moves_leadership_off_the_broker_before_it_exits(cluster):
    controller, _ = cluster.controller()
    victim = next(b for b in (1, 2, 3) if b != controller)
    other = next(b for b in (1, 2, 3) if b not in (victim, controller))
    create_topic(cluster, "rf2", 1, assignment=[[victim, other]])
    assert leaders(cluster, "rf2") == {0: victim}
    assert cluster.brokers[victim].stop(timeout_s=120) == 0
    log = cluster.brokers[victim].log_text()
    assert "controlled shutdown succeeded" in log, log[-3000:]
    # The move happened while the broker was still registered: the new leader was elected
    # by the controlled-shutdown election, not after the broker's session went away (the
    # brokers' metadata shows it once their UpdateMetadata arrives: waited for).
    wait_until(lambda: leaders(cluster, "rf2") == {0: other}, "rf2-0 led by the other replica in metadata")
    cluster.brokers[victim].start(timeout_s=120)
    wait_until(lambda: cluster.registered() == {1, 2, 3}, "the broker back")
    cluster.wait_serving()


def test_a_broker_whose_zookeeper_session_expired_registers_again_and_leads_again(cluster):
    led = wait_until(lambda: (m := leaders(cluster, "spread")) and all(b >= 0 for b in m.values()) and m,
                     "every partition led")
    controller, _ = cluster.controller()
    victim = next(b for b in (1, 2, 3) if b != controller)
    mine = sorted(p for p, b in led.items() if b == victim)
    old_epoch = cluster.admin.exists(f"/brokers/ids/{victim}").czxid
    proc = cluster.brokers[victim].proc
    assert proc is not None
    proc.send_signal(signal.SIGSTOP)  # frozen past the session timeout: ZooKeeper expires it
    try:
        wait_until(lambda: victim not in cluster.registered(), "the frozen broker's session to expire")
    finally:
        proc.send_signal(signal.SIGCONT)
    wait_until(lambda: victim in cluster.registered(), "the broker registered again")
    assert cluster.admin.exists(f"/brokers/ids/{victim}").czxid > old_epoch  # a new broker epoch
    wait_until(lambda: all(leaders(cluster, "spread").get(p) == victim for p in mine),
               "its partitions led by it again")
    assert "ZooKeeper session expired: re-registering broker" in cluster.brokers[victim].log_text()


def test_brokers_reconnect_re_register_and_serve_after_zookeeper_restarts(cluster):
    cluster.zk.restart()
    wait_until(lambda: cluster.registered() == {1, 2, 3}, "all brokers registered again", 120)
    wait_until(lambda: cluster.controller()[0] in (1, 2, 3), "a controller", 120)
    create_topic(cluster, "after-zk-restart", 3)
    wait_until(lambda: set(leaders(cluster, "after-zk-restart")) == {0, 1, 2}
               and all(b >= 0 for b in leaders(cluster, "after-zk-restart").values()),
               "the new topic led")


# -- bad input ---------------------------------------------------------------------------------


def test_a_lone_broker_in_a_new_chroot_refuses_to_create_the_offsets_topic_below_its_replication_factor(
        zookeeper, tmp_path):
    lone = BrokerProcess(tmp_path / "lone", overrides={
        "broker.id": "1", "zookeeper.connect": f"{zookeeper.connect_string}/lone/cluster",
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})  # offsets.topic.replication.factor=3
    lone.start(timeout_s=120)
    try:
        zk = KazooClient(hosts=zookeeper.connect_string)
        zk.start(30)
        try:
            assert zk.get_children("/lone/cluster/brokers/ids") == ["1"]  # the chroot was created
        finally:
            zk.stop()
            zk.close()
        req = FindCoordinatorRequest(key="g", key_type=0, coordinator_keys=[])
        # until the controller's first UpdateMetadata the broker counts 0 alive brokers
        resp = wait_until(lambda: (r := asyncio.run(send_once("127.0.0.1", lone.port, req, 3, "test")))
                          and "'1'" in (r.error_message or "") and r, "the broker to count itself")
        assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert resp.error_message == (
            "Number of alive brokers '1' does not meet the required replication factor '3' for the "
            "offsets topic (configured via 'offsets.topic.replication.factor'). This error can be "
            "ignored if the cluster is starting up and not all brokers are up yet.")
    finally:
        lone.kill()


def _run_to_exit(b: BrokerProcess, timeout_s: float = 120) -> tuple[int, str]:
    """Run a broker process that must refuse to start; its exit code and output."""
    done = subprocess.run(b.command(), cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
    return done.returncode, done.stdout + done.stderr


def test_a_broker_id_already_registered_refuses_to_start_with_kafkas_message(cluster, tmp_path):
    dup = BrokerProcess(tmp_path / "dup", overrides={
        "broker.id": "1", "zookeeper.connect": cluster.zk.connect_string,
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    rc, out = _run_to_exit(dup)
    assert rc == 1, out
    assert "cannot start: Error while creating ephemeral at /brokers/ids/1, node already exists and owner" in out
    assert 1 in cluster.registered()


def test_an_unreachable_zookeeper_fails_start_up_after_the_connection_timeout(tmp_path):
    b = BrokerProcess(tmp_path / "nozk", overrides={
        "broker.id": "7", "zookeeper.connect": f"127.0.0.1:{free_port()}",
        "zookeeper.connection.timeout.ms": "2000"})
    started = time.monotonic()
    rc, out = _run_to_exit(b)
    assert rc == 1, out
    assert "cannot start: Timed out waiting for connection to ZooKeeper at 127.0.0.1:" in out
    assert "within 2000 ms" in out
    assert time.monotonic() - started >= 2.0
