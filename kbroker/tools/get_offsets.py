"""``kbroker get-offsets``: kafka-get-offsets.sh (Kafka's GetOffsetShell).

Prints ``topic:partition:offset`` per partition, ordered as GetOffsetShell orders them (by
the string ``topic-partition``, so ``t-10`` comes before ``t-2``); partitions without such
an offset (e.g. no record at or after the ``--time``) are left out, as Kafka leaves them.
"""

from __future__ import annotations

import re

import click

from kbroker.tools.client import ToolError
from kbroker.tools.common import connect, connection_options, fail
from kbroker.tools.topics import matching_topics

# ListOffsetsRequest's special timestamps
SPECIAL_TIMES = {"latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4,
                 "latest-tiered": -5, "earliest-pending-upload": -6}
# TopicPartitionPattern: TopicPattern(:PartitionPattern)? | :PartitionPattern
_RULE = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")


def parse_time(s: str) -> int:
    if s in SPECIAL_TIMES:
        return SPECIAL_TIMES[s]
    try:
        return int(s)
    except ValueError:
        raise ToolError(f"Malformed time argument {s}. Please use -1 or latest / -2 or earliest / -3 or "
                        "max-timestamp / -4 or earliest-local / -5 or latest-tiered / -6 or "
                        "earliest-pending-upload, or a specified long format timestamp") from None


def _rules(topic: str | None, partitions: str | None, topic_partitions: str | None):
    """[(topic regex, partition predicate)]; a partition is listed if any rule allows it."""
    if topic_partitions:
        out = []
        for spec in topic_partitions.split(","):
            m = _RULE.fullmatch(spec)
            if not m:
                raise ToolError(f"Invalid rule specification: {spec}")
            rx = re.compile(m.group(1) or ".*")
            if m.group(2):
                one = int(m.group(2))
                out.append((rx, lambda p, one=one: p == one))
            else:
                lo = int(m.group(3)) if m.group(3) else 0
                hi = int(m.group(4)) if m.group(4) else 2**31 - 1
                out.append((rx, lambda p, lo=lo, hi=hi: lo <= p < hi))
        return out
    ids: set[int] = set()
    if partitions:
        try:
            ids = {int(x) for x in partitions.split(",")}
        except ValueError:
            raise ToolError("--partitions expects a comma separated list of numeric partition ids, "
                            f"but received: {partitions}") from None
    return [(re.compile(topic or ".*"), lambda p: not ids or p in ids)]


@click.command("get-offsets", help="Offsets of topic partitions at a time (kafka-get-offsets.sh).")
@connection_options
@click.option("--topic", help="The topic(s) to get offsets for (a regular expression); default all.")
@click.option("--partitions", help="Comma separated list of partition ids; default all.")
@click.option("--topic-partitions", help="Comma separated TOPIC_REGEX[:PARTITION|:FROM-TO] rules.")
@click.option("--time", "time_", default="latest", show_default=True,
              help="earliest, latest, max-timestamp, earliest-local, latest-tiered, or a timestamp in ms "
                   "(-1 latest, -2 earliest, -3 max-timestamp).")
@click.option("--exclude-internal-topics", is_flag=True, help="Leave internal topics out.")
@fail("Error occurred: ")
def get_offsets(bootstrap_server: str, command_config: str | None, topic: str | None,
                partitions: str | None, topic_partitions: str | None, time_: str,
                exclude_internal_topics: bool) -> None:
    if topic_partitions and (topic or partitions):
        raise ToolError("--topic-partitions cannot be used with --topic or --partitions")
    timestamp = parse_time(time_)
    rules = _rules(topic, partitions, topic_partitions)
    with connect(bootstrap_server, command_config) as client:
        names = [n for n in matching_topics(client, None, exclude_internal_topics)
                 if any(rx.fullmatch(n) for rx, _ in rules)]
        leaders = client.partition_leaders(names) if names else {}
        tps = [tp for tp in leaders if any(rx.fullmatch(tp[0]) and ok(tp[1]) for rx, ok in rules)]
        if not tps:
            raise ToolError("Could not match any topic-partitions with the specified filters")
        offsets = client.list_offsets(tps, timestamp)
        for t, p in sorted(tps, key=lambda tp: f"{tp[0]}-{tp[1]}"):
            if offsets.get((t, p)) is not None:
                click.echo(f"{t}:{p}:{offsets[(t, p)]}")
