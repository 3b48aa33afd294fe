"""A small application that talks to Kafka: orders in, per-customer totals out."""

from __future__ import annotations

import json
import time

from confluent_kafka import Consumer, Producer


def publish_orders(bootstrap_servers: str, topic: str, orders: list[dict]) -> None:
    """Send each order ({"customer": str, "amount": int}) keyed by its customer, so one
    customer's orders stay in one partition, in order."""
    producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True})
    for order in orders:
        producer.produce(topic, key=order["customer"].encode(), value=json.dumps(order).encode())
    if producer.flush(30) != 0:
        raise RuntimeError("some orders were not delivered")


def order_totals(bootstrap_servers: str, topic: str, group: str, expected: int,
                 timeout_s: float = 60.0) -> dict[str, int]:
    """Read ``expected`` orders as consumer group ``group``, commit, and total them by customer."""
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    totals: dict[str, int] = {}
    seen = 0
    deadline = time.monotonic() + timeout_s
    try:
        while seen < expected and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            order = json.loads(msg.value())
            totals[order["customer"]] = totals.get(order["customer"], 0) + order["amount"]
            seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return totals
