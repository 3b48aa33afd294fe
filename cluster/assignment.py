"""Replica placement for new topics and partitions: Kafka's ``AdminUtils.assignReplicasToBrokers``.

Port of ``org.apache.kafka.admin.AdminUtils`` (Kafka 3.9; ``kafka.admin.AdminUtils`` before).
Brokers are given sorted by id, as Kafka's callers do (``getBrokerMetadatas``).

Rack-unaware: partition ``p``'s first replica is broker ``(p + startIndex) % n``; the others
follow at ``1 + (shift + j) % (n - 1)`` past it, the shift growing by one each time ``p``
wraps round the broker list, so leaders and followers spread evenly.  Rack-aware: the same
walk over the rack-alternated broker list (one broker of each rack in turn, racks sorted),
skipping a broker whose rack (or itself) already holds a replica while some rack (or broker)
holds none.  Kafka draws ``startIndex`` and the initial shift at random; here they are
parameters (``-1`` = draw from the ``rand_int`` callable) so tests replay Kafka's vectors.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "AdminOperationError",
    "BrokerMetadata",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "assign_replicas_to_brokers",
    "rack_alternated_broker_list",
]


class InvalidReplicationFactorError(ValueError):
    """INVALID_REPLICATION_FACTOR (38), with Kafka's message."""


class InvalidPartitionsError(ValueError):
    """INVALID_PARTITIONS (37), with Kafka's message."""


class AdminOperationError(ValueError):
    """Kafka's AdminOperationException (answered as INVALID_REQUEST-like errors by callers)."""


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    broker_id: int
    rack: str | None = None


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rand_int: Callable[[int], int] | None = None,
) -> dict[int, list[int]]:
    """partition id -> replicas (the first is the preferred leader)."""
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}."
        )
    draw = rand_int or random.randrange
    if all(b.rack is None for b in brokers):
        return _rack_unaware(
            n_partitions, replication_factor, [b.broker_id for b in brokers],
            fixed_start_index, start_partition_id, draw,
        )
    if any(b.rack is None for b in brokers):
        raise AdminOperationError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    return _rack_aware(
        n_partitions, replication_factor, {b.broker_id: b.rack for b in brokers},  # type: ignore[misc]
        fixed_start_index, start_partition_id, draw,
    )


def _replica_index(first: int, second_shift: int, replica_index: int, n_brokers: int) -> int:
    shift = 1 + (second_shift + replica_index) % (n_brokers - 1)
    return (first + shift) % n_brokers


def _rack_unaware(
    n_partitions: int, rf: int, broker_list: list[int], fixed_start_index: int,
    start_partition_id: int, draw: Callable[[int], int],
) -> dict[int, list[int]]:
    n = len(broker_list)
    start_index = fixed_start_index if fixed_start_index >= 0 else draw(n)
    current = max(0, start_partition_id)
    shift = fixed_start_index if fixed_start_index >= 0 else draw(n)
    out: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start_index) % n
        replicas = [broker_list[first]]
        replicas += [broker_list[_replica_index(first, shift, j, n)] for j in range(rf - 1)]
        out[current] = replicas
        current += 1
    return out


def rack_alternated_broker_list(broker_racks: dict[int, str]) -> list[int]:
    """``getRackAlternatedBrokerList``: racks sorted, brokers of a rack sorted, one per rack in turn."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker_id)
    racks = sorted(by_rack)
    iters = {r: iter(sorted(by_rack[r])) for r in racks}
    out: list[int] = []
    i = 0
    while len(out) < len(broker_racks):
        nxt = next(iters[racks[i]], None)
        if nxt is not None:
            out.append(nxt)
        i = (i + 1) % len(racks)
    return out


def _rack_aware(
    n_partitions: int, rf: int, broker_racks: dict[int, str], fixed_start_index: int,
    start_partition_id: int, draw: Callable[[int], int],
) -> dict[int, list[int]]:
    num_racks = len(set(broker_racks.values()))
    arranged = rack_alternated_broker_list(broker_racks)
    n = len(arranged)
    start_index = fixed_start_index if fixed_start_index >= 0 else draw(n)
    current = max(0, start_partition_id)
    shift = fixed_start_index if fixed_start_index >= 0 else draw(n)
    out: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_with = {broker_racks[leader]}
        brokers_with = {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = broker_racks[broker]
                k += 1
                # Skip a broker whose rack already has a replica while some rack has none,
                # or which already has one while some broker has none.
                if (rack not in racks_with or len(racks_with) == num_racks) and (
                    broker not in brokers_with or len(brokers_with) == n
                ):
                    replicas.append(broker)
                    racks_with.add(rack)
                    brokers_with.add(broker)
                    break
        out[current] = replicas
        current += 1
    return out
