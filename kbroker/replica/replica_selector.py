"""Fetch from follower (KIP-392): which replica a consumer should read a partition from.

Kafka's ``ReplicaManager.findPreferredReadReplica`` with ``RackAwareReplicaSelector``, asked
only by a partition's leader for a consumer Fetch v11+ (the request carries client metadata):

* Candidates: the leader (its LEO, 0 ms since caught up) and each follower that is in the
  committed ISR, whose LEO >= the fetch offset and whose log start offset <= the fetch offset
  (follower offsets as the leader last learned them from that follower's fetches), with the
  time since it was last caught up.  A replica whose broker the metadata cache does not know
  (Kafka: no endpoint, ``Node.noNode()``) has no rack and is never chosen.
* ``RackAwareReplicaSelector.select``: an empty client rack, or no candidate in the client's
  rack, chooses the leader; the leader in the client's rack chooses the leader; else the
  same-rack candidate with the highest LEO, then the least time since caught up (Kafka's
  ``ReplicaView.comparator``; its ties fall to set order, here to the lowest broker id).
* The leader chosen means "no preferred replica" (-1): the leader serves the fetch itself.

Pure: no I/O, times in ms from the partition's injected clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cluster.partition_state import PartitionState

__all__ = ["NO_PREFERRED_REPLICA", "RACK_AWARE_SELECTOR", "ReplicaView", "preferred_read_replica",
           "select_rack_aware"]

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
NO_PREFERRED_REPLICA = -1   # the Fetch response's preferred_read_replica when the leader serves


@dataclass(frozen=True, slots=True)
class ReplicaView:
    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int


def select_rack_aware(client_rack: str, leader: ReplicaView, replicas: Iterable[ReplicaView]) -> ReplicaView:
    """``RackAwareReplicaSelector.select`` over ``replicas`` (which include ``leader``)."""
    if not client_rack:
        return leader
    same_rack = [r for r in replicas if r.rack == client_rack]
    if not same_rack or any(r.broker_id == leader.broker_id for r in same_rack):
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_caught_up_ms, -r.broker_id))


def preferred_read_replica(rep: PartitionState, leader_end_offset: int, fetch_offset: int, client_rack: str,
                           rack_of: Callable[[int], tuple[bool, str | None]], now_ms: int) -> int:
    """The broker id a consumer in ``client_rack`` should fetch from instead of this leader,
    or NO_PREFERRED_REPLICA.  ``rack_of(broker_id)`` -> (known to the metadata cache, rack)."""
    views = []
    for broker_id in rep.isr:
        if broker_id == rep.local_id:
            continue
        state = rep.followers.get(broker_id)
        if state is None or state.log_end_offset < fetch_offset or state.log_start_offset > fetch_offset:
            continue
        known, rack = rack_of(broker_id)
        if known:
            views.append(ReplicaView(broker_id, rack, state.log_end_offset, now_ms - state.last_caught_up_time_ms))
    known, rack = rack_of(rep.local_id)
    leader = ReplicaView(rep.local_id, rack if known else None, leader_end_offset, 0)
    chosen = select_rack_aware(client_rack, leader, [*views, leader])
    return NO_PREFERRED_REPLICA if chosen.broker_id == leader.broker_id else chosen.broker_id
