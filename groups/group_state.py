"""The classic group states and their valid previous states (Kafka's ``ClassicGroupState``).

Each member's docstring says how the coordinator answers each request in that state and
what moves the group on; ``group_manager.py`` implements exactly these rules.  A transition
to a state whose ``valid_previous`` set does not hold the current state is a bug
(:class:`IllegalStateTransition`), never a client error.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["GroupState", "IllegalStateTransition"]


class IllegalStateTransition(RuntimeError):
    """The coordinator tried a transition Kafka's table forbids (a programming error)."""


class GroupState(Enum):
    EMPTY = "Empty"
    """No members; the group lingers for its committed offsets (also assign()-mode groups).

    JoinGroup: accepted from new members (v4+: MEMBER_ID_REQUIRED first); a known member id
    answers UNKNOWN_MEMBER_ID.  SyncGroup, Heartbeat, LeaveGroup: UNKNOWN_MEMBER_ID.
    OffsetCommit: only "simple" commits (generation < 0, no member id); otherwise
    UNKNOWN_MEMBER_ID.  OffsetFetch: answered.  DeleteGroups / OffsetDelete: allowed.
    Moves on: a join from a new member -> PREPARING_REBALANCE (with the initial delay);
    offsets all expired or DeleteGroups -> DEAD (removed).
    """

    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for every known member to (re)join, up to the rebalance timeout.

    JoinGroup: parked until the join phase completes.  SyncGroup, Heartbeat:
    REBALANCE_IN_PROGRESS (a heartbeat still resets the session timer).  LeaveGroup: removes
    the member.  OffsetCommit: accepted from the previous generation.  OffsetFetch: answered.
    Moves on: all members joined, or the rebalance timeout (dynamic members that did not
    rejoin are removed) -> COMPLETING_REBALANCE, or -> EMPTY if nobody is left.  The initial
    rebalance (from EMPTY) only completes on its delay timer (group.initial.rebalance.delay.ms,
    extended while new members keep arriving, bounded by the rebalance timeout).
    """

    COMPLETING_REBALANCE = "CompletingRebalance"
    """The join phase is done; waiting for the leader's SyncGroup with the assignment.

    JoinGroup: a member with unchanged metadata gets the current generation again; changed
    metadata or a new member -> rebalance.  SyncGroup: parked; the leader's SyncGroup stores
    the assignment (GroupMetadata record) and answers everyone.  Heartbeat: answered (resets
    the session timer).  LeaveGroup: removes the member and rebalances.  OffsetCommit:
    REBALANCE_IN_PROGRESS.  Moves on: leader's SyncGroup -> STABLE; a join with new metadata,
    a leave, a member failure or the sync timeout -> PREPARING_REBALANCE.
    """

    STABLE = "Stable"
    """Everyone has an assignment for the current generation.

    JoinGroup: a follower with unchanged metadata gets the current generation; the leader or
    changed metadata -> rebalance; a known static member with a new member id takes over the
    old id and keeps its assignment (no rebalance if the protocol choice is unchanged).
    SyncGroup: the member's current assignment.  Heartbeat: answered.  OffsetCommit: from
    the current generation.  Moves on: a member's session expiry, a leave, the leader's join or
    a follower's changed metadata -> PREPARING_REBALANCE.
    """

    DEAD = "Dead"
    """The group is being removed.  Every membership request: COORDINATOR_NOT_AVAILABLE or
    UNKNOWN_MEMBER_ID (Kafka's answers); OffsetFetch answers as for an unknown group.  Final.
    """

    @property
    def valid_previous(self) -> frozenset[GroupState]:
        return _VALID_PREVIOUS[self]

    def lower(self) -> str:
        """The lower-case name ListGroups' states filter matches on."""
        return self.value.lower()

    def __str__(self) -> str:
        return self.value


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}
