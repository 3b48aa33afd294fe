"""A classic group's membership and generation (Kafka's ``ClassicGroup``).

This class holds state and answers questions about it; it makes no decisions about requests
(``group_manager.py`` does).  Invariants, as in Kafka:

* ``leader_id`` is None iff there are no members; the first member added becomes leader.
* ``static_members`` maps each static member's group.instance.id to its current member id.
* ``supported_protocols[name]`` counts the members that list ``name``; a protocol is a
  candidate when every member lists it.
* ``pending_join_members`` are KIP-394 member ids handed out with MEMBER_ID_REQUIRED that
  have not joined yet; ``pending_sync_members`` are members that have not sent SyncGroup
  for the generation being completed.
* ``current_state_timestamp_ms`` moves on every transition (persisted; offsets of an Empty
  group expire relative to it).
"""

from __future__ import annotations

from groups import responses
from groups.group_state import GroupState, IllegalStateTransition
from groups.member import ClassicGroupMember, Protocol
from wire import decode
from wire.error_codes import ErrorCode
from wire.messages import ConsumerProtocolSubscription

__all__ = ["ClassicGroup", "CONSUMER_PROTOCOL_TYPE", "GroupError"]

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupError(Exception):
    """A request-level answer (Kafka throws ``ApiException``s for these): carries the code."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


class ClassicGroup:
    def __init__(
        self,
        group_id: str,
        state: GroupState,
        *,
        generation_id: int = 0,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        leader_id: str | None = None,
        current_state_timestamp_ms: int | None = None,
    ) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = GroupState.DEAD
        self.generation_id = generation_id
        self.protocol_type = protocol_type
        self.protocol_name = protocol_name
        self.leader_id = leader_id
        self.current_state_timestamp_ms = current_state_timestamp_ms
        self.members: dict[str, ClassicGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.pending_join_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.supported_protocols: dict[str, int] = {}
        self.num_awaiting_join = 0
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None

    # -- state -----------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in GroupState.PREPARING_REBALANCE.valid_previous

    def transition_to(self, new_state: GroupState, now_ms: int) -> None:
        if self.state not in new_state.valid_previous:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state} -> {new_state} is not allowed"
            )
        self.previous_state = self.state
        self.state = new_state
        self.current_state_timestamp_ms = now_ms

    # -- members ---------------------------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ClassicGroupMember:
        return self.members[member_id]

    def member_or_none(self, member_id: str) -> ClassicGroupMember | None:
        return self.members.get(member_id)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def add(self, member: ClassicGroupMember) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already a member")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise ValueError("the group and member's protocol type must be the same")
        if not self.supports_protocols(member.protocol_type, member.protocol_names()):
            raise ValueError("none of the member's protocols can be supported")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        if member.is_awaiting_join:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self._count_protocols(removed, -1)
            if removed.is_awaiting_join:
                self.num_awaiting_join -= 1
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return removed

    def update_member(
        self,
        member: ClassicGroupMember,
        protocols: list[Protocol],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        awaiting_join,
    ) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if awaiting_join is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif awaiting_join is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.awaiting_join = awaiting_join

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> ClassicGroupMember:
        """Give a static member a new member id, fencing whatever the old id had parked."""
        old = self.members.pop(old_id, None)
        if old is None:
            raise ValueError(f"cannot replace non-existing member id {old_id}")
        if old.is_awaiting_join:
            self.num_awaiting_join -= 1
        self._count_protocols(old, -1)
        self.complete_join(old, responses.join_error(old_id, ErrorCode.FENCED_INSTANCE_ID))
        self.complete_sync(old, responses.sync_error(ErrorCode.FENCED_INSTANCE_ID))
        new = ClassicGroupMember(
            member_id=new_id,
            group_instance_id=old.group_instance_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms,
            protocol_type=old.protocol_type,
            protocols=old.protocols,
            assignment=old.assignment,
        )
        self.members[new_id] = new
        self._count_protocols(new, +1)
        if self.is_leader(old_id):
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return new

    def complete_join(self, member: ClassicGroupMember, response) -> bool:
        if member.awaiting_join is None:
            return False
        pending, member.awaiting_join = member.awaiting_join, None
        self.num_awaiting_join -= 1
        pending.complete(response)
        return True

    def complete_sync(self, member: ClassicGroupMember, response) -> bool:
        if member.awaiting_sync is None:
            return False
        pending, member.awaiting_sync = member.awaiting_sync, None
        pending.complete(response)
        return True

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def add_pending_member(self, member_id: str) -> None:
        if member_id in self.members:
            raise ValueError(f"{member_id} is already a member")
        self.pending_join_members.add(member_id)

    def not_yet_rejoined(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick one that did; False if nobody rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID as Kafka's ``validateMember``."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)

    # -- protocols -------------------------------------------------------------------------

    def _count_protocols(self, member: ClassicGroupMember, delta: int) -> None:
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and len(names) > 0
        n = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == n for name in names
        )

    def select_protocol(self) -> str:
        """Each member votes for its preferred candidate (a protocol every member lists);
        the most votes wins.  Ties go to the candidate that reached the count first."""
        if not self.members:
            raise ValueError("cannot select a protocol for an empty group")
        n = len(self.members)
        candidates = {name for name, count in self.supported_protocols.items() if count == n}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    # -- subscriptions (OffsetDelete, offset expiry) -----------------------------------------

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, parsed from ConsumerProtocolSubscription v0
        (the prefix of every version); None when unknown (not "consumer", no protocol yet,
        unparseable metadata)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                meta = member.metadata(self.protocol_name)
                if len(meta) < 2 or int.from_bytes(meta[:2], "big", signed=True) < 0:
                    return None
                sub = decode(ConsumerProtocolSubscription, memoryview(meta)[2:], 0)
                topics.update(sub.topics)
        except Exception:  # noqa: BLE001 - Kafka logs and treats the topics as unknown
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.uses_consumer_protocol()

    # -- views -----------------------------------------------------------------------------

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}
