"""OffsetCommit / OffsetFetch / OffsetDelete / expiry / DeleteGroups / ListGroups /
DescribeGroups."""

from groups import GroupState
from tests.unit.groups.helpers import (
    GROUP,
    commit_req,
    fetch_req,
    leave_req,
    make,
    stable_group,
)
from wire.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)

DAY_MS = 24 * 3600 * 1000


def _fetched(result):
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch,
                                          p.metadata, p.error_code)
            for t in result.response.topics for p in t.partitions}


def test_a_simple_commit_creates_an_empty_group_and_fetch_returns_offset_and_metadata():
    coord, clock = make()
    r = coord.offset_commit(commit_req({("t", 0): 42, ("t", 1): 7}, metadata="meta",
                                       leader_epoch=3), 8)
    assert [p.error_code for t in r.response.topics for p in t.partitions] == [0, 0]
    assert len(r.records) == 2
    assert coord.groups[GROUP].state is GroupState.EMPTY
    assert coord.groups[GROUP].protocol_type is None
    got = _fetched(coord.offset_fetch(fetch_req({"t": [0, 1, 2]}), 7))
    assert got == {("t", 0): (42, 3, "meta", 0), ("t", 1): (7, 3, "meta", 0),
                   ("t", 2): (-1, -1, "", 0)}


def test_fetch_of_an_unknown_group_answers_minus_one_without_any_error():
    coord, clock = make()
    r = coord.offset_fetch(fetch_req({"t": [0]}, group="nobody"), 7)
    assert r.response.error_code == 0
    assert _fetched(r) == {("t", 0): (-1, -1, "", 0)}


def test_fetch_with_null_topics_returns_every_committed_offset():
    coord, clock = make()
    coord.offset_commit(commit_req({("b", 0): 1, ("a", 3): 2}), 8)
    got = _fetched(coord.offset_fetch(fetch_req(None), 7))
    assert set(got) == {("a", 3), ("b", 0)}


def test_fetch_v8_answers_per_group():
    coord, clock = make()
    coord.offset_commit(commit_req({("t", 0): 5}), 8)
    req = OffsetFetchRequest(groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id=GROUP, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[0])]),
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id="other", topics=None),
    ])
    r = coord.offset_fetch(req, 8).response
    assert [g.group_id for g in r.groups] == [GROUP, "other"]
    assert r.groups[0].topics[0].partitions[0].committed_offset == 5
    assert r.groups[1].topics == [] and r.groups[1].error_code == 0


def test_commit_metadata_over_the_limit_answers_offset_metadata_too_large():
    coord, clock = make(offset_metadata_max_bytes=4)
    r = coord.offset_commit(commit_req({("t", 0): 1}, metadata="12345"), 8)
    assert r.response.topics[0].partitions[0].error_code == 12 and r.records == []


def test_a_null_metadata_is_stored_as_empty_string():
    coord, clock = make()
    coord.offset_commit(commit_req({("t", 0): 1}, metadata=None), 8)
    assert _fetched(coord.offset_fetch(fetch_req({"t": [0]}), 7))[("t", 0)][2] == ""


def test_offsets_of_a_simple_group_expire_after_retention_from_their_commit():
    coord, clock = make(offsets_retention_ms=DAY_MS, offsets_retention_check_interval_ms=60_000)
    coord.offset_commit(commit_req({("t", 0): 1}), 8)
    clock.advance(DAY_MS - 60_000)
    assert coord.poll().records == []
    clock.advance(60_000)
    records = coord.poll().records
    assert [r.value for r in records] == [None, None]  # offset tombstone + group tombstone
    assert GROUP not in coord.groups


def test_retention_time_ms_in_v2_to_v4_sets_an_expire_timestamp():
    coord, clock = make(offsets_retention_check_interval_ms=1000)
    coord.offset_commit(commit_req({("t", 0): 1}, retention_ms=5000), 2)
    clock.advance(5000)
    coord.poll()
    assert GROUP not in coord.groups


def test_offsets_of_a_consumer_group_expire_counting_from_when_it_became_empty():
    coord, clock = make(offsets_retention_ms=DAY_MS, offsets_retention_check_interval_ms=60_000)
    ids, gen, leader = stable_group(coord, clock, 1)
    coord.offset_commit(commit_req({("t", 0): 9}, generation=gen, member_id=ids[0]), 8)
    clock.advance(2 * DAY_MS)  # member heartbeats are not sent: it expires, group Empty
    coord.poll()
    assert coord.groups[GROUP].state is GroupState.EMPTY
    empty_since = coord.groups[GROUP].current_state_timestamp_ms
    clock.set(empty_since + DAY_MS - 1)
    coord.poll()
    assert GROUP in coord.groups
    clock.set(empty_since + DAY_MS + 60_000)
    coord.poll()
    assert GROUP not in coord.groups


def test_offset_delete_refuses_topics_the_group_is_subscribed_to():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 1)  # subscribed to "t"
    coord.offset_commit(commit_req({("t", 0): 1, ("u", 0): 2}, generation=gen, member_id=ids[0]), 8)
    req = OffsetDeleteRequest(group_id=GROUP, topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name=n, partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])
        for n in ("t", "u")])
    r = coord.offset_delete(req, 0)
    codes = {t.name: t.partitions[0].error_code for t in r.response.topics}
    assert codes == {"t": 86, "u": 0}
    assert len(r.records) == 1 and r.records[0].value is None
    assert _fetched(coord.offset_fetch(fetch_req({"u": [0]}), 7))[("u", 0)][0] == -1
    r = coord.offset_delete(OffsetDeleteRequest(group_id="nobody"), 0)
    assert r.response.error_code == 69


def test_delete_groups_refuses_non_empty_groups_and_unknown_ones():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 1)
    coord.offset_commit(commit_req({("x", 0): 1}, group="simple"), 8)
    r = coord.delete_groups(DeleteGroupsRequest(groups_names=[GROUP, "simple", "nope"]), 2)
    assert [(g.group_id, g.error_code) for g in r.response.results] == [
        (GROUP, 68), ("simple", 0), ("nope", 69)]
    assert [rec.value for rec in r.records] == [None, None]
    assert "simple" not in coord.groups
    coord.leave_group(leave_req((ids[0], None)), 4)
    r = coord.delete_groups(DeleteGroupsRequest(groups_names=[GROUP]), 2)
    assert r.response.results[0].error_code == 0


def test_list_groups_filters_by_state_case_insensitively():
    coord, clock = make()
    stable_group(coord, clock, 1)
    coord.offset_commit(commit_req({("x", 0): 1}, group="simple"), 8)
    r = coord.list_groups(ListGroupsRequest(), 3).response
    assert {(g.group_id, g.protocol_type) for g in r.groups} == {(GROUP, "consumer"), ("simple", "")}
    r = coord.list_groups(ListGroupsRequest(states_filter=["stable"]), 4).response
    assert [g.group_id for g in r.groups] == [GROUP]


def test_describe_groups_shows_members_with_assignments_when_stable_and_dead_for_unknown():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    r = coord.describe_groups(DescribeGroupsRequest(groups=[GROUP, "nope"]), 5).response
    g, unknown = r.groups
    assert (g.group_state, g.protocol_type, g.protocol_data) == ("Stable", "consumer", "range")
    assert {m.member_id: m.member_assignment for m in g.members} == {
        mid: f"assign-{mid}".encode() for mid in ids}
    assert all(m.client_host == "/127.0.0.1" for m in g.members)
    assert (unknown.group_state, unknown.error_code) == ("Dead", 0)


def test_a_commit_whose_append_is_reported_late_does_not_replace_a_later_one_in_the_log():
    # Each append's outcome waits for its own replication, so outcomes may be reported out
    # of log order; the commit later in the log is the one that stays (Kafka's
    # GroupMetadata.onOffsetCommitAppend compares the records' offsets).
    coord, clock = make()
    raw = coord.coordinator
    first = raw.offset_commit(commit_req({("t", 0): 10}), 8)
    second = raw.offset_commit(commit_req({("t", 0): 20}), 8)
    (w1,), (w2,) = first.writes, second.writes
    w1.base_offset, w2.base_offset = 100, 101   # appended in call order
    second.appended([0])
    first.appended([0])
    assert _fetched(coord.offset_fetch(fetch_req({"t": [0]}), 7))[("t", 0)][0] == 20
    third = raw.offset_commit(commit_req({("t", 0): 5}), 8)   # a later commit still moves it
    third.writes[0].base_offset = 102
    third.appended([0])
    assert _fetched(coord.offset_fetch(fetch_req({"t": [0]}), 7))[("t", 0)][0] == 5
