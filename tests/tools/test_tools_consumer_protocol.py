"""``kbroker consumer-groups`` on groups of Kafka 4's consumer group protocol (KIP-848) prints
what Kafka 4.3's own ConsumerGroupCommand prints against the same kbroker process.

One broker for the module (tests/tools/conftest.py) holds an empty consumer group with a
committed offset, an empty classic group with one, and a live consumer group of two
confluent-kafka members in ``group.protocol=consumer`` (one static), one of which committed
with a leader epoch.  Kafka's tool reads consumer groups through ConsumerGroupDescribe (its
admin client), so its output is also a check of the broker's answers; both tools run with
the same arguments and their stdout and stderr are compared exactly.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.broker_process import BrokerProcess
from tests.support.consumer_members import describe
from tests.support.group_helpers import create_topic
from tests.support.requirements_helper import needs_tool
from tests.tools.helpers import JARS, LOG4J2, Run, kafka_jars_present, kbroker, wait_until

pytestmark = [
    pytest.mark.compat,
    needs_tool(kafka_jars_present(), "Apache Kafka jars missing: run `make kafka-jars`"),
]

LIVE, IDLE, CLASSIC = "cg-live", "cg-idle", "classic-idle"
ALL_PARTITIONS = {("clicks", 0), ("clicks", 1), ("clicks", 2), ("views", 0)}
# a member learns of a new target at its next heartbeat: 0.5 s, not Kafka's 5 s, so that the
# second member's join settles quickly
FAST_HEARTBEATS = {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    # as tests/tools/conftest.py's, with fast heartbeats
    root = Path(tempfile.mkdtemp(prefix="kbroker-tools-"))
    b = BrokerProcess(root / "data", overrides=FAST_HEARTBEATS).start()
    yield b
    b.stop()
    shutil.rmtree(root, ignore_errors=True)
    assert "Traceback" not in b.log_text(), b.log_text()


@dataclass
class Groups:
    bootstrap: str
    live: list[Consumer]


def _consumer(bootstrap: str, group: str, client_id: str, **extra: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "client.id": client_id, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     **extra})


def _join(consumers: list[Consumer], partitions: int) -> None:
    deadline = time.monotonic() + 60
    while sum(len(c.assignment()) for c in consumers) < partitions or not all(c.assignment() for c in consumers):
        assert time.monotonic() < deadline, [c.assignment() for c in consumers]
        for c in consumers:
            c.poll(0.1)


def _settled(bootstrap: str, group: str) -> bool:
    d = describe(bootstrap, group)
    return d.group_state == "Stable" and all(m.assignment == m.target_assignment for m in d.members)


def _empty_consumer_group(bootstrap: str, group: str, committed: int) -> None:
    """A consumer group whose only member committed ``committed`` on views-0 and left."""
    c = _consumer(bootstrap, group, f"{group}-client")
    c.subscribe(["views"])
    _join([c], 1)
    c.commit(offsets=[TopicPartition("views", 0, committed)], asynchronous=False)
    c.close()


@pytest.fixture(scope="module")
def groups(broker) -> Iterator[Groups]:
    bs = broker.bootstrap
    create_topic(bs, "clicks", 3)
    create_topic(bs, "views", 1)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(30):
        p.produce("clicks", value=b"%d" % i, partition=i % 3)
    for i in range(4):
        p.produce("views", value=b"%d" % i)
    assert p.flush(30) == 0
    _empty_consumer_group(bs, IDLE, 1)
    classic = Consumer({"bootstrap.servers": bs, "group.id": CLASSIC, "enable.auto.commit": False})
    classic.commit(offsets=[TopicPartition("views", 0, 2)], asynchronous=False)
    classic.close()
    a = _consumer(bs, LIVE, "client-a")
    b = _consumer(bs, LIVE, "client-b", **{"group.instance.id": "instance-b"})
    for c in (a, b):
        c.subscribe(["clicks", "views"])
    _join([a, b], len(ALL_PARTITIONS))
    # a commits offset 2 of its partitions, with the leader epoch (LEADER-EPOCH in --verbose)
    a.commit(offsets=[TopicPartition(tp.topic, tp.partition, 2, leader_epoch=0) for tp in a.assignment()],
             asynchronous=False)
    wait_until(lambda: _settled(bs, LIVE), "cg-live Stable with every member at its target")
    yield Groups(bs, [a, b])
    for c in (a, b):
        c.close()


def kafka_consumer_groups(*args: str) -> Run:
    """Kafka's ConsumerGroupCommand as tests/tools/helpers.py's kafka_tool runs it, in a JVM
    tuned for a short run (C1 only, serial GC: half the CPU of a default start)."""
    r = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                        f"-Dlog4j2.configurationFile={LOG4J2}", "-cp", f"{JARS}/*",
                        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", *args],
                       capture_output=True, text=True, timeout=180)
    err = "".join(line for line in r.stderr.splitlines(keepends=True) if not line.startswith("[") and "WARN" not in line)
    return Run(r.returncode, r.stdout, err)


def _both(bootstrap: str, *runs: tuple[str, ...]) -> list[tuple[Run, Run]]:
    """(Kafka's tool, ours) for each argument list, run side by side."""
    with ThreadPoolExecutor(4) as pool:
        theirs = [pool.submit(kafka_consumer_groups, "--bootstrap-server", bootstrap, *r) for r in runs]
        ours = [pool.submit(kbroker, "consumer-groups", "--bootstrap-server", bootstrap, *r) for r in runs]
        return [(t.result(), o.result()) for t, o in zip(theirs, ours, strict=True)]


def _same(bootstrap: str, *runs: tuple[str, ...], our_rc: int = 0) -> list[str]:
    outs = []
    for args, (theirs, ours) in zip(runs, _both(bootstrap, *runs), strict=True):
        assert ours.out == theirs.out, f"{args}\nours:\n{ours.out}\nKafka's:\n{theirs.out}\nours stderr: {ours.err}"
        assert ours.err.strip() == theirs.err.strip(), (args, ours.err, theirs.err)
        assert (theirs.rc, ours.rc) == (0, our_rc), (args, theirs, ours)
        outs.append(ours.out)
    return outs


def test_listing_by_type_and_state_names_consumer_and_classic_groups_as_kafka_does(groups):
    both, stable = _same(groups.bootstrap, ("--list", "--type", "--state"), ("--list", "--state", "stable"))
    # the admin client's HashMap order, which is Kafka's output order
    assert both == ("GROUP                     TYPE                 STATE               \n"
                    "cg-idle                   Consumer             Empty               \n"
                    "cg-live                   Consumer             Stable              \n"
                    "classic-idle              Classic              Empty               \n")
    assert stable == "GROUP                     STATE               \ncg-live                   Stable              \n"
    r = kbroker("consumer-groups", "--bootstrap-server", groups.bootstrap, "--list", "--type", "consumer")
    assert [line.split() for line in r.out.splitlines()] == [["GROUP", "TYPE"], [IDLE, "Consumer"], [LIVE, "Consumer"]]


def test_describing_a_live_consumer_group_shows_its_members_partitions_lag_and_epochs_as_kafka_does(groups):
    offsets, members, state = _same(groups.bootstrap, ("--describe", "--group", LIVE, "--verbose"),
                                    ("--describe", "--group", LIVE, "--members", "--verbose"),
                                    ("--describe", "--group", LIVE, "--state", "--verbose"))
    d = describe(groups.bootstrap, LIVE)
    ids = {m.client_id: m.member_id for m in d.members}
    owned = {m.client_id: sorted((tp.topic_name, p) for tp in m.assignment.topic_partitions
                                 for p in tp.partitions) for m in d.members}
    assert sorted(owned["client-a"] + owned["client-b"]) == sorted(ALL_PARTITIONS)
    # offsets: one row per partition, named by the member that owns it; a's commits with epoch 0
    rows = [line.split() for line in offsets.splitlines()[2:]]
    assert offsets.splitlines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET",
                                               "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    end = {"clicks": "10", "views": "4"}
    expected = [[LIVE, t, str(p), "0", "2", end[t], str(int(end[t]) - 2), ids["client-a"], "/127.0.0.1", "client-a"]
                for t, p in owned["client-a"]]
    expected += [[LIVE, t, str(p), "-", "-", end[t], "-", ids["client-b"], "/127.0.0.1", "client-b"]
                 for t, p in owned["client-b"]]
    assert sorted(rows) == sorted(expected)
    # members: the static one's instance id (the other's is blank), epochs, current = target
    # assignment (Kafka's format)
    header, *member_rows = [line.split() for line in members.splitlines()[1:]]
    assert header == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                      "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]

    def text(tps: list[tuple[str, int]]) -> str:
        by_topic: dict[str, list[str]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(str(p))
        return ";".join(f"{t}:{','.join(ps)}" for t, ps in sorted(by_topic.items()))

    epoch = str(d.group_epoch)
    assert d.assignment_epoch == d.group_epoch
    assert sorted(member_rows) == sorted(
        [[LIVE, ids["client-a"], "/127.0.0.1", "client-a", str(len(owned["client-a"])), epoch,
          text(owned["client-a"]), epoch, text(owned["client-a"])],
         [LIVE, ids["client-b"], "instance-b", "/127.0.0.1", "client-b", str(len(owned["client-b"])), epoch,
          text(owned["client-b"]), epoch, text(owned["client-b"])]])
    coordinator = f"{groups.bootstrap}  (1)"
    assert state == (f"\nGROUP           {'COORDINATOR (ID)':<25} ASSIGNMENT-STRATEGY  STATE                "
                     "GROUP-EPOCH     TARGET-ASSIGNMENT-EPOCH   #MEMBERS"
                     f"\n{LIVE:<15} {coordinator:<25} uniform              Stable               "
                     f"{epoch:<15} {epoch:<25} 2\n")


def test_every_group_described_together_is_kafkas_for_both_group_types(groups):
    offsets, members, state = _same(groups.bootstrap, ("--describe", "--all-groups"),
                                    ("--describe", "--all-groups", "--members", "--verbose"),
                                    ("--describe", "--group", IDLE, "--group", CLASSIC, "--state", "--verbose"))
    assert f"\n{IDLE:<15} views           0          1               4               3               -" in offsets
    assert f"\n{CLASSIC:<15} views           0          2               4               2               -" in offsets
    assert members.count("CURRENT-EPOCH") == 3   # a header per group, the empty ones with no rows
    lines = [line.split() for line in state.splitlines() if line]
    d = describe(groups.bootstrap, IDLE)
    # the empty consumer group keeps its epochs; a classic group has none
    assert lines[1] == [IDLE, *groups.bootstrap.split(), "(1)", "uniform", "Empty", str(d.group_epoch),
                        str(d.assignment_epoch), "0"]
    assert lines[3] == [CLASSIC, *groups.bootstrap.split(), "(1)", "-", "Empty", "-", "-", "0"]


def test_an_empty_consumer_group_is_deleted_and_a_live_one_refused_as_kafka_refuses_it(groups):
    (refused,) = _same(groups.bootstrap, ("--delete", "--group", LIVE), our_rc=1)
    assert refused == ("\nError: Deletion of some consumer groups failed:\n* Group 'cg-live' could not be deleted "
                       "due to: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.\n")
    _empty_consumer_group(groups.bootstrap, "cg-gone", 3)
    r = kbroker("consumer-groups", "--bootstrap-server", groups.bootstrap, "--delete", "--group", "cg-gone")
    assert (r.rc, r.out, r.err) == (0, "Deletion of requested consumer groups ('cg-gone') was successful.\n", "")
    (gone,) = _same(groups.bootstrap, ("--describe", "--group", "cg-gone"), our_rc=1)
    assert gone == "\nError: Consumer group 'cg-gone' does not exist.\n"
    listed = kbroker("consumer-groups", "--bootstrap-server", groups.bootstrap, "--list").out.split()
    assert "cg-gone" not in listed and LIVE in listed
