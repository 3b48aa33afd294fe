"""``kbroker consumer-groups``: kafka-consumer-groups.sh (Kafka's ConsumerGroupCommand).

Both group types of Kafka 4: classic groups and consumer groups of the consumer group
protocol (KIP-848).  A group is described as Kafka's admin client does it: ConsumerGroupDescribe
(API 69) first, and DescribeGroups when the coordinator answers GROUP_ID_NOT_FOUND (the group
is classic, or unknown) or does not serve API 69.  Listing is ListGroups with Kafka's filters
(``--type``, ``--state``; consumer-protocol types only, "" or "consumer"), printed in the
iteration order of the admin client's ``HashMap`` of listings.

Layouts are ConsumerGroupCommand's (Kafka 4.3), byte for byte: ``--describe`` prints, per group
(groups sorted by id), a blank line, a header and one row per partition, columns padded as
Java's ``%-Ns`` with widths grown to the longest value (GROUP/TOPIC/CONSUMER-ID/HOST at least
15); ``-`` marks a missing value.  Rows: members with partitions (most partitions first) with
their partitions sorted, then committed partitions no member owns.  ``--verbose`` adds the
committed leader epoch (offsets), the member and target epochs and the current and target
assignments (``--members``: ``topic:p,p;topic:p``) and the group and target assignment epochs
(``--state``), which a classic group has not (``-``).  "has no active members" / "is
rebalancing" go to stderr as Kafka sends them; ``Error: ...`` lines to stdout with exit 1.
``--reset-offsets`` is a dry run unless ``--execute``; it commits as an "admin" commit
(generation -1, no member id), which a group coordinator accepts only for an inactive group.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import (
    connect,
    connection_options,
    java_hash_order,
    java_string_hash,
)
from kbroker.tools.group_offsets_reset import reset_offsets
from kbroker.tools.group_reads import (
    MISSING,
    STATES,
    TYPES,
    Group,
    committed_with_epochs,
    describe_group,
    fmt_columns,
    list_groups,
    list_listings,
)
from wire.error_codes import ErrorCode
from wire.messages import (
    DeleteGroupsRequest,
)

_EXCEPTIONS = {
    ErrorCode.NON_EMPTY_GROUP: ("GroupNotEmptyException", "The group is not empty."),
    ErrorCode.GROUP_ID_NOT_FOUND: ("GroupIdNotFoundException", "The group id does not exist."),
    ErrorCode.INVALID_GROUP_ID: ("InvalidGroupIdException", "The group id is invalid."),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: ("GroupAuthorizationException", "Group authorization failed."),
}


def _state_notice(g: Group) -> bool:
    """ConsumerGroupCommand.shouldPrintMemberState, without the row count test: False for a
    group that does not exist (Dead)."""
    if g.state == "Dead":
        click.echo(f"\nError: Consumer group '{g.group_id}' does not exist.")
        return False
    if g.state == "Empty":
        click.echo(f"\nConsumer group '{g.group_id}' has no active members.", err=True)
    elif g.state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        click.echo(f"\nWarning: Consumer group '{g.group_id}' is rebalancing.", err=True)
    return True


def offset_rows(client: Client, g: Group) -> list[list[Any]]:
    """One row per partition: group, topic, partition, committed offset, log end offset, lag,
    consumer id, host, client id, and the committed leader epoch (last; for --verbose)."""
    committed = committed_with_epochs(client, g.group_id, g.coordinator)
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
            offset, epoch = committed.get((t, p), (None, None))
            end = ends.get((t, p))
            lag = end - offset if offset is not None and end is not None else None
            rows.append([g.group_id, t, p, MISSING if offset is None else offset,
                         MISSING if end is None else end, MISSING if lag is None else lag,
                         member, host, client_id, MISSING if epoch is None else epoch])
    return rows


def print_offsets(client: Client, g: Group, verbose: bool = False) -> None:
    if not _state_notice(g):
        return
    rows = offset_rows(client, g)
    if not rows:
        return
    w = [max([15] + [len(str(r[i])) for r in rows]) for i in (0, 1, 6, 7)]
    head = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
            "CLIENT-ID"]
    widths: list[int | None] = [w[0], w[1], 10, 15, 15, 15, w[2], w[3], None]
    if verbose:   # LEADER-EPOCH after PARTITION
        head.insert(3, "LEADER-EPOCH")
        widths.insert(3, 15)
        rows = [r[:3] + [r[9]] + r[3:9] for r in rows]
    else:
        rows = [r[:9] for r in rows]
    out = "\n" + fmt_columns(widths, head)
    for r in rows:
        out += "\n" + fmt_columns(widths, r)
    sys.stdout.write(out + "\n")


def assignment_text(tps: list[tuple[str, int]] | None) -> str:
    """ConsumerGroupCommand.getAssignmentString: ``topic:p,p`` per topic (partitions sorted),
    the topics' strings sorted and joined by ``;``; ``-`` when there is none."""
    if not tps:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return ";".join(sorted(f"{t}:" + ",".join(str(p) for p in sorted(ps)) for t, ps in by_topic.items()))


def print_members(g: Group, verbose: bool = False) -> None:
    """ConsumerGroupCommand.printMembers: the header even for a group that does not exist."""
    _state_notice(g)
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
    current = {m["id"]: assignment_text(m["assignment"]) for m in ms}
    target = {m["id"]: assignment_text(m["target"]) for m in ms}
    vwidths: list[int | None] = [15, max([20] + [len(a) for a in current.values()]), 15,
                                 max([20] + [len(a) for a in target.values()])]
    vhead = ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    # members of both protocols in one group (an upgrade under way): an UPGRADED column
    migrating = any(m["upgraded"] is False for m in ms) and any(m["upgraded"] is True for m in ms)
    if migrating:
        vwidths.append(None)
        vhead.append("UPGRADED")
    target_epoch = MISSING if g.assignment_epoch is None else g.assignment_epoch
    out = "\n" + fmt_columns(widths, head) + " " + (fmt_columns(vwidths, vhead) if verbose else "") + "\n"
    for m in ms:
        vals = [g.group_id, m["id"]] + ([m["instance"]] if with_instance else []) + \
               [m["host"], m["client"], len(m["assignment"])]
        out += fmt_columns(widths, vals) + " "
        if verbose:
            vvals = [MISSING if m["epoch"] is None else m["epoch"], current[m["id"]], target_epoch,
                     target[m["id"]]]
            if migrating:
                vvals.append(MISSING if m["upgraded"] is None else str(m["upgraded"]).lower())
            out += fmt_columns(vwidths, vvals)
        out += "\n"
    sys.stdout.write(out)


def print_state(client: Client, g: Group, verbose: bool = False) -> None:
    if not _state_notice(g):
        return
    host, port = client.nodes[g.coordinator]
    coordinator = f"{host}:{port}  ({g.coordinator})"
    head = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    vals = [g.group_id, coordinator, g.assignor or MISSING, g.state, len(g.members)]
    widths: list[int | None] = [max(15, len(g.group_id)), max(25, len(coordinator)), 20, 20, None]
    if verbose:   # the epochs before #MEMBERS
        head[4:4] = ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        vals[4:4] = [MISSING if e is None else e for e in (g.group_epoch, g.assignment_epoch)]
        widths[4:4] = [15, 25]
    out = "\n" + fmt_columns(widths, head)
    out += "\n" + fmt_columns(widths, vals)
    sys.stdout.write(out + "\n")


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
@click.option("--state", "state", is_flag=False, flag_value="", default=None, metavar="[STATES]",
              help="With --describe: the group's state; with --list: a STATE column, and only groups in "
                   "these states if given (comma-separated, e.g. Stable,Empty).")
@click.option("--type", "group_types", is_flag=False, flag_value="", default=None, metavar="[TYPES]",
              help="With --list: a TYPE column, and only groups of these types if given (classic, consumer).")
@click.option("--offsets", is_flag=True, help="With --describe: offsets and lag (the default).")
@click.option("--verbose", is_flag=True, help="With --describe: more detail (leader epochs; member and "
              "target epochs and assignments; group and target assignment epochs).")
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
                    members: bool, state: str | None, group_types: str | None, offsets: bool, verbose: bool,
                    topics: tuple[str, ...], all_topics: bool, to_earliest: bool, to_latest: bool,
                    to_offset: int | None, to_datetime: str | None, shift_by: int | None, dry_run: bool,
                    execute: bool) -> None:
    if sum([do_list, do_describe, do_delete, do_reset]) != 1:
        raise click.UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets")
    if (do_describe or do_delete or do_reset) and not groups and not all_groups:
        raise click.UsageError("--group or --all-groups is required")
    try:
        with connect(bootstrap_server, command_config) as client:
            if do_list:
                _list(client, state, group_types)
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
                        print_members(g, verbose)
                    elif state is not None and not offsets:
                        print_state(client, g, verbose)
                    else:
                        print_offsets(client, g, verbose)
                if failed:
                    sys.exit(1)
            else:
                reset_offsets(client, ids, topics, all_topics, to_earliest, to_latest, to_datetime, shift_by,
                       to_offset, dry_run, execute)
    except (ToolError, OSError) as e:
        click.echo(f"\nError: Executing consumer group command failed due to {e}")
        sys.exit(1)


def _parse_filter(text: str | None, known: dict[str, str], what: str) -> list[str]:
    """--state / --type values: comma-separated, case-insensitive (GroupState.parse /
    GroupType.parse); none given is no filter."""
    if not text:
        return []
    got = [v.strip().lower() for v in text.split(",")]
    if not all(v in known for v in got):
        raise click.UsageError(f"Invalid {what} list '{text}'. Valid {what}s are: " + ", ".join(known.values()))
    return sorted({known[v] for v in got})


def _list(client: Client, state: str | None, group_types: str | None) -> None:
    """ConsumerGroupService.listGroups: group ids, or with --type / --state a table
    (GROUP padded to the longest id (15 at least) + 10, TYPE and STATE to 20)."""
    if state is None and group_types is None:
        for g in list_listings(client, regular=True):
            click.echo(g.group_id)
        return
    states = _parse_filter(state, STATES, "state")
    types = [t.lower() for t in _parse_filter(group_types, TYPES, "type")]
    listed = list_listings(client, states=states, types=types)
    width = max([15] + [len(g.group_id) for g in listed]) + 10
    head, cols = ["GROUP"], [lambda g: g.group_id]
    if group_types is not None:
        head.append("TYPE")
        cols.append(lambda g: g.group_type)
    if state is not None:
        head.append("STATE")
        cols.append(lambda g: g.state)
    widths: list[int | None] = [width] + [20] * (len(head) - 1)
    click.echo(fmt_columns(widths, head))
    for g in listed:
        click.echo(fmt_columns(widths, [c(g) for c in cols]))


def exception_text(code: int) -> str:
    """What Kafka's tool prints for an admin call's error: the exception's toString."""
    name, message = _EXCEPTIONS.get(code, (None, None))
    if name is None:
        words = KafkaError(code).name.split("_")
        return "org.apache.kafka.common.errors." + "".join(w.capitalize() for w in words) + "Exception"
    return f"org.apache.kafka.common.errors.{name}: {message}"


def _delete(client: Client, ids: list[str]) -> None:
    """ConsumerGroupService.deleteGroups: the groups deleted and not, each in the iteration
    order of Kafka's HashMap of results."""
    ok, failed = [], {}
    by_node: dict[int, list[str]] = {}
    for gid in ids:
        by_node.setdefault(client.find_coordinator(gid), []).append(gid)
    for node, gids in by_node.items():
        resp, _ = client.send(DeleteGroupsRequest(groups_names=gids), node=node)
        for r in resp.results:
            if r.error_code:
                failed[r.group_id] = r.error_code
            else:
                ok.append(r.group_id)
    ok = java_hash_order(ok, java_string_hash)
    if not failed:
        click.echo("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in ok)
                   + ") was successful.")
        return
    click.echo("\nError: Deletion of some consumer groups failed:")
    for g in java_hash_order(list(failed), java_string_hash):
        click.echo(f"* Group '{g}' could not be deleted due to: {exception_text(failed[g])}")
    if ok:
        click.echo("\nThese consumer groups were deleted successfully: " + ", ".join(f"'{g}'" for g in ok))
    sys.exit(1)
