"""A confluent-kafka consumer of the consumer group protocol (KIP-848) as a process of its own,
so a test can kill it with -9.

    python -m tests.support.consumer_protocol_member BOOTSTRAP GROUP SUBSCRIPTION OUTFILE [INSTANCE_ID]

SUBSCRIPTION is a comma-separated topic list, or a regex when it starts with ``^``.
Each consumed record is committed synchronously and then written to OUTFILE as
``value partition offset`` (so a line is a committed record; a commit the group refuses,
e.g. after the partition moved, writes nothing); every assignment change is written as
``assigned topic:partition,...``.  Runs until killed or SIGTERM (closes cleanly).
``GROUP_PROTOCOL=classic`` in the environment makes it a classic-protocol member.
"""

from __future__ import annotations

import os
import signal
import sys

from confluent_kafka import Consumer, KafkaException


def main(argv: list[str]) -> None:
    bootstrap, group, subscription, outfile = argv[:4]
    conf = {"bootstrap.servers": bootstrap, "group.id": group,
            "group.protocol": os.environ.get("GROUP_PROTOCOL", "consumer"),
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if conf["group.protocol"] == "classic":
        conf["session.timeout.ms"] = 6000
    if len(argv) > 4:
        conf["group.instance.id"] = argv[4]
    consumer = Consumer(conf)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    topics = [subscription] if subscription.startswith("^") else subscription.split(",")
    consumer.subscribe(topics)
    last: list[str] = []
    with open(outfile, "a", buffering=1) as out:
        while not stop:
            m = consumer.poll(0.1)
            now = sorted(f"{tp.topic}:{tp.partition}" for tp in consumer.assignment())
            if now != last:
                last = now
                out.write("assigned " + ",".join(now) + "\n")
            if m is None or m.error() is not None:
                continue
            try:
                consumer.commit(message=m, asynchronous=False)
            except KafkaException:
                continue   # not committed: whoever owns the partition now reads it again
            out.write(f"{m.value().decode()} {m.partition()} {m.offset()}\n")
        consumer.close()
        out.write("closed\n")


if __name__ == "__main__":
    main(sys.argv[1:])
