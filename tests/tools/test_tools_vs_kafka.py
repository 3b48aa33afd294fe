"""``kbroker topics / consumer-groups / get-offsets`` print what Kafka's own tools print.

The same cluster state is built on a real kbroker process and on an Apache Kafka 4.3.1 broker
(bench/harness/kafka_dist.py, jars from `make kafka-jars`): two topics with records, a configured topic,
an idle consumer group with committed offsets and a live one with a member (confluent-kafka).
Then Kafka's TopicCommand / ConsumerGroupCommand / GetOffsetShell and our subcommands run
with the same arguments against the same broker, and their stdout, stderr and exit status
are compared exactly (same rows, same lag numbers, same column layout).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.support.broker_process import BrokerProcess
from tests.support.requirements_helper import needs_tool
from tests.tools.helpers import (
    CONFIG_COMMAND,
    CONSUMER_GROUP_COMMAND,
    DUMP_LOG_SEGMENTS,
    GET_OFFSET_SHELL,
    TOPIC_COMMAND,
    kafka_jars_present,
    kafka_tool,
    kbroker,
    wait_until,
)

pytestmark = [
    pytest.mark.compat,
    needs_tool(kafka_jars_present(), "Apache Kafka jars missing: run `make kafka-jars`"),
]


# record timestamps: an hour ago, well inside orders' retention.ms (a day), so that neither
# broker's retention deletes the segments the tests read
BASE_TS = (int(time.time()) // 3600 - 1) * 3_600_000

# bytes added to each orders record's value (see _build_state)
ORDER_PADDING = 1000

_COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                       KafkaError.COORDINATOR_LOAD_IN_PROGRESS)


def _build_state(bootstrap: str) -> Consumer:
    """Topics, records and two groups; returns the live group's member (still joined)."""
    r = kbroker("topics", "--bootstrap-server", bootstrap, "--create", "--topic", "orders",
                "--partitions", "3", "--replication-factor", "1",
                "--config", "retention.ms=86400000", "--config", "max.message.bytes=200000")
    assert (r.rc, r.out) == (0, "Created topic orders.\n"), r
    r = kbroker("topics", "--bootstrap-server", bootstrap, "--create", "--topic", "events", "--partitions", "1")
    assert r.rc == 0, r
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    # one batch per record of ORDER_PADDING bytes and more: orders-0's 10 batches pass
    # index.interval.bytes (4096) twice, so both brokers write .index/.timeindex entries in
    # the segment test_dump_log_of_the_same_segments_is_kafkas compares
    for i in range(30):
        p.produce("orders", key=b"k%d" % i, value=b"order %d " % i + b"." * ORDER_PADDING,
                  partition=i % 3, timestamp=BASE_TS + i)
        assert p.flush(60) == 0
    for i in range(5):
        p.produce("events", value=b"event %d" % i, timestamp=BASE_TS + i)
    assert p.flush(60) == 0
    idle = Consumer({"bootstrap.servers": bootstrap, "group.id": "idle-group", "enable.auto.commit": False})

    def committed() -> bool:  # Apache Kafka answers NOT_COORDINATOR while it creates __consumer_offsets
        try:
            idle.commit(offsets=[TopicPartition("orders", 0, 4), TopicPartition("orders", 1, 10),
                                 TopicPartition("events", 0, 2)], asynchronous=False)
            return True
        except KafkaException as e:
            if not (e.args[0].retriable() or e.args[0].code() in _COORDINATOR_MOVING):
                raise
            return False
    wait_until(committed, "idle-group's commit")
    idle.close()
    live = Consumer({"bootstrap.servers": bootstrap, "group.id": "live-group", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "client.id": "live-client",
                     "max.poll.interval.ms": 900000})
    live.subscribe(["orders"])
    got: list = []

    def consumed_some() -> bool:
        m = live.poll(1.0)
        if m is not None and not m.error():
            got.append(m)
        return len(got) >= 7
    wait_until(consumed_some, "the live group's member to consume 7 records")
    live.commit(asynchronous=False)
    wait_until(lambda: "Stable" in kbroker("consumer-groups", "--bootstrap-server", bootstrap, "--describe",
                                           "--group", "live-group", "--state").out, "live-group Stable")
    return live


_CLUSTERS: dict[str, BrokerProcess] = {}  # bootstrap -> the broker process (its data_dir)


@pytest.fixture(scope="module", params=["kbroker", "apache-kafka"])
def cluster(request):
    # its own temp dir, not pytest's numbered basetemp: pytest sessions running beside this one
    # (the machine is shared) prune old basetemps, which would take a live broker's files away
    data = Path(tempfile.mkdtemp(prefix=f"kbroker-tools-{request.param}-"))
    if request.param == "kbroker":
        broker = BrokerProcess(data / "data").start()
    else:
        from bench.harness.kafka_dist import KafkaProcess
        broker = KafkaProcess(data, heap=["-Xmx512m", "-Xms512m"]).start()
    live = _build_state(broker.bootstrap)
    _CLUSTERS[broker.bootstrap] = broker
    yield broker.bootstrap
    live.close()
    broker.stop()
    shutil.rmtree(data, ignore_errors=True)


def _same(kafka_main: str, tool: str, bootstrap: str, *args: str, sort_lines: bool = False) -> str:
    theirs = kafka_tool(kafka_main, "--bootstrap-server", bootstrap, *args)
    ours = kbroker(tool, "--bootstrap-server", bootstrap, *args)
    if sort_lines:
        theirs.out = "".join(sorted(theirs.out.splitlines(keepends=True)))
        ours.out = "".join(sorted(ours.out.splitlines(keepends=True)))
    assert ours.out == theirs.out, f"ours:\n{ours.out}\nKafka's:\n{theirs.out}\nours stderr: {ours.err}"
    assert ours.err.strip() == theirs.err.strip(), (ours.err, theirs.err)
    assert theirs.rc == 0 and ours.rc == 0, (theirs, ours)
    return ours.out


def test_topics_list_is_kafkas_list(cluster):
    out = _same(TOPIC_COMMAND, "topics", cluster, "--list")
    assert "orders\n" in out and "events\n" in out and "__consumer_offsets\n" in out
    out = _same(TOPIC_COMMAND, "topics", cluster, "--list", "--exclude-internal")
    assert out == "events\norders\n"


def test_topics_describe_of_one_topic_is_kafkas_including_configs(cluster):
    out = _same(TOPIC_COMMAND, "topics", cluster, "--describe", "--topic", "orders")
    first = out.splitlines()[0]
    assert "PartitionCount: 3\tReplicationFactor: 1\tConfigs: " in first
    assert "retention.ms=86400000" in first and "max.message.bytes=200000" in first
    assert out.count("\tTopic: orders\tPartition: ") == 3


def test_topics_describe_of_every_topic_is_kafkas(cluster):
    out = _same(TOPIC_COMMAND, "topics", cluster, "--describe")
    assert "Topic: __consumer_offsets\t" in out and "Topic: events\t" in out


def test_topics_describe_under_replicated_is_empty_on_one_healthy_broker(cluster):
    assert _same(TOPIC_COMMAND, "topics", cluster, "--describe", "--under-replicated-partitions") == ""


def test_consumer_groups_describe_shows_kafkas_rows_and_lag(cluster):
    out = _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--describe", "--group", "idle-group")
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [r[:6] for r in rows] == [["idle-group", "events", "0", "2", "5", "3"],
                                     ["idle-group", "orders", "0", "4", "10", "6"],
                                     ["idle-group", "orders", "1", "10", "10", "0"]]


def test_consumer_groups_describe_of_a_live_group_names_its_member(cluster):
    out = _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--describe", "--group", "live-group")
    rows = [line.split() for line in out.splitlines()[2:]]
    assert len(rows) == 3 and all(r[8] == "live-client" and r[7] == "/127.0.0.1" for r in rows)
    assert sum(int(r[3]) for r in rows if r[3] != "-") >= 7  # the positions it committed


def test_consumer_groups_members_state_list_and_all_groups_are_kafkas(cluster):
    _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--describe", "--group", "live-group", "--members")
    _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--describe", "--group", "live-group", "--state")
    _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--describe", "--group", "idle-group", "--state")
    _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--describe", "--all-groups")
    out = _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--list", sort_lines=True)
    assert out == "idle-group\nlive-group\n"


def test_consumer_groups_reset_dry_run_is_kafkas(cluster):
    _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--reset-offsets", "--group", "idle-group",
          "--all-topics", "--to-earliest", "--dry-run")
    _same(CONSUMER_GROUP_COMMAND, "consumer-groups", cluster, "--reset-offsets", "--group", "idle-group",
          "--topic", "orders:0,1", "--shift-by", "-3", "--dry-run")


@pytest.mark.parametrize("args", [
    (), ("--time", "earliest"), ("--time", "-1"), ("--topic", "orders", "--partitions", "0,2"),
    ("--topic", "ord.*", "--time", "max-timestamp"), ("--topic-partitions", "orders:1-3,events"),
    ("--topic", "orders", "--time", str(BASE_TS + 4)), ("--exclude-internal-topics",),
])
def test_get_offsets_prints_kafkas_lines(cluster, args):
    _same(GET_OFFSET_SHELL, "get-offsets", cluster, *args)


@pytest.mark.parametrize("args", [
    ("--describe", "--entity-type", "topics", "--entity-name", "orders"),
    ("--describe", "--entity-type", "topics", "--entity-name", "orders", "--all"),
    ("--describe", "--entity-type", "brokers", "--entity-name", "1"),
    ("--describe", "--entity-type", "brokers", "--entity-default"),
])
def test_configs_describe_is_kafkas(cluster, args):
    _same(CONFIG_COMMAND, "configs", cluster, *args)


def _same_dump(*args: str) -> str:
    theirs = kafka_tool(DUMP_LOG_SEGMENTS, *args)
    ours = kbroker("dump-log", *args)
    # Kafka 4.3 writes OffsetCommitValue's tagged topicId: ours prints it as Kafka's tool does
    # since the codec is generated from Kafka 4.4's schemas
    crash = _JAVA_UNCAUGHT.match(theirs.err)
    if crash:
        # Kafka's tool dies of an uncaught exception (its stack trace on stderr); ours reports
        # the same message as a click error, with the same exit status and output before it
        assert (ours.rc, ours.out, ours.err) == (theirs.rc, theirs.out, f"Error: {crash[1]}\n"), (ours, theirs)
    else:
        assert (ours.rc, ours.out, ours.err) == (theirs.rc, theirs.out, theirs.err), (ours, theirs)
    return ours.out


# the first line of a Java main thread's uncaught exception: its class, then its message
_JAVA_UNCAUGHT = re.compile(r'Exception in thread "main" [\w.$]+: (.*)\n(?:\tat .*\n)+\Z')


def test_dump_log_of_the_same_segments_is_kafkas(cluster):
    """Kafka's DumpLogSegments and ours over the segment files of the broker under test."""
    root = _CLUSTERS[cluster].data_dir  # Apache Kafka's log.dirs is its logs/ (bench/harness/kafka_dist.py)
    found = sorted(root.rglob("orders-0"))
    assert found, sorted(str(p) for p in root.rglob("*"))[:50]
    data = found[0].parent
    seg = data / "orders-0" / "00000000000000000000"
    out = _same_dump("--files", f"{seg}.log", "--print-data-log")
    assert out.count("| offset: ") == 10
    _same_dump("--files", f"{seg}.log", "--deep-iteration")
    # _build_state wrote past index.interval.bytes, so both brokers hold index entries here
    # (Apache Kafka creates an active segment's index files only when it first needs them)
    assert seg.with_suffix(".index").exists() and seg.with_suffix(".timeindex").exists(), \
        sorted(p.name for p in seg.parent.iterdir())
    out = _same_dump("--files", f"{seg}.index,{seg}.timeindex")
    assert re.search(r"^offset: [1-9]\d* position: [1-9]\d*$", out, re.M), out
    assert re.search(r"^timestamp: \d+ offset: [1-9]\d*$", out, re.M), out
    # both brokers preallocate the active segment's time index, so its unwritten zero entries
    # fail the sanity check ("last timestamp is 0"): in Kafka's tool as in ours
    out = _same_dump("--files", f"{seg}.index,{seg}.timeindex", "--index-sanity-check")
    assert f"{seg}.index passed sanity check." in out, out
    offsets = [p for p in data.glob("__consumer_offsets-*/00000000000000000000.log") if p.stat().st_size]
    out = _same_dump("--offsets-decoder", "--files", ",".join(map(str, sorted(offsets))))
    assert '"group":"idle-group","topic":"orders","partition":0' in out
