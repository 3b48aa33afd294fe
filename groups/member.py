"""One member of a classic group (Kafka's ``ClassicGroupMember``)."""

from __future__ import annotations

from dataclasses import dataclass

from groups.pending import Pending

__all__ = ["ClassicGroupMember", "Protocol", "EMPTY_ASSIGNMENT"]

EMPTY_ASSIGNMENT = b""

Protocol = tuple[str, bytes]
"""(name, metadata) as a member listed it in JoinGroup, in the member's preference order."""


@dataclass(slots=True, eq=False)
class ClassicGroupMember:
    """A member: identity, timeouts, supported protocols, assignment and parked requests.

    ``awaiting_join`` / ``awaiting_sync`` hold the member's parked JoinGroup / SyncGroup;
    ``is_new`` marks a member added by the current join phase that has not yet received a
    JoinGroup response (its session timer is the longer new-member join timeout).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[Protocol]
    assignment: bytes = EMPTY_ASSIGNMENT
    awaiting_join: Pending | None = None
    awaiting_sync: Pending | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol_name: str | None) -> bytes:
        """The member's metadata for ``protocol_name`` (Kafka throws if it is missing)."""
        for name, meta in self.protocols:
            if name == protocol_name:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol_name!r}")

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols (its preference order) among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} does not support any of {sorted(candidates)}")

    def matches(self, protocols: list[Protocol]) -> bool:
        """Same protocols, same order, same metadata bytes (Kafka's ``matches``)."""
        if len(protocols) != len(self.protocols):
            return False
        return all(
            a[0] == b[0] and bytes(a[1]) == bytes(b[1]) for a, b in zip(protocols, self.protocols, strict=True)
        )

    def has_satisfied_heartbeat(self) -> bool:
        """At session expiry: keep a member that has a request parked, unless it is new."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync
