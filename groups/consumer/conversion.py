"""Online migration between the two group types (Kafka's ``ConsumerGroup.fromClassicGroup``,
``ClassicGroup.fromConsumerGroup``, ``group.consumer.migration.policy``).

* Upgrade: the first consumer-protocol member to join a live classic group (protocol type
  ``consumer``) turns it into a consumer group.  Every classic member becomes a member that
  still speaks the classic protocol, at the classic generation as its member epoch, Stable,
  with the partitions of its last classic assignment as both its target and its current
  assignment; the group epoch and the target assignment epoch are the generation.  Then the
  joining member bumps the group epoch as any new member does, and the classic members learn
  about it through REBALANCE_IN_PROGRESS on their next Heartbeat and rejoin.
* Downgrade: when the last consumer-protocol member leaves a group whose other members all
  speak the classic protocol, it becomes a classic group again: generation = the group
  epoch, each member's target assignment serialized in the version of its subscription, and
  a rebalance starts.

The ConsumerProtocol bytes (JoinGroup metadata, SyncGroup assignments) are Kafka's
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``: an int16 version, then the
struct in that version.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from groups.consumer import records as R
from groups.consumer.group import ConsumerGroup
from groups.consumer.member import ClassicProtocol, ConsumerGroupMember, MemberState, at_epoch
from groups.consumer.topics import TopicsImage
from wire import decode, encode
from wire.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription

__all__ = ["Subscription", "decode_subscription", "encode_assignment", "decode_assignment",
           "from_classic", "UPGRADE", "DOWNGRADE"]

UPGRADE = ("upgrade", "bidirectional")
DOWNGRADE = ("downgrade", "bidirectional")
_I16 = struct.Struct(">h")


class MalformedProtocol(ValueError):
    """The embedded consumer protocol bytes do not parse (Kafka's SchemaException)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...]
    rack_id: str | None
    user_data: bytes | None


def decode_subscription(metadata: bytes) -> Subscription:
    if len(metadata) < 2:
        raise MalformedProtocol("subscription shorter than its version")
    (version,) = _I16.unpack_from(metadata, 0)
    if version < 0:
        raise MalformedProtocol(f"subscription version {version}")
    try:
        sub = decode(ConsumerProtocolSubscription, memoryview(metadata)[2:], min(version, 3))
    except Exception as err:  # noqa: BLE001 - any decoding failure is a malformed protocol
        raise MalformedProtocol(str(err)) from None
    owned = tuple((tp.topic, tuple(tp.partitions)) for tp in sub.owned_partitions or []) \
        if version >= 1 else ()
    return Subscription(version, tuple(sub.topics), owned,
                        sub.rack_id if version >= 3 else None,
                        None if sub.user_data is None else bytes(sub.user_data))


def decode_assignment(data: bytes) -> tuple[dict[str, list[int]], bytes | None]:
    """(topic -> partitions, user data); an empty byte string is an empty assignment."""
    if not data:
        return {}, None
    (version,) = _I16.unpack_from(data, 0)
    try:
        a = decode(ConsumerProtocolAssignment, memoryview(data)[2:], min(max(version, 0), 3))
    except Exception as err:  # noqa: BLE001
        raise MalformedProtocol(str(err)) from None
    return ({tp.topic: list(tp.partitions) for tp in a.assigned_partitions},
            None if a.user_data is None else bytes(a.user_data))


def encode_assignment(partitions: dict[uuid.UUID, frozenset[int]] | dict[uuid.UUID, dict[int, int]],
                      image: TopicsImage, version: int) -> bytes:
    """Kafka's ``ConsumerProtocol.serializeAssignment`` of the partitions (ids -> names from
    the metadata; topics it no longer has are left out), in ``version`` (capped at 3)."""
    version = min(max(version, 0), 3)
    tps = []
    for topic_id, parts in partitions.items():
        info = image.by_id.get(topic_id)
        if info is None or not parts:
            continue
        tps.append(ConsumerProtocolAssignment.TopicPartition(topic=info.name,
                                                             partitions=sorted(parts)))
    return _I16.pack(version) + encode(
        ConsumerProtocolAssignment(assigned_partitions=tps, user_data=None), version)


def subscription_version(member: ConsumerGroupMember) -> int:
    """The ConsumerProtocol version of the member's first classic protocol's metadata."""
    if not member.classic_protocols:
        return 0
    meta = member.classic_protocols[0].metadata
    return _I16.unpack_from(meta, 0)[0] if len(meta) >= 2 else 0


def from_classic(classic, image: TopicsImage) -> list[R.Change]:
    """The records of the consumer group a live classic group becomes (Kafka's
    ``createConsumerGroupRecords`` order: subscriptions, group epoch, target assignments,
    target metadata, current assignments).  Raises MalformedProtocol for bytes that do not
    parse or for an assignment carrying user data (a custom assignor's, which would be
    lost)."""
    gid = classic.group_id
    generation = classic.generation_id
    if classic.protocol_name is None:   # no generation completed yet: nothing to carry over
        raise MalformedProtocol("the group has not chosen a protocol yet")
    members: list[ConsumerGroupMember] = []
    for m in classic.members.values():
        topics, user_data = decode_assignment(m.assignment)
        if user_data:
            raise MalformedProtocol("userData from a custom assignor would be lost")
        assigned: dict[uuid.UUID, set[int]] = {}
        for name, parts in topics.items():
            info = image.by_name.get(name)
            if info is not None:
                assigned.setdefault(info.topic_id, set()).update(parts)
        sub = decode_subscription(m.metadata(classic.protocol_name))
        members.append(ConsumerGroupMember(
            member_id=m.member_id, member_epoch=generation, previous_member_epoch=generation,
            state=MemberState.STABLE, instance_id=m.group_instance_id, rack_id=sub.rack_id,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=sub.topics,
            rebalance_timeout_ms=m.rebalance_timeout_ms, assigned=at_epoch(assigned, generation),
            classic_session_timeout_ms=m.session_timeout_ms,
            classic_protocols=tuple(ClassicProtocol(n, bytes(meta)) for n, meta in m.protocols)))
    staged = ConsumerGroup(gid)
    for member in members:
        staged.set_member(member)
    metadata_hash = image.group_hash(staged.subscribed_topic_names())
    changes: list[R.Change] = [R.subscription(gid, m) for m in members]
    changes.append(R.epoch(gid, generation, metadata_hash))
    changes += [R.target_member(gid, m.member_id, {t: frozenset(p) for t, p in m.assigned.items()})
                for m in members]
    changes.append(R.target_metadata(gid, generation, 0))
    changes += [R.current_assignment(gid, m) for m in members]
    return changes
