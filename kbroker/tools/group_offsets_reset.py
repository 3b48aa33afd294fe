"""``kbroker consumer-groups --reset-offsets`` (Kafka's ConsumerGroupCommand resetOffsets): the
plan (to earliest / latest / an offset / a datetime, or shifted; clamped to the log's range),
printed as OffsetsUtils prints it, and committed with ``--execute`` as an "admin" commit
(generation -1, no member id), which a coordinator accepts only for an inactive group."""

from __future__ import annotations

import datetime as dt
import sys

import click

from kbroker.tools.client import Client, KafkaError, ToolError
from kbroker.tools.common import (
    java_hash_order,
    java_string_hash,
    topic_partition_hash,
)
from kbroker.tools.group_reads import Group, committed_offsets, describe_group, fmt_columns
from wire.messages import (
    OffsetCommitRequest,
)


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


def reset_offsets(client: Client, ids: list[str], topics: tuple[str, ...], all_topics: bool, to_earliest: bool,
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
        out += "\n" + fmt_columns(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])
    for gid in java_hash_order(list(plans), java_string_hash):
        plan = plans[gid]
        for t, p in java_hash_order(list(plan), topic_partition_hash):
            out += "\n" + fmt_columns(widths, [gid, t, p, plan[(t, p)]])
    sys.stdout.write(out + "\n")
