"""``kbroker topics``: kafka-topics.sh (Kafka's TopicCommand) over the protocol.

Output is TopicCommand's: ``--list`` prints one name a line (sorted); ``--describe`` prints
per topic ``Topic: T<TAB>[TopicId: ID<TAB>]PartitionCount: N<TAB>ReplicationFactor: R<TAB>
Configs: k=v,...`` (the non-default configs, in the order Java's HashMap gives them) and per
partition ``<TAB>Topic: T<TAB>Partition: P<TAB>Leader: L<TAB>Replicas: a,b<TAB>Isr: a,b
<TAB>Elr: <TAB>LastKnownElr: `` (``Elr: N/A`` when the broker lacks DescribeTopicPartitions).
``--topic`` is a regular expression matched against the whole name, except for --create.
Errors print ``Error while executing topic command : <message>`` to stderr, exit status 1.
"""

from __future__ import annotations

import base64
import re
import sys
from typing import Any

import click

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import connect, connection_options, fail, java_string_hash_order
from wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeTopicPartitionsRequest,
)
from wire.schema import ZERO_UUID

DESCRIBE_TOPIC_PARTITIONS = 75
TOPIC_RESOURCE = 2
DEFAULT_CONFIG_SOURCE = 5  # DescribeConfigsResponse.ConfigSource.DEFAULT_CONFIG
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def parse_configs(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k:
            raise ToolError(f"Invalid topic config: all configs to be added must be in the format \"key=val\": {p}")
        out[k.strip()] = v.strip()
    return out


def matching_topics(client: Client, pattern: str | None, exclude_internal: bool) -> list[str]:
    """Every topic name (sorted) that the ``--topic`` regex matches whole (TopicCommand's
    IncludeList), internal topics left out with --exclude-internal."""
    md = client.metadata(None)
    names = sorted(t.name for t in md.topics if not t.error_code)
    internal = {t.name for t in md.topics if t.is_internal} | set(INTERNAL_TOPICS)
    if exclude_internal:
        names = [n for n in names if n not in internal]
    if pattern:
        rx = re.compile(pattern.strip().strip("'\""))
        names = [n for n in names if rx.fullmatch(n)]
    return names


def describe_partitions(client: Client, topics: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """Per topic: name, id, partitions (sorted); and whether ELR fields are known
    (DescribeTopicPartitions, paged by its cursor) or not (Metadata)."""
    out: list[dict[str, Any]] = []
    if client.supports(DESCRIBE_TOPIC_PARTITIONS):
        cursor = None
        by_name: dict[str, dict[str, Any]] = {}
        while True:
            req = DescribeTopicPartitionsRequest(
                topics=[DescribeTopicPartitionsRequest.TopicRequest(name=t) for t in topics],
                response_partition_limit=2000, cursor=cursor)
            resp, _ = client.send(req)
            for t in resp.topics:
                if t.error_code:
                    raise KafkaError(t.error_code, what=f"topic {t.name}")
                d = by_name.setdefault(t.name, {"name": t.name, "id": t.topic_id, "partitions": []})
                d["partitions"].extend(
                    {"partition": p.partition_index, "leader": p.leader_id, "replicas": p.replica_nodes,
                     "isr": p.isr_nodes, "elr": p.eligible_leader_replicas, "last_elr": p.last_known_elr}
                    for p in t.partitions)
            if resp.next_cursor is None:
                break
            cursor = DescribeTopicPartitionsRequest.Cursor(
                topic_name=resp.next_cursor.topic_name, partition_index=resp.next_cursor.partition_index)
        # KafkaAdminClient collects the descriptions into a HashMap: Kafka prints them in its order
        out = [by_name[t] for t in java_string_hash_order(topics) if t in by_name]
        elr = True
    else:
        md = client.metadata(topics)
        for t in md.topics:
            if t.error_code:
                raise KafkaError(t.error_code, what=f"topic {t.name}")
            out.append({"name": t.name, "id": getattr(t, "topic_id", ZERO_UUID), "partitions": [
                {"partition": p.partition_index, "leader": p.leader_id, "replicas": p.replica_nodes,
                 "isr": p.isr_nodes, "elr": None, "last_elr": None} for p in t.partitions]})
        elr = False
    for d in out:
        d["partitions"].sort(key=lambda p: p["partition"])
    return out, elr


def topic_configs(client: Client, topics: list[str]) -> dict[str, list[tuple[str, str | None, bool]]]:
    """topic -> [(name, value, is_default)] in the order kafka-topics.sh would print them."""
    if not topics:
        return {}
    req = DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC_RESOURCE, resource_name=t,
                                                       configuration_keys=None) for t in topics])
    resp, v = client.send(req)
    out = {}
    for r in resp.results:
        if r.error_code:
            raise KafkaError(r.error_code, r.error_message, what=f"DescribeConfigs {r.resource_name}")
        entries = {c.name: (c.value, c.is_default if v == 0 else c.config_source == DEFAULT_CONFIG_SOURCE)
                   for c in r.configs}
        out[r.resource_name] = [(k, *entries[k]) for k in java_string_hash_order(list(entries))]
    return out


def _ids(nodes: list[int] | None) -> str:
    return ",".join(str(n) for n in nodes or [])


@click.command("topics", help="Create, delete, describe, or change a topic (kafka-topics.sh).")
@connection_options
@click.option("--list", "do_list", is_flag=True, help="List all available topics.")
@click.option("--create", "do_create", is_flag=True, help="Create a new topic.")
@click.option("--delete", "do_delete", is_flag=True, help="Delete a topic.")
@click.option("--alter", "do_alter", is_flag=True, help="Alter the number of partitions.")
@click.option("--describe", "do_describe", is_flag=True, help="List details for the given topics.")
@click.option("--topic", help="The topic (a regular expression, except for --create).")
@click.option("--partitions", type=int, help="The number of partitions (create or alter).")
@click.option("--replication-factor", type=int, help="The replication factor (create).")
@click.option("--config", "configs", multiple=True, metavar="NAME=VALUE",
              help="A topic configuration override for the topic being created.")
@click.option("--under-replicated-partitions", is_flag=True,
              help="When describing, only show under-replicated partitions.")
@click.option("--unavailable-partitions", is_flag=True,
              help="When describing, only show partitions whose leader is not available.")
@click.option("--exclude-internal", is_flag=True, help="Exclude internal topics when listing or describing.")
@click.option("--if-exists", is_flag=True, help="Alter/delete/describe only if the topic exists.")
@click.option("--if-not-exists", is_flag=True, help="Create does not fail if the topic exists.")
@fail("Error while executing topic command : ")
def topics(bootstrap_server: str, command_config: str | None, do_list: bool, do_create: bool,
           do_delete: bool, do_alter: bool, do_describe: bool, topic: str | None, partitions: int | None,
           replication_factor: int | None, configs: tuple[str, ...], under_replicated_partitions: bool,
           unavailable_partitions: bool, exclude_internal: bool, if_exists: bool, if_not_exists: bool) -> None:
    actions = [do_list, do_create, do_delete, do_alter, do_describe]
    if sum(actions) != 1:
        raise click.UsageError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    if (do_create or do_alter or do_delete) and not topic:
        raise click.UsageError("--topic is required for --create, --alter and --delete")
    with connect(bootstrap_server, command_config) as client:
        if do_list:
            for name in matching_topics(client, topic, exclude_internal):
                click.echo(name)
        elif do_create:
            _create(client, topic, partitions, replication_factor, parse_configs(configs), if_not_exists)
        elif do_describe:
            _describe(client, topic, exclude_internal, if_exists, under_replicated_partitions,
                      unavailable_partitions)
        else:
            names = matching_topics(client, topic, exclude_internal)
            if not names and not if_exists:
                raise ToolError(f"Topic '{topic}' does not exist as expected")
            if do_alter:
                if partitions is None:
                    raise click.UsageError("--alter needs --partitions (topic configs: kbroker configs)")
                _alter(client, names, partitions)
            elif names:
                _delete(client, names)


def _create(client: Client, name: str, partitions: int | None, rf: int | None,
            configs: dict[str, str], if_not_exists: bool) -> None:
    if rf is not None and not 1 <= rf <= 32767:
        raise ToolError("The replication factor must be between 1 and 32767 inclusive")
    if partitions is not None and partitions < 1:
        raise ToolError("The partitions must be greater than 0")
    if "." in name and "_" in name:
        click.echo("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
                   "('_') could collide. To avoid issues it is best to use either, but not both.")
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=-1 if partitions is None else partitions,
        replication_factor=-1 if rf is None else rf, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])],
        timeout_ms=30000)
    client.metadata([])
    resp, _ = client.send(req, node=client.controller_id if client.controller_id >= 0 else -1)
    r = resp.topics[0]
    if r.error_code == 36 and if_not_exists:  # TOPIC_ALREADY_EXISTS
        return
    if r.error_code:
        raise ToolError(r.error_message or KafkaError(r.error_code).name)
    click.echo(f"Created topic {name}.")


def _alter(client: Client, names: list[str], partitions: int) -> None:
    req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name=n, count=partitions, assignments=None) for n in names], timeout_ms=30000, validate_only=False)
    client.metadata([])
    resp, _ = client.send(req, node=client.controller_id if client.controller_id >= 0 else -1)
    for r in resp.results:
        if r.error_code:
            raise ToolError(r.error_message or KafkaError(r.error_code).name)


def _delete(client: Client, names: list[str]) -> None:
    v = client.version(20)
    if v >= 6:
        req = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n, topic_id=ZERO_UUID)
                                          for n in names], timeout_ms=30000)
    else:
        req = DeleteTopicsRequest(topic_names=names, timeout_ms=30000)
    client.metadata([])
    resp, _ = client.send(req, node=client.controller_id if client.controller_id >= 0 else -1)
    for r in resp.responses:
        if r.error_code:
            raise ToolError(getattr(r, "error_message", None) or KafkaError(r.error_code).name)


def _describe(client: Client, pattern: str | None, exclude_internal: bool, if_exists: bool,
              under_replicated: bool, unavailable: bool) -> None:
    names = matching_topics(client, pattern, exclude_internal)
    if pattern and not names and not if_exists:
        raise ToolError(f"Topic '{pattern}' does not exist as expected")
    if not names:
        return
    described, elr_known = describe_partitions(client, names)
    configs = topic_configs(client, names)
    live = set(client.nodes)
    report_only = under_replicated or unavailable
    out = sys.stdout
    for d in described:
        parts = d["partitions"]
        if not report_only:
            conf = ",".join(f"{k}={v}" for k, v, is_default in configs.get(d["name"], []) if not is_default)
            line = f"Topic: {d['name']}"
            if d["id"] != ZERO_UUID:
                line += f"\tTopicId: {_kafka_uuid(d['id'])}"
            rf = len(parts[0]["replicas"]) if parts else 0
            line += f"\tPartitionCount: {len(parts)}\tReplicationFactor: {rf}\tConfigs: {conf}"
            out.write(line + "\n")
        for p in parts:
            if report_only:
                shown = ((under_replicated and len(p["replicas"]) - len(p["isr"]) > 0)
                         or (unavailable and (p["leader"] < 0 or p["leader"] not in live)))
                if not shown:
                    continue
            leader = str(p["leader"]) if p["leader"] >= 0 else "none"
            line = (f"\tTopic: {d['name']}\tPartition: {p['partition']}\tLeader: {leader}"
                    f"\tReplicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}")
            if elr_known:
                line += f"\tElr: {_ids(p['elr'])}\tLastKnownElr: {_ids(p['last_elr'])}"
            else:
                line += "\tElr: N/A\tLastKnownElr: N/A"
            out.write(line + "\n")
    out.flush()


def _kafka_uuid(u: Any) -> str:
    """Kafka prints a topic id as URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")
