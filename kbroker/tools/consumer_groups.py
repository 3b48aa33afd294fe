"""``kbroker consumer-groups``: kafka-consumer-groups.sh (Kafka's ConsumerGroupCommand).

Classic-protocol consumer groups (what kbroker serves; Apache Kafka's classic groups too).
Layouts are ConsumerGroupCommand's, byte for byte: ``--describe`` prints, per group (groups
sorted by id), a blank line, a header and one row per partition, columns padded as Java's
``%-Ns`` with widths grown to the longest value (GROUP/TOPIC/CONSUMER-ID/HOST at least 15);
``-`` marks a missing value.  Rows: members with partitions (most partitions first) with their
partitions sorted, then committed partitions no member owns.  "has no active members" /
"is rebalancing" go to stderr as Kafka sends them; ``Error: ...`` lines to stdout with exit 1.
``--reset-offsets`` is a dry run unless ``--execute``; it commits as an "admin" commit
(generation -1, no member id), which a group coordinator accepts only for an inactive group.
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from typing import Any

import click

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import (
    connect,
    connection_options,
    java_hash_order,
    java_string_hash,
    topic_partition_hash,
)
from wire.codec import decode_at
from wire.messages import (
    ConsumerProtocolAssignment,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

MISSING = "-"


@dataclass
class Group:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator: int
    members: list[dict[str, Any]]


def decode_assignment(data: bytes | None) -> list[tuple[str, int]]:
    """A consumer's assignment (ConsumerProtocolAssignment: int16 version, then the body)."""
    if not data or len(data) < 2:
        return []
    version = min(int.from_bytes(data[:2], "big", signed=True), 3)
    a, _ = decode_at(ConsumerProtocolAssignment, data, version, 2)
    return [(tp.topic, p) for tp in a.assigned_partitions for p in tp.partitions]


def list_groups(client: Client, with_state: bool = False) -> list[tuple[str, str]]:
    """(group id, state) of every consumer group on every broker."""
    client.metadata([])
    out: list[tuple[str, str]] = []
    for node in sorted(client.nodes):
        resp, v = client.send(ListGroupsRequest(states_filter=[], types_filter=[]), node=node)
        if resp.error_code:
            raise KafkaError(resp.error_code, what="ListGroups")
        for g in resp.groups:
            if g.protocol_type in ("consumer", ""):
                out.append((g.group_id, g.group_state if v >= 4 else ""))
    return out


def describe_group(client: Client, group_id: str) -> Group:
    node = client.find_coordinator(group_id)
    resp, _ = client.send(DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False),
                          node=node)
    g = resp.groups[0]
    if g.error_code:
        raise KafkaError(g.error_code, what=f"DescribeGroups {group_id}")
    members = [{"id": m.member_id, "instance": m.group_instance_id or "", "client": m.client_id,
                "host": m.client_host,
                "assignment": decode_assignment(m.member_assignment) if g.protocol_type == "consumer" else []}
               for m in g.members]
    return Group(group_id, g.group_state, g.protocol_type, g.protocol_data, node, members)


def committed_offsets(client: Client, group_id: str, node: int) -> dict[tuple[str, int], int]:
    """Every committed offset of the group (OffsetFetch with all topics); -1 entries dropped."""
    v = client.version(9, node)
    if v >= 8:
        req = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group_id, member_id=None, member_epoch=-1, topics=None)], require_stable=True)
        resp, _ = client.send(req, node=node)
        grp = resp.groups[0]
        if grp.error_code:
            raise KafkaError(grp.error_code, what=f"OffsetFetch {group_id}")
        topics = grp.topics
    else:
        req = OffsetFetchRequest(group_id=group_id, topics=None, require_stable=True)
        resp, _ = client.send(req, node=node)
        if getattr(resp, "error_code", 0):
            raise KafkaError(resp.error_code, what=f"OffsetFetch {group_id}")
        topics = resp.topics
    out = {}
    for t in topics:
        for p in t.partitions:
            if not p.error_code and p.committed_offset >= 0:
                out[(t.name, p.partition_index)] = p.committed_offset
    return out


def _fmt(widths: list[int | None], values: list[Any]) -> str:
    """Java's ``%-Ns`` joined by spaces; width None is a bare ``%s``."""
    return " ".join(str(v) if w is None else f"{v!s:<{w}}" for w, v in zip(widths, values, strict=True))


def _state_notice(g: Group) -> bool:
    """ConsumerGroupCommand.shouldPrintMemberState, without the row count test."""
    if g.state == "Dead":
        click.echo(f"\nError: Consumer group '{g.group_id}' does not exist.")
        return False
    if g.state == "Empty":
        click.echo(f"\nConsumer group '{g.group_id}' has no active members.", err=True)
    elif g.state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        click.echo(f"\nWarning: Consumer group '{g.group_id}' is rebalancing.", err=True)
    return True


def offset_rows(client: Client, g: Group) -> list[list[Any]]:
    committed = committed_offsets(client, g.group_id, g.coordinator)
    assigned: set[tuple[str, int]] = set()
    groups_of_rows: list[tuple[list[tuple[str, int]], str, str, str]] = []
    members = [m for m in g.members if m["assignment"]]
    members.sort(key=lambda m: -len(m["assignment"]))
    for m in members:
        assigned.update(m["assignment"])
        groups_of_rows.append((m["assignment"], m["id"], m["host"], m["client"]))
    unassigned = [tp for tp in committed if tp not in assigned]
    if unassigned:
        groups_of_rows.append((unassigned, MISSING, MISSING, MISSING))
    every = sorted({tp for tps, *_ in groups_of_rows for tp in tps})
    leaders = client.partition_leaders(sorted({t for t, _ in every})) if every else {}
    ends = client.list_offsets([tp for tp in every if tp in leaders], -1) if every else {}
    rows = []
    for tps, member, host, client_id in groups_of_rows:
        for t, p in sorted(set(tps)):
            offset = committed.get((t, p))
            end = ends.get((t, p))
            lag = end - offset if offset is not None and end is not None else None
            rows.append([g.group_id, t, p, MISSING if offset is None else offset,
                         MISSING if end is None else end, MISSING if lag is None else lag,
                         member, host, client_id])
    return rows


def print_offsets(client: Client, g: Group) -> None:
    if not _state_notice(g):
        return
    rows = offset_rows(client, g)
    if not rows:
        return
    w = [max([15] + [len(str(r[i])) for r in rows]) for i in (0, 1, 6, 7)]
    widths = [w[0], w[1], 10, 15, 15, 15, w[2], w[3], None]
    out = "\n" + _fmt(widths, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                               "CONSUMER-ID", "HOST", "CLIENT-ID"])
    for r in rows:
        out += "\n" + _fmt(widths, r)
    sys.stdout.write(out + "\n")


def print_members(g: Group) -> None:
    if not _state_notice(g):
        return
    ms = g.members
    wg = max([15, len(g.group_id)])
    wc = max([15] + [len(m["id"]) for m in ms])
    wi = max([17] + [len(m["instance"]) for m in ms])
    wh = max([15] + [len(m["host"]) for m in ms])
    wcl = max([15] + [len(m["client"]) for m in ms])
    with_instance = any(m["instance"] for m in ms)
    if with_instance:
        widths: list[int | None] = [wg, wc, wi, wh, wcl, 15]
        head = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    else:
        widths = [wg, wc, wh, wcl, 15]
        head = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    out = "\n" + _fmt(widths, head) + " \n"
    for m in ms:
        vals = [g.group_id, m["id"]] + ([m["instance"]] if with_instance else []) + \
               [m["host"], m["client"], len(m["assignment"])]
        out += _fmt(widths, vals) + " \n"
    sys.stdout.write(out)


def print_state(client: Client, g: Group) -> None:
    if not _state_notice(g):
        return
    host, port = client.nodes[g.coordinator]
    coordinator = f"{host}:{port}  ({g.coordinator})"
    widths = [max(15, len(g.group_id)), max(25, len(coordinator)), 20, 20, None]
    out = "\n" + _fmt(widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"])
    out += "\n" + _fmt(widths, [g.group_id, coordinator, g.assignor or MISSING, g.state, len(g.members)])
    sys.stdout.write(out + "\n")


def parse_datetime_ms(s: str) -> int:
    """Kafka's --to-datetime: 'YYYY-MM-DDTHH:mm:SS.sss', optionally with a zone (Z, +hh:mm);
    without one it is local time, as in Kafka (Utils.getDateTime)."""
    text = s.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ToolError(f"Error parsing date '{s}': expected yyyy-MM-dd'T'HH:mm:ss.SSS") from None
    if when.tzinfo is None:
        when = when.astimezone()
    return int(when.timestamp() * 1000)


def _partitions_to_reset(client: Client, g: Group, topics: tuple[str, ...], all_topics: bool
                         ) -> list[tuple[str, int]]:
    if all_topics:
        return list(committed_offsets(client, g.group_id, g.coordinator))
    out: list[tuple[str, int]] = []
    for spec in topics:
        name, sep, parts = spec.partition(":")
        if sep:
            out.extend((name, int(p)) for p in parts.split(","))
        else:
            out.extend(tp for tp in sorted(client.partition_leaders([name])))
    return out


def reset_plan(client: Client, g: Group, tps: list[tuple[str, int]], *, to_earliest: bool,
               to_latest: bool, to_datetime: str | None, shift_by: int | None, to_offset: int | None
               ) -> dict[tuple[str, int], int]:
    leaders = client.partition_leaders(sorted({t for t, _ in tps}))
    missing = [tp for tp in tps if tp not in leaders]
    if missing:
        raise ToolError("The partitions \"" + ",".join(f"{t}-{p}" for t, p in missing) + "\" do not exist")
    earliest = client.list_offsets(tps, -2)
    latest = client.list_offsets(tps, -1)

    def clamp(tp: tuple[str, int], offset: int) -> int:
        lo, hi = earliest.get(tp) or 0, latest.get(tp) or 0
        return min(max(offset, lo), hi)

    if to_earliest:
        return {tp: earliest.get(tp) or 0 for tp in tps}
    if to_latest:
        return {tp: latest.get(tp) or 0 for tp in tps}
    if to_offset is not None:
        return {tp: clamp(tp, to_offset) for tp in tps}
    if shift_by is not None:
        current = committed_offsets(client, g.group_id, g.coordinator)
        plan = {}
        for tp in tps:
            if tp not in current:
                raise ToolError(f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no "
                                "current committed offset")
            plan[tp] = clamp(tp, current[tp] + shift_by)
        return plan
    if to_datetime is not None:
        at = client.list_offsets(tps, parse_datetime_ms(to_datetime))
        return {tp: at[tp] if at.get(tp) is not None else (latest.get(tp) or 0) for tp in tps}
    raise click.UsageError("--reset-offsets needs one of --to-earliest, --to-latest, --to-offset, "
                           "--to-datetime, --shift-by")


def commit(client: Client, g: Group, plan: dict[tuple[str, int], int]) -> None:
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (t, p), o in plan.items():
        by_topic.setdefault(t, []).append((p, o))
    req = OffsetCommitRequest(group_id=g.group_id, generation_id_or_member_epoch=-1, member_id="",
                              group_instance_id=None, retention_time_ms=-1, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                commit_timestamp=-1, committed_metadata="") for p, o in ps])
        for t, ps in by_topic.items()])
    resp, _ = client.send(req, node=g.coordinator)
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                raise KafkaError(p.error_code, what=f"OffsetCommit {t.name}-{p.partition_index}")


@click.command("consumer-groups", help="List, describe, delete consumer groups or reset their offsets "
               "(kafka-consumer-groups.sh).")
@connection_options
@click.option("--list", "do_list", is_flag=True, help="List all consumer groups.")
@click.option("--describe", "do_describe", is_flag=True, help="Describe consumer group(s): offsets and lag.")
@click.option("--delete", "do_delete", is_flag=True, help="Delete consumer group(s).")
@click.option("--reset-offsets", "do_reset", is_flag=True, help="Reset the offsets of an inactive group.")
@click.option("--group", "groups", multiple=True, help="The consumer group (repeatable).")
@click.option("--all-groups", is_flag=True, help="Apply to all consumer groups.")
@click.option("--members", is_flag=True, help="With --describe: the group's members.")
@click.option("--state", "state", is_flag=True, help="With --describe: the group's state; with --list: a STATE column.")
@click.option("--offsets", is_flag=True, help="With --describe: offsets and lag (the default).")
@click.option("--topic", "topics", multiple=True, help="With --reset-offsets: TOPIC or TOPIC:P1,P2 (repeatable).")
@click.option("--all-topics", is_flag=True, help="With --reset-offsets: every partition the group committed.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offset.")
@click.option("--to-offset", type=int, help="Reset to this offset (clamped to the log's range).")
@click.option("--to-datetime", help="Reset to the first offset at or after 'YYYY-MM-DDTHH:mm:SS.sss[zone]'.")
@click.option("--shift-by", type=int, help="Shift the committed offsets by this many (may be negative).")
@click.option("--dry-run", is_flag=True, help="Only show the result (the default).")
@click.option("--execute", is_flag=True, help="Commit the reset offsets.")
def consumer_groups(bootstrap_server: str, command_config: str | None, do_list: bool, do_describe: bool,
                    do_delete: bool, do_reset: bool, groups: tuple[str, ...], all_groups: bool,
                    members: bool, state: bool, offsets: bool, topics: tuple[str, ...], all_topics: bool,
                    to_earliest: bool, to_latest: bool, to_offset: int | None, to_datetime: str | None,
                    shift_by: int | None, dry_run: bool, execute: bool) -> None:
    if sum([do_list, do_describe, do_delete, do_reset]) != 1:
        raise click.UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets")
    if (do_describe or do_delete or do_reset) and not groups and not all_groups:
        raise click.UsageError("--group or --all-groups is required")
    try:
        with connect(bootstrap_server, command_config) as client:
            if do_list:
                listed = list_groups(client)
                if state:
                    width = max([15] + [len(g) for g, _ in listed]) + 10
                    click.echo(f"{'GROUP':<{width}} {'STATE':<20}")
                    for g, s in listed:
                        click.echo(f"{g:<{width}} {s:<20}")
                else:
                    for g, _ in listed:
                        click.echo(g)
                return
            ids = sorted(g for g, _ in list_groups(client)) if all_groups else sorted(set(groups))
            if do_delete:
                _delete(client, ids)
            elif do_describe:
                failed = False
                for gid in ids:
                    g = describe_group(client, gid)
                    failed |= g.state == "Dead"
                    if members and not offsets:
                        print_members(g)
                    elif state and not offsets:
                        print_state(client, g)
                    else:
                        print_offsets(client, g)
                if failed:
                    sys.exit(1)
            else:
                _reset(client, ids, topics, all_topics, to_earliest, to_latest, to_datetime, shift_by,
                       to_offset, dry_run, execute)
    except (ToolError, OSError) as e:
        click.echo(f"\nError: Executing consumer group command failed due to {e}")
        sys.exit(1)


def _delete(client: Client, ids: list[str]) -> None:
    ok, failed = [], []
    by_node: dict[int, list[str]] = {}
    for gid in ids:
        by_node.setdefault(client.find_coordinator(gid), []).append(gid)
    for node, gids in by_node.items():
        resp, _ = client.send(DeleteGroupsRequest(groups_names=gids), node=node)
        for r in resp.results:
            (failed.append((r.group_id, r.error_code)) if r.error_code else ok.append(r.group_id))
    if not failed:
        click.echo("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in ok)
                   + ") was successful.")
        return
    click.echo("\nError: Deletion of some consumer groups failed:")
    for g, code in failed:
        click.echo(f"* Group '{g}' could not be deleted due to: {KafkaError(code).name}")
    if ok:
        click.echo("\nThese consumer groups were deleted successfully: " + ", ".join(f"'{g}'" for g in ok))
    sys.exit(1)


def _reset(client: Client, ids: list[str], topics: tuple[str, ...], all_topics: bool, to_earliest: bool,
           to_latest: bool, to_datetime: str | None, shift_by: int | None, to_offset: int | None,
           dry_run: bool, execute: bool) -> None:
    if not topics and not all_topics:
        raise click.UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if dry_run and execute:
        raise click.UsageError("--dry-run and --execute are exclusive")
    if not dry_run and not execute:
        click.echo("WARN: No action will be performed as the --execute option is missing. Add --dry-run "
                   "explicitly when scripting this command to keep the default behavior.")
    plans: dict[str, dict[tuple[str, int], int]] = {}
    failed = False
    for gid in ids:
        g = describe_group(client, gid)
        if g.state not in ("Empty", "Dead"):
            click.echo(f"\nError: Assignments can only be reset if the group '{gid}' is inactive, but the "
                       f"current state is {g.state}.")
            plans[gid] = {}
            failed = True
            continue
        tps = _partitions_to_reset(client, g, topics, all_topics)
        plan = reset_plan(client, g, tps, to_earliest=to_earliest, to_latest=to_latest,
                          to_datetime=to_datetime, shift_by=shift_by, to_offset=to_offset)
        if execute:
            commit(client, g, plan)
        plans[gid] = plan
    _print_plans(plans)
    if failed:
        sys.exit(1)


def _print_plans(plans: dict[str, dict[tuple[str, int], int]]) -> None:
    """OffsetsUtils.printOffsetsToReset: groups and partitions in Java HashMap order."""
    wg = max([15] + [len(g) for g in plans])
    wt = max([15] + [len(t) for p in plans.values() for t, _ in p])
    widths: list[int | None] = [wg, wt, 10, None]
    out = ""
    if plans:
        out += "\n" + _fmt(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])
    for gid in java_hash_order(list(plans), java_string_hash):
        plan = plans[gid]
        for t, p in java_hash_order(list(plan), topic_partition_hash):
            out += "\n" + _fmt(widths, [gid, t, p, plan[(t, p)]])
    sys.stdout.write(out + "\n")
