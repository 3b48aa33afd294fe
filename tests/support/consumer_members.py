"""Consumer-group-protocol members (KIP-848) as processes a test can kill: confluent-kafka
(tests/support/consumer_protocol_member.py) or Kafka's Java consumer
(tests/support/java/ConsumerProtocolMember.java, kafka-clients 4.x from `make kafka-jars`).
Both write the same output file: ``value partition offset`` per committed record and
``assigned t:p,...`` per assignment change."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.broker_process import ROOT
from tests.support.wire_client import WireClient
from wire.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse

JAVA_MEMBER = Path(__file__).resolve().parent / "java" / "ConsumerProtocolMember.java"

# Sessions short enough for a test (Kafka's minimums are 45 s / 5 s: lowered with them)
FAST = {"group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
        "offsets.topic.num.partitions": "1"}


def member(broker, client: str, group: str, subscription: str, out: Path,
           instance_id: str | None = None, protocol: str = "consumer") -> Member:
    return Member(broker.bootstrap, group, subscription, out, instance_id, java=client == "java",
                  protocol=protocol)


def kafka4_client_classpath() -> str:
    """kafka-clients 4.x and slf4j-api as `make kafka-jars` fetched them (bench/kafka/jars)."""
    jars = ROOT / "bench" / "kafka" / "jars"
    clients = sorted(jars.glob("kafka-clients-4.*.jar"))
    slf4j = sorted(jars.glob("slf4j-api-*.jar"))
    assert clients and slf4j, "run `make kafka-jars` (make test does) for kafka-clients 4.x"
    return ":".join(str(p) for p in (clients[-1], slf4j[-1]))


class Member:
    def __init__(self, bootstrap: str, group: str, subscription: str, out: Path,
                 instance_id: str | None = None, *, java: bool = False,
                 protocol: str = "consumer") -> None:
        self.out = out
        tail = [bootstrap, group, subscription, str(out)] + ([instance_id] if instance_id else [])
        if java:
            args = ["java", "-cp", kafka4_client_classpath(), str(JAVA_MEMBER), *tail]
        else:
            args = [sys.executable, "-m", "tests.support.consumer_protocol_member", *tail]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "GROUP_PROTOCOL": protocol}
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines() if self.out.exists() else []

    def records(self) -> list[tuple[int, int, int]]:
        """(value, partition, offset) of every committed record."""
        out = []
        for line in self.lines():
            if line[:1].isdigit():
                v, p, o = line.split()
                out.append((int(v), int(p), int(o)))
        return out

    def assignment(self) -> set[str]:
        assigned = [line for line in self.lines() if line.startswith("assigned")]
        if not assigned:
            return set()
        parts = assigned[-1].split(maxsplit=1)
        return set(parts[1].split(",")) if len(parts) > 1 else set()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)   # a clean close (a leave) can take a while on a busy machine
            except subprocess.TimeoutExpired:
                self.kill()


def wait_until(condition: Callable[[], bool], timeout_s: float = 60, what: str = "condition") -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def settled(members: list[Member], partitions: set[str]) -> bool:
    """Each member holds a non-empty share and the shares are a split of ``partitions``."""
    shares = [m.assignment() for m in members]
    return all(shares) and sum(len(s) for s in shares) == len(partitions) \
        and set().union(*shares) == partitions


def describe(bootstrap: str, group: str) -> ConsumerGroupDescribeResponse.DescribedGroup:
    """The group as ConsumerGroupDescribe v1 answers it."""
    client = WireClient(bootstrap)
    try:
        resp = client.call(ConsumerGroupDescribeRequest(group_ids=[group]), 1,
                           ConsumerGroupDescribeResponse)
    finally:
        client.close()
    (described,) = resp.groups
    return described
