"""cluster.assignment places replicas exactly as Kafka's AdminUtils does."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.assignment import (
    AdminOperationError,
    BrokerMetadata,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    assign_replicas_to_brokers,
    rack_alternated_broker_list,
)


def brokers(n: int, racks: dict[int, str] | None = None) -> list[BrokerMetadata]:
    return [BrokerMetadata(i, (racks or {}).get(i)) for i in range(n)]


def test_rack_unaware_assignment_matches_kafkas_admin_test_vector():
    # AdminTest.testReplicaAssignment / ReplicaAssignmentTest: 5 brokers, 10 partitions, RF 3, start 0.
    expected = {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }
    assert assign_replicas_to_brokers(brokers(5), 10, 3, fixed_start_index=0) == expected


def test_rack_alternated_broker_list_and_rack_aware_assignment_match_admin_rack_aware_test():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_broker_list({k: v for k, v in racks.items() if k != 5}) == [0, 3, 1, 4, 2]
    expected = {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0],
                5: [2, 0, 3], 6: [0, 4, 2]}
    assert assign_replicas_to_brokers(brokers(6, racks), 7, 3, 0, 0) == expected


def test_too_high_replication_factor_is_refused_with_kafkas_message():
    with pytest.raises(InvalidReplicationFactorError,
                       match=r"^Replication factor: 3 larger than available brokers: 1\.$"):
        assign_replicas_to_brokers(brokers(1), 1, 3)
    with pytest.raises(InvalidReplicationFactorError, match="must be larger than 0"):
        assign_replicas_to_brokers(brokers(3), 1, 0)
    with pytest.raises(InvalidPartitionsError, match="Number of partitions must be larger than 0."):
        assign_replicas_to_brokers(brokers(3), 0, 1)


def test_some_brokers_without_a_rack_is_an_admin_error():
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information"):
        assign_replicas_to_brokers(brokers(3, {0: "a", 1: "b"}), 3, 2)


def test_start_partition_id_continues_an_existing_topic():
    full = assign_replicas_to_brokers(brokers(3), 6, 2, fixed_start_index=1)
    tail = assign_replicas_to_brokers(brokers(3), 3, 2, fixed_start_index=1, start_partition_id=3)
    assert tail == {p: full[p] for p in (3, 4, 5)}


@settings(max_examples=150, deadline=None)
@given(
    n_brokers=st.integers(1, 9),
    n_racks=st.integers(0, 4),
    data=st.data(),
)
def test_every_partition_gets_rf_distinct_replicas_leaders_spread_and_racks_distinct(n_brokers, n_racks, data):
    rf = data.draw(st.integers(1, n_brokers))
    n_parts = data.draw(st.integers(1, 3 * n_brokers))
    racks = {i: f"r{i % n_racks}" for i in range(n_brokers)} if n_racks else None
    start = data.draw(st.integers(0, n_brokers - 1))
    shift = data.draw(st.integers(0, n_brokers - 1))
    draws = iter([start, shift])
    out = assign_replicas_to_brokers(brokers(n_brokers, racks), n_parts, rf,
                                     rand_int=lambda n: next(draws))
    assert sorted(out) == list(range(n_parts))
    for replicas in out.values():
        assert len(replicas) == rf == len(set(replicas))
        assert all(0 <= r < n_brokers for r in replicas)
        if racks:
            distinct = len({racks[r] for r in replicas})
            assert distinct == min(rf, len(set(racks.values())))
    leaders = Counter(r[0] for r in out.values())
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in range(n_brokers)) <= 1 or \
        n_parts < n_brokers
