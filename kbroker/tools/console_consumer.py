"""``kbroker console-consumer``: kafka-console-consumer.sh, printing records as lines.

Formatter ``default`` (Kafka's DefaultMessageFormatter): per record, the enabled parts
in Kafka's order, each followed by ``key.separator`` (TAB): ``CreateTime:<ms>``
(print.timestamp), ``Partition:<p>`` (print.partition), ``Offset:<o>`` (print.offset),
headers ``k:v,k2:v2`` or ``NO_HEADERS`` (print.headers), the key (print.key), then the value
(print.value, default on) and ``line.separator``; null keys/values print ``null.literal``
("null").  At the end ``Processed a total of N messages`` goes to stderr, as Kafka's does.

Where it starts: ``--offset`` (earliest / latest / a number, with ``--partition``),
``--from-beginning``, otherwise the group's committed offsets with ``--group`` (latest where
none), otherwise the end.  It reads every partition (or ``--partition``) from its leader.
With ``--group`` the offsets read are committed when it stops, as an admin commit
(generation -1): the group must have no active members (the tool does not join the group,
unlike Kafka's, which is a full group member).  Stops after ``--max-messages`` or when
``--timeout-ms`` pass without a record.
"""

from __future__ import annotations

import sys
import time

import click

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import connect, connection_options, fail
from kbroker.tools.console_producer import parse_properties
from kbroker.tools.group_offsets_reset import commit
from kbroker.tools.group_reads import Group, committed_offsets
from wire.messages import FetchRequest
from wire.record_batch import iter_batches

FETCH_VERSION_CAP = 12  # v13+ name topics by id


class Formatter:
    def __init__(self, props: dict[str, str]) -> None:
        def flag(name: str, default: bool = False) -> bool:
            return props.get(name, "true" if default else "false").lower() == "true"
        self.ts, self.partition, self.offset = flag("print.timestamp"), flag("print.partition"), flag("print.offset")
        self.headers, self.key, self.value = flag("print.headers"), flag("print.key"), flag("print.value", True)
        self.key_sep = props.get("key.separator", "\t")
        self.line_sep = props.get("line.separator", "\n")
        self.headers_sep = props.get("headers.separator", ",")
        self.header_key_sep = props.get("headers.key.separator", ":")
        self.null = props.get("null.literal", "null")

    def _text(self, b: bytes | None) -> str:
        return self.null if b is None else b.decode("utf-8", "replace")

    def format(self, partition: int, r, log_append: bool) -> str:
        out = ""
        if self.ts:
            out += ("LogAppendTime:" if log_append else "CreateTime:") + str(r.timestamp) + self.key_sep
        if self.partition:
            out += f"Partition:{partition}{self.key_sep}"
        if self.offset:
            out += f"Offset:{r.offset}{self.key_sep}"
        if self.headers:
            out += (self.headers_sep.join(f"{k}{self.header_key_sep}{self._text(v)}" for k, v in r.headers)
                    if r.headers else "NO_HEADERS") + self.key_sep
        if self.key:
            out += self._text(r.key) + self.key_sep
        if self.value:
            out += self._text(r.value)
        return out + self.line_sep


def start_offsets(client: Client, tps: list[tuple[str, int]], offset: str | None, from_beginning: bool,
                  group: Group | None) -> dict[tuple[str, int], int]:
    latest = client.list_offsets(tps, -1)
    earliest = client.list_offsets(tps, -2)
    if offset is not None and offset not in ("earliest", "latest"):
        n = int(offset)
        return {tp: n for tp in tps}
    if offset == "earliest" or (offset is None and from_beginning):
        return {tp: earliest.get(tp) or 0 for tp in tps}
    if offset is None and group is not None:
        committed = committed_offsets(client, group.group_id, group.coordinator)
        return {tp: committed.get(tp, latest.get(tp) or 0) for tp in tps}
    return {tp: latest.get(tp) or 0 for tp in tps}


def fetch_once(client: Client, leaders: dict[tuple[str, int], int], positions: dict[tuple[str, int], int],
               max_wait_ms: int):
    """One Fetch per leader; yields (topic, partition, record, log_append_time) in order and
    advances ``positions``."""
    by_leader: dict[int, dict[str, list[int]]] = {}
    for (t, p), leader in leaders.items():
        by_leader.setdefault(leader, {}).setdefault(t, []).append(p)
    for leader, topics in by_leader.items():
        req = FetchRequest(cluster_id=None, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1,
                           max_bytes=52428800, isolation_level=0, session_id=0, session_epoch=-1, topics=[
            FetchRequest.FetchTopic(topic=t, partitions=[FetchRequest.FetchPartition(
                partition=p, current_leader_epoch=-1, fetch_offset=positions[(t, p)], last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=1048576) for p in ps]) for t, ps in topics.items()],
            forgotten_topics_data=[], rack_id="")
        resp, _ = client.send(req, node=leader, cap=FETCH_VERSION_CAP)
        if getattr(resp, "error_code", 0):
            raise KafkaError(resp.error_code, what="Fetch")
        for t in resp.responses:
            for pd in t.partitions:
                tp = (t.topic, pd.partition_index)
                if pd.error_code == 1:  # OFFSET_OUT_OF_RANGE: the reset policy, earliest
                    positions[tp] = client.list_offsets([tp], -2).get(tp) or 0
                    continue
                if pd.error_code:
                    raise KafkaError(pd.error_code, what=f"Fetch {tp[0]}-{tp[1]}")
                for b in iter_batches(pd.records or b""):
                    if b.is_control:
                        positions[tp] = max(positions[tp], b.next_offset)
                        continue
                    log_append = bool(b.attributes & 0x08)
                    for r in b.records():
                        if r.offset < positions[tp]:
                            continue  # a compressed batch starts before the fetch offset
                        positions[tp] = r.offset + 1
                        yield tp[0], tp[1], r, log_append
                    positions[tp] = max(positions[tp], b.next_offset)


@click.command("console-consumer", help="Print records of a topic (kafka-console-consumer.sh).")
@connection_options
@click.option("--topic", required=True, help="REQUIRED: the topic to consume.")
@click.option("--partition", type=int, help="Only this partition.")
@click.option("--offset", help="earliest, latest or an offset (with --partition).")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset (without a committed one).")
@click.option("--group", help="Start at the group's committed offsets and commit where it stops.")
@click.option("--max-messages", type=int, help="Stop after this many records.")
@click.option("--timeout-ms", type=int, help="Stop when no record came for this long.")
@click.option("--formatter", default="default", show_default=True,
              type=click.Choice(["default", "kafka.tools.DefaultMessageFormatter",
                                 "org.apache.kafka.tools.consumer.DefaultMessageFormatter"]),
              help="The message formatter (Kafka's default formatter).")
@click.option("--property", "--formatter-property", "properties", multiple=True, metavar="KEY=VALUE",
              help="print.timestamp, print.key, print.offset, print.partition, print.headers, print.value, "
                   "key.separator, line.separator, headers.separator, headers.key.separator, null.literal.")
@fail()
def console_consumer(bootstrap_server: str, command_config: str | None, topic: str, partition: int | None,
                     offset: str | None, from_beginning: bool, group: str | None, max_messages: int | None,
                     timeout_ms: int | None, formatter: str, properties: tuple[str, ...]) -> None:
    if offset is not None and partition is None:
        raise click.UsageError("The partition is required when offset is specified.")
    if from_beginning and offset is not None:
        raise click.UsageError("Options from-beginning and offset cannot be specified together.")
    fmt = Formatter(parse_properties(properties))
    count = 0
    out = sys.stdout
    with connect(bootstrap_server, command_config) as client:
        leaders = client.partition_leaders([topic])
        if partition is not None:
            if (topic, partition) not in leaders:
                raise ToolError(f"Partition {partition} of topic {topic} does not exist")
            leaders = {(topic, partition): leaders[(topic, partition)]}
        if any(v < 0 for v in leaders.values()):
            raise ToolError(f"Some partitions of {topic} have no leader")
        grp = None
        if group is not None:
            grp = Group(group, "", "", "", client.find_coordinator(group), [])
        positions = start_offsets(client, sorted(leaders), offset, from_beginning, grp)
        last_record = time.monotonic()
        try:
            while max_messages is None or count < max_messages:
                got = False
                for _t, p, r, log_append in fetch_once(client, leaders, positions, 500):
                    out.write(fmt.format(p, r, log_append))
                    got = True
                    count += 1
                    if max_messages is not None and count >= max_messages:
                        break
                out.flush()
                if got:
                    last_record = time.monotonic()
                elif timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= timeout_ms:
                    break
        except KeyboardInterrupt:
            pass
        finally:
            if grp is not None:
                commit(client, grp, positions)
            click.echo(f"Processed a total of {count} messages", err=True)
