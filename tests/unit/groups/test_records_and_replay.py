"""Records round-trip through Kafka's schemas; replaying them rebuilds the same state;
Java's String.hashCode picks the __consumer_offsets partition."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from groups import GroupCoordinator, GroupState, java_string_hash, partition_for
from groups.records import decode_key, decode_value
from tests.unit.groups.helpers import (
    GROUP,
    commit_req,
    hb_req,
    join,
    leave_req,
    make,
    stable_group,
    sync_req,
)
from wire.messages import GroupMetadataKey, OffsetCommitKey


def test_java_string_hash_matches_known_values():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("ab") == 97 * 31 + 98
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("€") == 0x20AC
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00  # two UTF-16 code units
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE


def test_partition_for_is_abs_hash_mod_n_with_min_value_mapped_to_zero():
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0
    h = java_string_hash("groupé-1")
    assert partition_for("groupé-1", 50) == abs(h) % 50


def test_offset_commit_records_use_key_v1_and_value_v3_or_v1_with_an_expire_timestamp():
    coord, clock = make()
    rec = coord.offset_commit(commit_req({("t", 2): 5}, metadata="m"), 8).records[0]
    assert rec.key[:2] == b"\x00\x01" and rec.value[:2] == b"\x00\x03"
    # Kafka's bytes: type 1, then group, topic (int16 length + UTF-8) and the partition
    g = GROUP.encode()
    assert rec.key == b"\x00\x01" + len(g).to_bytes(2, "big") + g + b"\x00\x01t" + b"\x00\x00\x00\x02"
    key = decode_key(rec.key)
    assert isinstance(key, OffsetCommitKey) and (key.group, key.topic, key.partition) == (GROUP, "t", 2)
    value = decode_value(key, rec.value)
    assert (value.offset, value.metadata, value.commit_timestamp) == (5, "m", clock.milliseconds())
    rec = coord.offset_commit(commit_req({("t", 2): 6}, retention_ms=1000), 2).records[0]
    assert rec.value[:2] == b"\x00\x01"
    assert decode_value(decode_key(rec.key), rec.value).expire_timestamp == clock.milliseconds() + 1000


def test_group_metadata_records_use_key_v2_and_value_v3_with_members_and_assignments():
    coord, clock = make()
    ids, gen, leader = stable_group(coord, clock, 2)
    last = coord.sync_group(sync_req(leader, gen), 5)  # Stable: no new record
    assert last.records == []
    coord.leave_group(leave_req(*[(m, None) for m in ids]), 4)
    rec = coord.leave_group(leave_req(), 4)  # nothing left to do
    assert rec.records == []
    key = decode_key(b"\x00\x02" + b"\x00\x03grp")
    assert isinstance(key, GroupMetadataKey)
    assert decode_key(b"\x00\x05\x00\x00") is None  # newer record types are skipped


def _snapshot(coord: GroupCoordinator):
    groups = {}
    for gid, g in coord.groups.items():
        groups[gid] = (
            g.state if g.state in (GroupState.STABLE, GroupState.EMPTY) else "rebalancing",
            g.generation_id, g.protocol_type, g.protocol_name, g.leader_id,
            sorted((m.member_id, m.group_instance_id, m.assignment, m.session_timeout_ms)
                   for m in g.members.values()),
        )
    return groups, {gid: dict(o) for gid, o in coord.offsets.offsets.items()}


def _replayed(records, clock):
    fresh = GroupCoordinator(coord_config(), clock)
    fresh.begin_load()
    for rec in records:
        fresh.replay(rec.key, rec.value)
    fresh.complete_load()
    return fresh


def coord_config():
    from groups import GroupConfig

    return GroupConfig(group_initial_rebalance_delay_ms=0)


def _check_replay(coord, clock, log):
    live_groups, live_offsets = _snapshot(coord)
    rebuilt = _replayed(log, clock)
    replay_groups, replay_offsets = _snapshot(rebuilt)
    assert replay_offsets == live_offsets
    for gid, live in live_groups.items():
        if live[0] == "rebalancing":
            assert gid in replay_groups  # its last persisted generation
            continue
        assert replay_groups[gid] == live, gid
    assert set(replay_groups) == set(live_groups)


def test_replaying_the_records_of_a_scenario_rebuilds_the_same_groups_and_offsets():
    coord, clock = make()
    log = []

    def run(result):
        log.extend(result.records)
        return result

    for _ in range(2):
        run(join(coord, version=3))
    log.extend(coord.poll().records)
    gen = coord.groups[GROUP].generation_id
    leader = coord.groups[GROUP].leader_id
    members = list(coord.groups[GROUP].members)
    run(coord.sync_group(sync_req(leader, gen, {m: m.encode() for m in members}), 5))
    run(coord.offset_commit(commit_req({("t", 0): 3}, generation=gen, member_id=members[0]), 8))
    run(coord.offset_commit(commit_req({("x", 1): 4}, group="simple"), 8))
    _check_replay(coord, clock, log)
    run(coord.leave_group(leave_req((members[1], None)), 4))
    _check_replay(coord, clock, log)


OPS = st.lists(st.tuples(st.sampled_from(
    ["join", "rejoin", "sync", "heartbeat", "leave", "commit", "simple", "tick", "delete"]),
    st.integers(0, 3)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(OPS, st.integers(0, 2**16))
def test_replay_of_random_operation_sequences_rebuilds_identical_persisted_state(ops, seed):
    rng = random.Random(seed)
    coord, clock = make()
    log = []
    groups = ["g0", "g1"]
    for op, n in ops:
        gid = groups[n % 2]
        group = coord.groups.get(gid)
        members = list(group.members) if group else []
        mid = members[n % len(members)] if members else ""
        gen = group.generation_id if group else -1
        if op == "join":
            res = coord.join_group(_jr(gid, ""), 3, client_id="c", client_host="/h")
        elif op == "rejoin" and mid:
            res = coord.join_group(_jr(gid, mid), 3, client_id="c", client_host="/h")
        elif op == "sync" and mid:
            assign = {m: rng.randbytes(3) for m in members}
            res = coord.sync_group(sync_req(mid, gen, assign, group=gid), 5)
        elif op == "heartbeat" and mid:
            res = coord.heartbeat(hb_req(mid, gen, group=gid), 4)
        elif op == "leave" and mid:
            res = coord.leave_group(leave_req((mid, None), group=gid), 4)
        elif op == "commit" and mid:
            res = coord.offset_commit(commit_req({("t", n): rng.randrange(100)}, group=gid,
                                                 generation=gen, member_id=mid), 8)
        elif op == "simple":
            res = coord.offset_commit(commit_req({("s", n): rng.randrange(100)}, group=f"s{n}",
                                                 metadata=f"m{n}"), 8)
        elif op == "delete":
            from wire.messages import DeleteGroupsRequest

            res = coord.delete_groups(DeleteGroupsRequest(groups_names=[gid, f"s{n}"]), 2)
        else:
            clock.advance(rng.choice([1000, 6000, 31_000]))
            res = coord.poll()
        log.extend(res.records)
    _check_replay(coord, clock, log)


def _jr(gid, mid):
    from tests.unit.groups.helpers import join_req

    return join_req(mid, group=gid)


def test_the_leaders_sync_writes_a_group_metadata_record_that_decodes_with_kafkas_schema():
    coord, clock = make()
    p = [join(coord, version=3).pending for _ in range(2)]
    coord.poll()
    leader, gen = p[0].response.leader, p[0].response.generation_id
    ids = [x.response.member_id for x in p]
    rec = coord.sync_group(sync_req(leader, gen, {ids[0]: b"A", ids[1]: b"B"}), 5).records[0]
    assert rec.key[:2] == b"\x00\x02" and rec.value[:2] == b"\x00\x03"
    key = decode_key(rec.key)
    value = decode_value(key, rec.value)
    assert (key.group, value.protocol_type, value.protocol, value.generation, value.leader) == (
        GROUP, "consumer", "range", gen, leader)
    assert {m.member_id: m.assignment for m in value.members} == {ids[0]: b"A", ids[1]: b"B"}
    assert all(m.client_host == "/127.0.0.1" for m in value.members)
