"""The server-side assignors ``uniform`` and ``range`` (groups/consumer/assignors.py).

Exact results from Kafka 4.3.1's own unit tests (UniformHomogeneousAssignmentBuilderTest,
UniformHeterogeneousAssignmentBuilderTest, RangeAssignorTest), with their topic ids, then
property-based tests against simple models: validity, balance, stickiness, range's
contiguous co-partitioned ranges, determinism.
"""

from __future__ import annotations

import base64
import random
import uuid
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from groups.consumer.assignor_common import java_string_key, kafka_uuid_key
from groups.consumer.assignors import (
    ASSIGNORS,
    MemberSpec,
    TopicSpec,
    assign,
    assignment_input,
)
from groups.consumer.uniform_assignor import assign_heterogeneous, assign_homogeneous


def kafka_uuid(s: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: URL-safe base64 of the 16 bytes, no padding."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=="))


# The topic ids of Kafka's assignor tests.
T1 = kafka_uuid("T1-A4s3VTwiI5CTbEp6POw")
T2 = kafka_uuid("T2-B4s3VTwiI5YHbPp6YUe")
T3 = kafka_uuid("T3-CU8fVTLCz5YMkLoDQsa")
T4 = kafka_uuid("T4-Tw9fVTLCz5HbPp6YQsa")
# Kafka 4.3.1 on JDK 17 iterates HashSet<Uuid>{T1, T2, T3} as T2, T3, T1 (hash order): some
# of its homogeneous tests' expectations depend on that order.


def topics_of(**counts: int) -> dict[uuid.UUID, TopicSpec]:
    ids = {"t1": T1, "t2": T2, "t3": T3, "t4": T4}
    return {ids[name]: TopicSpec(name, n) for name, n in counts.items()}


def member(*subscribed: uuid.UUID, instance_id: str | None = None,
           **assigned: list[int]) -> MemberSpec:
    ids = {"t1": T1, "t2": T2, "t3": T3, "t4": T4}
    return MemberSpec(frozenset(subscribed), instance_id=instance_id,
                      assigned={ids[t]: frozenset(ps) for t, ps in assigned.items()})


def parts(**assigned: list[int]) -> dict[uuid.UUID, frozenset[int]]:
    ids = {"t1": T1, "t2": T2, "t3": T3, "t4": T4}
    return {ids[t]: frozenset(ps) for t, ps in assigned.items()}


# -- the interface ----------------------------------------------------------------------------


def test_the_assignors_are_uniform_then_range_and_an_unknown_name_is_a_value_error():
    assert ASSIGNORS == ("uniform", "range")
    with pytest.raises(ValueError):
        assign("sticky", {"A": member(T1)}, topics_of(t1=1))


@pytest.mark.parametrize("name", ASSIGNORS)
def test_every_member_is_a_key_of_the_result_even_with_nothing_to_get(name):
    members = {"A": member(T1), "B": member(), "C": member(T1)}
    result = assign(name, members, topics_of(t1=1))
    assert set(result) == {"A", "B", "C"}
    assert result["B"] == {}
    assert assign(name, {}, topics_of(t1=1)) == {}


@pytest.mark.parametrize("name", ASSIGNORS)
def test_a_subscribed_topic_missing_from_the_metadata_is_ignored(name):
    missing = uuid.UUID(int=99)
    members = {"A": member(T1, missing, t1=[0]), "B": member(T1, missing)}
    result = assign(name, members, topics_of(t1=2))
    assert all(missing not in a for a in result.values())
    assert sorted(p for a in result.values() for p in a.get(T1, ())) == [0, 1]


def test_assignment_of_a_deleted_or_shrunk_topic_is_dropped_and_a_doubly_held_partition_kept_once():
    members = {"A": member(T1, t1=[0, 1, 7], t2=[0]), "B": member(T1, t1=[1])}
    spec = assignment_input(members, topics_of(t1=3))
    assert spec.assigned == {"A": {T1: (0, 1)}, "B": {}}
    result = assign("uniform", members, topics_of(t1=3))
    assert result == {"A": parts(t1=[0, 1]), "B": parts(t1=[2])}


@pytest.mark.parametrize("name", ASSIGNORS)
def test_racks_do_not_change_the_assignment_as_in_kafka_4_3_1(name):
    plain = {m: member(T1, T2) for m in "ABC"}
    racked = {m: replace(plain[m], rack_id=f"rack{i}") for i, m in enumerate("ABC")}
    topics = topics_of(t1=5, t2=4)
    racked_topics = {t: replace(s, partition_racks={p: frozenset({f"rack{p % 3}"})
                                                    for p in range(s.num_partitions)})
                     for t, s in topics.items()}
    assert assign(name, racked, racked_topics) == assign(name, plain, topics)


def test_member_specs_are_hashable_and_compare_by_value():
    a = MemberSpec(frozenset({T1}), assigned={T1: frozenset({0})})
    b = MemberSpec(frozenset({T1}), assigned={T1: frozenset({0})})
    assert a == b and hash(a) == hash(b)
    assert a != MemberSpec(frozenset({T1}))
    assert hash(TopicSpec("t", 3)) == hash(TopicSpec("t", 3))


# -- Java's orders ----------------------------------------------------------------------------


def test_topic_ids_sort_as_kafka_uuid_compare_to_with_signed_halves():
    high_bit = uuid.UUID(int=(1 << 127) | 5)
    assert sorted([uuid.UUID(int=1), high_bit], key=kafka_uuid_key) == [high_bit, uuid.UUID(int=1)]
    low_half_high_bit = uuid.UUID(int=(1 << 63))
    assert kafka_uuid_key(low_half_high_bit) < kafka_uuid_key(uuid.UUID(int=0))


def test_member_ids_sort_as_java_strings_by_utf16_code_unit():
    assert java_string_key("\U0001f600") < java_string_key("\uffff")   # surrogate 0xD83D first
    result = assign("range", {"\uffff": member(T1), "\U0001f600": member(T1)}, topics_of(t1=3))
    assert result["\U0001f600"] == parts(t1=[0, 1])


def test_uniform_heterogeneous_breaks_topic_ties_by_kafka_uuid_order():
    # X and Y tie on partitions per subscriber and subscriber count: the topic first in Kafka's
    # order is assigned first, so its partition goes to A (least loaded, first in order).
    x, y, z = uuid.UUID(int=(1 << 127) | 1), uuid.UUID(int=2), uuid.UUID(int=3)
    topics = {x: TopicSpec("x", 1), y: TopicSpec("y", 1), z: TopicSpec("z", 1)}
    members = {"A": MemberSpec(frozenset({x, y})), "B": MemberSpec(frozenset({x, y})),
               "C": MemberSpec(frozenset({z}))}
    result = assign("uniform", members, topics)
    assert result == {"A": {x: frozenset({0})}, "B": {y: frozenset({0})}, "C": {z: frozenset({0})}}


# -- Kafka's UniformHomogeneousAssignmentBuilderTest ------------------------------------------


def test_uniform_one_member_without_subscription_gets_nothing():
    assert assign("uniform", {"A": member()}, topics_of(t1=3)) == {"A": {}}


def test_uniform_spreads_two_partitions_over_three_members_leaving_the_first_empty():
    members = {m: member(T3) for m in "ABC"}
    assert assign("uniform", members, topics_of(t3=2)) == {
        "A": {}, "B": parts(t3=[0]), "C": parts(t3=[1])}


def test_uniform_six_partitions_over_three_members_two_each():
    members = {m: member(T1) for m in "ABC"}
    result = assign("uniform", members, topics_of(t1=6))
    assert result == {"A": parts(t1=[0, 1]), "B": parts(t1=[2, 3]), "C": parts(t1=[4, 5])}


def test_uniform_rebalances_an_unbalanced_previous_assignment_by_revoking_the_excess():
    members = {"A": member(T1, T2, t1=[0, 1], t2=[0, 1]), "B": member(T1, T2, t1=[2], t2=[2])}
    assert assign("uniform", members, topics_of(t1=3, t2=3)) == {
        "A": parts(t1=[0, 1], t2=[0]), "B": parts(t1=[2], t2=[1, 2])}


def test_uniform_new_member_takes_one_partition_from_each_old_member():
    members = {"A": member(T1, T2, t1=[0, 2], t2=[0]), "B": member(T1, T2, t1=[1], t2=[1, 2]),
               "C": member(T1, T2)}
    assert assign("uniform", members, topics_of(t1=3, t2=3)) == {
        "A": parts(t1=[0, 2]), "B": parts(t1=[1], t2=[1]), "C": parts(t2=[0, 2])}


def test_uniform_drops_the_partitions_of_an_unsubscribed_topic():
    members = {"A": member(T2, t1=[0], t2=[0]), "B": member(T2, t1=[1], t2=[1])}
    assert assign("uniform", members, topics_of(t1=2, t2=2)) == {
        "A": parts(t2=[0]), "B": parts(t2=[1])}


# The three tests below list never-assigned partitions topic by topic; Kafka iterates a
# HashSet there.  Given Kafka's order the builder reproduces Kafka's expectations exactly;
# assign() itself uses Kafka's Uuid order (T1 < T2 < T3), which is deterministic.


def test_uniform_homogeneous_first_assignment_matches_kafka_given_its_topic_order():
    members = {"A": member(T1, T3), "B": member(T1, T3)}
    topics = topics_of(t1=3, t3=2)
    kafka = assign_homogeneous(assignment_input(members, topics), [T3, T1])
    assert kafka == {"A": {T3: {0, 1}}, "B": {T1: {0, 1, 2}}}
    assert assign("uniform", members, topics) == {
        "A": parts(t1=[0, 1]), "B": parts(t1=[2], t3=[0, 1])}


def test_uniform_homogeneous_added_partitions_match_kafka_given_its_topic_order():
    members = {"A": member(T1, T2, t1=[0, 2], t2=[0]), "B": member(T1, T2, t1=[1], t2=[1, 2])}
    topics = topics_of(t1=6, t2=5)
    kafka = assign_homogeneous(assignment_input(members, topics), [T2, T1])
    assert kafka == {"A": {T1: {0, 2}, T2: {0, 3, 4}}, "B": {T1: {1, 3, 4, 5}, T2: {1, 2}}}
    assert assign("uniform", members, topics) == {
        "A": parts(t1=[0, 2, 3, 4], t2=[0]), "B": parts(t1=[1, 5], t2=[1, 2, 3, 4])}


def test_uniform_homogeneous_removed_member_matches_kafka_given_its_topic_order():
    members = {"A": member(T1, T2, t1=[0], t2=[0]), "B": member(T1, T2, t1=[1], t2=[1])}
    topics = topics_of(t1=3, t2=3)
    kafka = assign_homogeneous(assignment_input(members, topics), [T2, T1])
    assert kafka == {"A": {T1: {0}, T2: {0, 2}}, "B": {T1: {1, 2}, T2: {1}}}
    assert assign("uniform", members, topics) == {
        "A": parts(t1=[0, 2], t2=[0]), "B": parts(t1=[1], t2=[1, 2])}


# -- Kafka's UniformHeterogeneousAssignmentBuilderTest ----------------------------------------


def test_uniform_heterogeneous_first_assignment_of_two_members_two_topics():
    members = {"A": member(T1, T3), "B": member(T3)}
    assert assign("uniform", members, topics_of(t1=3, t3=6)) == {
        "A": parts(t1=[0, 1, 2], t3=[4]), "B": parts(t3=[0, 1, 2, 3, 5])}


def test_uniform_heterogeneous_more_members_than_partitions():
    members = {"A": member(T3), "B": member(T3), "C": member(T1)}
    assert assign("uniform", members, topics_of(t1=2, t3=1)) == {
        "A": parts(t3=[0]), "B": {}, "C": parts(t1=[0, 1])}


def test_uniform_heterogeneous_rebalances_three_topics_from_an_unbalanced_assignment():
    members = {"A": member(T1, t1=[0, 1, 2]),
               "B": member(T1, T2, t1=[3], t2=[0]),
               "C": member(T1, T2, T3, t1=[4, 5], t2=[1, 2, 3], t3=[0, 1, 2, 3])}
    assert assign("uniform", members, topics_of(t1=6, t2=4, t3=4)) == {
        "A": parts(t1=[0, 1, 2, 5]), "B": parts(t1=[3], t2=[0, 1, 2, 3]),
        "C": parts(t1=[4], t3=[0, 1, 2, 3])}


def test_uniform_heterogeneous_added_partitions_stay_with_their_subscribers():
    members = {"A": member(T1, T3, t1=[0, 1, 2, 3], t3=[0, 1]),
               "B": member(T1, T2, T3, T4, t2=[0, 1, 2], t4=[0, 1, 2])}
    assert assign("uniform", members, topics_of(t1=6, t2=5, t3=3, t4=3)) == {
        "A": parts(t1=[0, 1, 2, 3, 4, 5], t3=[0, 1, 2]),
        "B": parts(t2=[0, 1, 2, 3, 4], t4=[0, 1, 2])}


def test_uniform_heterogeneous_new_member_and_new_partitions():
    members = {"A": member(T1, t1=[0, 2], t2=[0]), "B": member(T1, T2, t1=[1], t2=[1, 2]),
               "C": member(T1, T2)}
    assert assign("uniform", members, topics_of(t1=6, t2=7)) == {
        "A": parts(t1=[0, 2, 3, 4, 5]), "B": parts(t1=[1], t2=[1, 2, 6]),
        "C": parts(t2=[0, 3, 4, 5])}


def test_uniform_heterogeneous_removed_member_leaves_its_partitions_to_their_subscribers():
    members = {"A": member(T1, T3, t1=[0, 1, 2], t3=[0, 1]), "B": member(T2, t2=[3, 4, 5, 6])}
    assert assign("uniform", members, topics_of(t1=3, t2=8, t3=3)) == {
        "A": parts(t1=[0, 1, 2], t3=[0, 1, 2]), "B": parts(t2=list(range(8)))}


def test_uniform_heterogeneous_removed_subscription():
    members = {"A": member(T1, t1=[0, 2], t2=[1, 3]), "B": member(T1, T2, t1=[1], t2=[0, 2, 4])}
    assert assign("uniform", members, topics_of(t1=3, t2=5)) == {
        "A": parts(t1=[0, 1, 2]), "B": parts(t2=[0, 1, 2, 3, 4])}


def test_uniform_heterogeneous_member_without_subscription_gets_nothing():
    members = {"A": member(T1), "B": member()}
    assert assign("uniform", members, topics_of(t1=3)) == {"A": parts(t1=[0, 1, 2]), "B": {}}


def test_uniform_heterogeneous_balancing_stops_when_a_topic_runs_out_of_partitions():
    # Kafka runs this one as HETEROGENEOUS (its type comes from topic names); the same
    # resolved subscriptions make assign() choose the homogeneous builder, so call the port.
    members = {"A": member(T1, T2, T3, t1=[0, 1], t2=[0, 1], t3=[0, 1]), "B": member(T1, T2, T3)}
    spec = assignment_input(members, topics_of(t1=2, t2=2, t3=2))
    assert assign_heterogeneous(spec) == {
        "A": {T2: {0}, T3: {0, 1}}, "B": {T1: {0, 1}, T2: {1}}}


# -- Kafka's RangeAssignorTest ----------------------------------------------------------------


def test_range_two_members_two_topics_same_subscriptions():
    members = {"A": member(T1, T3), "B": member(T1, T3)}
    assert assign("range", members, topics_of(t1=3, t3=2)) == {
        "A": parts(t1=[0, 1], t3=[0]), "B": parts(t1=[2], t3=[1])}


def test_range_three_members_three_topics_different_subscriptions():
    members = {"A": member(T1, T2), "B": member(T3), "C": member(T2, T3)}
    assert assign("range", members, topics_of(t1=3, t2=3, t3=2)) == {
        "A": parts(t1=[0, 1, 2], t2=[0, 1]), "B": parts(t3=[0]), "C": parts(t2=[2], t3=[1])}


def test_range_more_members_than_partitions():
    members = {m: member(T1, T3) for m in "ABC"}
    assert assign("range", members, topics_of(t1=3, t3=2)) == {
        "A": parts(t1=[0], t3=[0]), "B": parts(t1=[1], t3=[1]), "C": parts(t1=[2])}


def test_range_new_member_and_new_partition_with_different_subscriptions():
    members = {"A": member(T1, T2, t1=[0, 1], t2=[0, 1]), "B": member(T1, T2, t1=[2], t2=[2]),
               "C": member(T1)}
    assert assign("range", members, topics_of(t1=4, t2=3)) == {
        "A": parts(t1=[0, 1], t2=[0, 1]), "B": parts(t1=[2], t2=[2]), "C": parts(t1=[3])}


def test_range_after_subscriptions_changed_ignores_the_current_assignment():
    members = {"A": member(T1, t1=[0, 1, 2], t2=[0]), "B": member(T1, T2, T3, t2=[1]),
               "C": member(T2, t2=[2], t3=[0, 1])}
    assert assign("range", members, topics_of(t1=3, t2=3, t3=2)) == {
        "A": parts(t1=[0, 1]), "B": parts(t1=[2], t2=[0, 1], t3=[0, 1]), "C": parts(t2=[2])}


def test_range_static_member_rejoining_under_a_new_member_id_gets_its_ranges_back():
    topics = topics_of(t1=5)
    first = assign("range", {"A": member(T1, instance_id="instanceA"),
                             "C": member(T1, instance_id="instanceC"), "B": member(T1)}, topics)
    second = assign("range", {"memberA1": member(T1, instance_id="instanceA"),
                              "C": member(T1, instance_id="instanceC"), "B": member(T1)}, topics)
    assert first == {"A": parts(t1=[0, 1]), "C": parts(t1=[2, 3]), "B": parts(t1=[4])}
    assert second == {"memberA1": first["A"], "C": first["C"], "B": first["B"]}


# -- properties -------------------------------------------------------------------------------

# Topic ids with and without the first bit of either half set (Kafka's signed order).
TOPIC_POOL = [uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=(1 << 127) | 3),
              uuid.UUID(int=(1 << 63) | 4), T1, T2]
MISSING = uuid.UUID(int=0xDEAD)
PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def groups(draw, homogeneous: bool | None = None, max_members: int = 6):
    topic_ids = draw(st.lists(st.sampled_from(TOPIC_POOL), min_size=1, max_size=4, unique=True))
    topics = {t: TopicSpec(f"t{i}", draw(st.integers(1, 9))) for i, t in enumerate(topic_ids)}
    member_ids = draw(st.lists(st.text("abcxyz", min_size=1, max_size=3),
                               min_size=1, max_size=max_members, unique=True))
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    subscribable = st.sampled_from(topic_ids + [MISSING])
    common = draw(st.frozensets(subscribable, min_size=1))
    members = {}
    for m in member_ids:
        subscribed = common if homogeneous else draw(st.frozensets(subscribable))
        instance_id = draw(st.sampled_from([None, f"i-{m}"]))
        members[m] = MemberSpec(subscribed, instance_id=instance_id)
    return members, topics


def sizes(result):
    return {m: sum(len(p) for p in a.values()) for m, a in result.items()}


def owned(assignment):
    return {(t, p) for t, ps in assignment.items() for p in ps}


def check_valid(members, topics, result):
    """Every subscribed existing partition assigned once, to a subscriber of its topic."""
    assert set(result) == set(members)
    owner = {}
    for m, assignment in result.items():
        for t, ps in assignment.items():
            assert ps and t in topics and t in members[m].subscribed_topic_ids
            for p in ps:
                assert 0 <= p < topics[t].num_partitions
                assert (t, p) not in owner, f"{(t, p)} assigned to {owner.get((t, p))} and {m}"
                owner[(t, p)] = m
    wanted = {(t, p) for s in members.values() for t in s.subscribed_topic_ids if t in topics
              for p in range(topics[t].num_partitions)}
    assert set(owner) == wanted


def with_assigned(members, result):
    return {m: replace(s, assigned=result[m]) for m, s in members.items()}


@pytest.mark.parametrize("name", ASSIGNORS)
@PROPERTY
@given(group=groups())
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(name, group):
    members, topics = group
    check_valid(members, topics, assign(name, members, topics))


@PROPERTY
@given(group=groups(homogeneous=True))
def test_uniform_homogeneous_member_partition_counts_differ_by_at_most_one(group):
    members, topics = group
    counts = sizes(assign("uniform", members, topics)).values()
    assert max(counts) - min(counts) <= 1


@PROPERTY
@given(group=groups(homogeneous=False))
def test_uniform_heterogeneous_leaves_no_partition_that_a_two_lighter_subscriber_could_take(group):
    members, topics = group
    result = assign("uniform", members, topics)
    count = sizes(result)
    for t in topics:
        subscribers = [m for m in members if t in members[m].subscribed_topic_ids]
        for holder in (m for m in subscribers if result[m].get(t)):
            assert all(count[holder] - count[s] <= 1 for s in subscribers)


@pytest.mark.parametrize("name", ASSIGNORS)
@PROPERTY
@given(group=groups())
def test_rerunning_with_the_previous_result_as_current_assignment_changes_nothing(name, group):
    members, topics = group
    first = assign(name, members, topics)
    assert assign(name, with_assigned(members, first), topics) == first


@PROPERTY
@given(group=groups(homogeneous=True), new_id=st.text("abcxyz", min_size=1, max_size=3))
def test_uniform_new_member_moves_only_the_partitions_balance_needs(group, new_id):
    members, topics = group
    assume(new_id not in members)
    first = assign("uniform", members, topics)
    grown = with_assigned(members, first)
    grown[new_id] = MemberSpec(next(iter(members.values())).subscribed_topic_ids)
    second = assign("uniform", grown, topics)
    check_valid(grown, topics, second)
    counts = sizes(second)
    assert max(counts.values()) - min(counts.values()) <= 1
    quota = sum(counts.values()) // len(grown)
    for m in members:
        before = owned(first[m])
        assert len(before & owned(second[m])) >= min(len(before), quota)


def range_model(members, topics):
    """Kafka's range: per topic, its subscribers in order (static members by instance id,
    then the others by member id) get contiguous ranges, the first n % k one larger."""
    order = sorted(members, key=lambda m: (0, members[m].instance_id)
                   if members[m].instance_id is not None else (1, m))
    result = {m: {} for m in members}
    for t, spec in topics.items():
        subscribers = [m for m in order if t in members[m].subscribed_topic_ids]
        n, k, start = spec.num_partitions, len(subscribers), 0
        for i, m in enumerate(subscribers):
            size = n // k + (1 if i < n % k else 0)
            if size:
                result[m][t] = frozenset(range(start, start + size))
            start += size
    return result


@PROPERTY
@given(group=groups())
def test_range_splits_each_topic_into_contiguous_ranges_in_member_order(group):
    members, topics = group
    assert assign("range", members, topics) == range_model(members, topics)


@PROPERTY
@given(group=groups(homogeneous=True), count=st.integers(1, 9))
def test_range_gives_co_partitioned_topics_the_same_partitions_to_each_member(group, count):
    members, topics = group
    topics = {t: replace(s, num_partitions=count) for t, s in topics.items()}
    subscribed = next(iter(members.values())).subscribed_topic_ids & set(topics)
    for assignment in assign("range", members, topics).values():
        assert set(assignment) in (set(), subscribed)
        assert len(set(assignment.values())) <= 1


@pytest.mark.parametrize("name", ASSIGNORS)
@PROPERTY
@given(group=groups(), seed=st.integers(0, 2**32))
def test_the_result_does_not_depend_on_mapping_insertion_order(name, group, seed):
    members, topics = group
    first = assign(name, members, topics)
    members = with_assigned(members, first)
    # a member added so that the second run has something to move
    members["new"] = MemberSpec(frozenset(topics))
    rng = random.Random(seed)

    def shuffled(mapping):
        items = list(mapping.items())
        rng.shuffle(items)
        return dict(items)

    expected = assign(name, members, topics)
    reordered = {m: replace(s, assigned=shuffled(s.assigned)) for m, s in shuffled(members).items()}
    assert assign(name, reordered, shuffled(topics)) == expected
