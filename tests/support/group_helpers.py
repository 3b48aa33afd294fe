"""Helpers shared by the consumer-group compat tests: numbered records, topics made up
front, and waiting until a group's members hold a settled split of a topic."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def produce_numbers(bootstrap: str, n: int, topic: str = "clicks", start: int = 0) -> None:
    """Records start..start+n-1, key and value both the decimal number."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + n):
        p.produce(topic, key=str(i).encode(), value=str(i).encode())
    assert p.flush(30) == 0


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future resolves
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def wait_for_a_settled_split(assignments: dict[str, frozenset[int]], lock: threading.Lock,
                              members: int, partitions: int, timeout_s: float) -> None:
    """Wait until ``members`` members each hold a non-empty, disjoint share covering all
    ``partitions`` and the shares have not changed for a second."""
    deadline = time.time() + timeout_s
    last, since = None, time.time()
    while time.time() < deadline:
        with lock:
            shares = dict(assignments)
        if shares != last:
            last, since = shares, time.time()
        split = (len(shares) == members and all(shares.values())
                 and sum(len(s) for s in shares.values()) == partitions
                 and frozenset().union(*shares.values()) == frozenset(range(partitions)))
        if split and time.time() - since >= 1.0:
            return
        time.sleep(0.05)
    raise AssertionError(f"the group never settled on a split of {partitions} partitions: {last}")
