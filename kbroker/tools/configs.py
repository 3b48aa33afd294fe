"""``kbroker configs``: kafka-configs.sh (Kafka's ConfigCommand) for topics and brokers.

``--describe`` prints ``Dynamic configs for topic T are:`` (``broker N``, ``Default configs for
brokers in the cluster``; ``All configs`` with ``--all``) and then, sorted by name, one line
per config: ``  name=value sensitive=false synonyms={SOURCE:name=value, ...}``; without
``--all`` only the configs set at the entity's own dynamic level are listed.  ``--alter``
uses IncrementalAlterConfigs (``--add-config k1=v1,k2=[a,b]``, ``--delete-config k1,k2``)
and prints ``Completed updating config for topic T.``.
"""

from __future__ import annotations

import sys

import click

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import connect, connection_options, fail, java_string_hash_order
from kbroker.tools.topics import matching_topics
from wire.messages import DescribeConfigsRequest, IncrementalAlterConfigsRequest

TOPIC, BROKER = 2, 4  # ConfigResource.Type
# DescribeConfigsResponse config_source -> Kafka's admin ConfigEntry.ConfigSource name
SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
           3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
           6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations


def parse_add_config(text: str) -> dict[str, str]:
    """``k1=v1,k2=[v2a,v2b]``: commas inside square brackets belong to the value (the brackets
    are dropped), as ConfigCommand parses --add-config."""
    out: dict[str, str] = {}
    depth, cur, parts = 0, "", []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    for part in parts:
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise ToolError(f"Invalid entity config: all configs to be added must be in the format \"key=val\": {part}")
        v = v.strip()
        if v.startswith("[") and v.endswith("]"):
            v = v[1:-1]
        out[k.strip()] = v
    return out


def describe(client: Client, rtype: int, name: str, all_: bool) -> list[str]:
    node = int(name) if rtype == BROKER and name else -1
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=rtype, resource_name=name, configuration_keys=None)],
        include_synonyms=True, include_documentation=False)
    resp, v = client.send(req, node=node)
    r = resp.results[0]
    if r.error_code:
        raise KafkaError(r.error_code, r.error_message, what=f"DescribeConfigs {name or '<default>'}")
    wanted = None if all_ else (1 if rtype == TOPIC else (2 if name else 3))
    lines = []
    for c in sorted(r.configs, key=lambda c: c.name):
        if v == 0 or (wanted is not None and c.config_source != wanted):
            continue
        syn = ", ".join(f"{SOURCES.get(s.source, 'UNKNOWN')}:{s.name}={_java(s.value)}" for s in c.synonyms or [])
        lines.append(f"  {c.name}={_java(c.value)} sensitive={'true' if c.is_sensitive else 'false'} synonyms={{{syn}}}")
    return lines


def _java(v: str | None) -> str:
    return "null" if v is None else v


def _describe_header(rtype: int, name: str, all_: bool) -> str:
    kind = "All" if all_ else ("Default" if rtype == BROKER and not name else "Dynamic")
    what = f"topic {name}" if rtype == TOPIC else (f"broker {name}" if name else "brokers in the cluster")
    return f"{kind} configs for {what} are:"


def alter(client: Client, rtype: int, name: str, add: dict[str, str], delete: list[str]) -> None:
    ops = [IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=SET, value=v)
           for k, v in add.items()]
    ops += [IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=DELETE, value=None)
            for k in delete]
    req = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=rtype, resource_name=name, configs=ops)], validate_only=False)
    node = int(name) if rtype == BROKER and name else -1
    resp, _ = client.send(req, node=node)
    for r in resp.responses:
        if r.error_code:
            raise ToolError(r.error_message or KafkaError(r.error_code).name)


@click.command("configs", help="Describe or change topic and broker configs (kafka-configs.sh).")
@connection_options
@click.option("--describe", "do_describe", is_flag=True, help="List configs for the given entity.")
@click.option("--alter", "do_alter", is_flag=True, help="Alter the configuration of the entity.")
@click.option("--entity-type", type=click.Choice(["topics", "brokers"]), required=True,
              help="Type of entity (topics/brokers).")
@click.option("--entity-name", help="Name of the entity (topic name / broker id).")
@click.option("--entity-default", is_flag=True, help="The cluster-wide default (brokers only).")
@click.option("--topic", help="Same as --entity-type topics --entity-name TOPIC.")
@click.option("--broker", help="Same as --entity-type brokers --entity-name ID.")
@click.option("--add-config", help="Configs to set: k1=v1,k2=[v1,v2,v2],k3=v3.")
@click.option("--delete-config", help="Config names to remove: k1,k2.")
@click.option("--all", "all_", is_flag=True, help="With --describe: every config, not only dynamic ones.")
@fail()
def configs(bootstrap_server: str, command_config: str | None, do_describe: bool, do_alter: bool,
            entity_type: str, entity_name: str | None, entity_default: bool, topic: str | None,
            broker: str | None, add_config: str | None, delete_config: str | None, all_: bool) -> None:
    if do_describe == do_alter:
        raise click.UsageError("Command must include exactly one action: --describe, --alter")
    entity_name = entity_name or topic or broker
    rtype = TOPIC if entity_type == "topics" else BROKER
    if entity_default and rtype == TOPIC:
        raise click.UsageError("--entity-default is only for --entity-type brokers")
    if rtype == BROKER and entity_name is not None and not entity_name.isdigit():
        raise ToolError(f"The entity name for brokers must be a valid integer broker id, but it is: {entity_name}")
    with connect(bootstrap_server, command_config) as client:
        if do_alter:
            if entity_name is None and not entity_default:
                raise click.UsageError("--alter needs --entity-name or --entity-default")
            add = parse_add_config(add_config) if add_config else {}
            delete = [k.strip() for k in delete_config.split(",")] if delete_config else []
            if not add and not delete:
                raise click.UsageError("--alter needs --add-config or --delete-config")
            name = "" if entity_default else entity_name
            alter(client, rtype, name, add, delete)
            what = f"topic {name}" if rtype == TOPIC else (f"broker {name}" if name else None)
            click.echo(f"Completed updating config for {what}." if what
                       else "Completed updating default config for brokers in the cluster.")
            return
        if entity_default:
            names = [""]
        elif entity_name is not None:
            names = [entity_name]
        elif rtype == TOPIC:
            names = java_string_hash_order(matching_topics(client, None, False))
        else:
            client.metadata([])
            names = [str(n) for n in sorted(client.nodes)] + [""]
        out = []
        for name in names:
            out.append(_describe_header(rtype, name, all_))
            out.extend(describe(client, rtype, name, all_))
        sys.stdout.write("".join(line + "\n" for line in out))
