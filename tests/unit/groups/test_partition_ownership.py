"""A coordinator that owns only some ``__consumer_offsets`` partitions (a cluster broker):
NOT_COORDINATOR for the others, COORDINATOR_LOAD_IN_PROGRESS while one loads, and the
unload when leadership moves away (Kafka's validateGroupStatus / onResignation)."""

from __future__ import annotations

from groups import GroupState
from tests.unit.groups.helpers import (
    GROUP,
    commit_req,
    fetch_req,
    hb_req,
    join,
    join_new_member,
    leave_req,
    make,
    stable_group,
    sync_req,
)
from wire.error_codes import ErrorCode
from wire.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)

PARTITIONS = 4
NOT_COORD = ErrorCode.NOT_COORDINATOR
LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def cluster_coordinator():
    coord, clock = make(offsets_topic_num_partitions=PARTITIONS)
    coord.coordinator.owned_partitions = set()
    return coord, clock


def group_in(coord, partition: int, avoid: str | None = None) -> str:
    """A group id hashed to ``partition``."""
    for i in range(1000):
        gid = f"g{i}"
        if gid != avoid and coord.partition_for(gid) == partition:
            return gid
    raise AssertionError("no group id found")


def every_api_error(coord, gid: str) -> dict[str, object]:
    """The error each group API answers for ``gid``, read where each layout carries it."""
    out: dict[str, object] = {}
    out["join"] = join(coord, "", 7, group=gid).pending.response.error_code
    out["sync"] = coord.sync_group(sync_req("m", 1, group=gid), 5).pending.response.error_code
    out["heartbeat"] = coord.heartbeat(hb_req("m", 1, group=gid), 4).response.error_code
    out["leave"] = coord.leave_group(leave_req(("m", None), group=gid), 4).response.error_code
    commit = coord.offset_commit(commit_req({("t", 0): 1, ("t", 1): 2}, group=gid), 8).response
    out["commit"] = {p.error_code for t in commit.topics for p in t.partitions}
    v1 = coord.offset_fetch(fetch_req({"t": [0, 1]}, group=gid), 1).response
    out["fetch v1"] = {p.error_code for t in v1.topics for p in t.partitions}
    out["fetch v5"] = coord.offset_fetch(fetch_req({"t": [0]}, group=gid), 5).response.error_code
    v8 = coord.offset_fetch(OffsetFetchRequest(groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id=gid, topics=None)]), 8).response
    out["fetch v8"] = v8.groups[0].error_code
    out["describe"] = coord.describe_groups(
        DescribeGroupsRequest(groups=[gid]), 5).response.groups[0].error_code
    out["delete"] = coord.delete_groups(
        DeleteGroupsRequest(groups_names=[gid]), 2).response.results[0].error_code
    out["offset delete"] = coord.offset_delete(
        OffsetDeleteRequest(group_id=gid, topics=[]), 0).response.error_code
    return out


def expect_all(code: ErrorCode) -> dict[str, object]:
    c = int(code)
    return {"join": c, "sync": c, "heartbeat": c, "leave": c, "commit": {c}, "fetch v1": {c},
            "fetch v5": c, "fetch v8": c, "describe": c, "delete": c, "offset delete": c}


def test_every_group_api_answers_not_coordinator_for_a_partition_it_does_not_own():
    coord, _ = cluster_coordinator()
    assert every_api_error(coord, group_in(coord, 2)) == expect_all(NOT_COORD)
    assert coord.groups == {}


def test_every_group_api_answers_load_in_progress_while_the_groups_partition_loads():
    coord, _ = cluster_coordinator()
    coord.begin_load(2)
    assert every_api_error(coord, group_in(coord, 2)) == expect_all(LOADING)
    # a group of another, unowned partition is still NOT_COORDINATOR
    assert coord.heartbeat(hb_req("m", 1, group=group_in(coord, 3)), 4).response.error_code \
        == NOT_COORD


def test_list_groups_lists_the_loaded_groups_with_load_in_progress_while_a_partition_loads():
    coord, _ = cluster_coordinator()
    coord.begin_load(0)
    coord.complete_load(0)
    owned = group_in(coord, 0)
    coord.offset_commit(commit_req({("t", 0): 5}, group=owned), 8)
    coord.begin_load(1)
    listed = coord.list_groups(ListGroupsRequest(states_filter=[]), 4).response
    assert (listed.error_code, [g.group_id for g in listed.groups]) == (int(LOADING), [owned])
    coord.complete_load(1)
    assert coord.list_groups(ListGroupsRequest(states_filter=[]), 4).response.error_code == 0


def test_a_loaded_partition_is_owned_and_serves_the_offsets_replayed_from_its_records():
    source, _ = make(offsets_topic_num_partitions=PARTITIONS)
    gid = group_in(source, 1)
    source.offset_commit(commit_req({("t", 0): 42}, group=gid), 8)
    coord, _ = cluster_coordinator()
    coord.begin_load(1)
    for record in source.log:
        coord.replay(record.key, record.value)
    coord.complete_load(1)
    assert coord.owned_partitions == {1}
    fetched = coord.offset_fetch(fetch_req({"t": [0]}, group=gid), 5).response
    assert (fetched.error_code, fetched.topics[0].partitions[0].committed_offset) == (0, 42)


def test_unloading_answers_parked_joins_not_coordinator_and_drops_the_groups_timers():
    coord, clock = cluster_coordinator()
    gid = GROUP  # stable_group's group
    mine = coord.partition_for(gid)
    coord.complete_load(mine)
    coord.complete_load((mine + 1) % PARTITIONS)
    other = group_in(coord, (mine + 1) % PARTITIONS)
    coord.offset_commit(commit_req({("t", 0): 3}, group=other), 8)
    ids, gen, _ = stable_group(coord, clock, 2)
    # a third member joins: PreparingRebalance, the new member's JoinGroup is parked
    parked = join_new_member(coord, group=gid)
    assert not parked.done() and coord.groups[gid].state is GroupState.PREPARING_REBALANCE
    assert any(gid in k for k in coord.timers._entries)
    coord.unload_partition(mine)
    assert parked.done() and parked.response.error_code == NOT_COORD
    assert gid not in coord.groups and other in coord.groups
    assert coord.owned_partitions == {(mine + 1) % PARTITIONS}
    # the group's session and join timers are gone; the offsets expiry stays
    keys = set(coord.timers._entries)
    assert keys and not any(gid in k for k in keys), keys
    assert coord.heartbeat(hb_req(ids[0], gen, group=gid), 4).response.error_code == NOT_COORD


def test_unloading_answers_parked_syncs_not_coordinator():
    coord, clock = cluster_coordinator()
    coord.complete_load(3)
    gid = group_in(coord, 3)
    pendings = [join_new_member(coord, group=gid) for _ in range(2)]
    coord.poll()
    responses = [p.response for p in pendings]
    follower = next(r for r in responses if r.member_id != r.leader)
    parked = coord.sync_group(sync_req(follower.member_id, follower.generation_id, group=gid),
                              5).pending
    assert not parked.done()
    coord.unload_partition(3)
    assert parked.done() and parked.response.error_code == NOT_COORD


def test_unloading_then_reloading_a_partition_brings_its_committed_offsets_back():
    coord, _ = cluster_coordinator()
    coord.complete_load(2)
    gid = group_in(coord, 2)
    coord.offset_commit(commit_req({("t", 0): 7}, group=gid), 8)
    log = list(coord.log)
    coord.unload_partition(2)
    assert gid not in coord.offsets.offsets
    assert coord.offset_fetch(fetch_req({"t": [0]}, group=gid), 5).response.error_code == NOT_COORD
    coord.begin_load(2)
    for record in log:
        coord.replay(record.key, record.value)
    coord.complete_load(2)
    fetched = coord.offset_fetch(fetch_req({"t": [0]}, group=gid), 5).response
    assert fetched.topics[0].partitions[0].committed_offset == 7


def test_a_single_broker_coordinator_owns_every_partition():
    coord, _ = make(offsets_topic_num_partitions=PARTITIONS)
    assert coord.owned_partitions is None
    for p in range(PARTITIONS):
        gid = group_in(coord, p)
        assert coord.offset_commit(commit_req({("t", 0): 1}, group=gid), 8).response \
            .topics[0].partitions[0].error_code == 0
