"""A follower whose log diverged from its leader's: the leader answers DivergingEpoch
(kbroker/handlers/fetch.py) and the follower truncates to where the logs agree
(kbroker/replica/replica_fetcher.py), as Kafka's validateFetchOffsetAndMaybeGetDivergingEpoch and
getOffsetTruncationState do."""

from __future__ import annotations

from types import SimpleNamespace

from kbroker.handlers.fetch import _read_replica_partition
from kbroker.replica.replica_fetcher import ReplicaFetcher, fetcher_id, java_string_hash
from tests.unit.kbroker.replica.test_partition_replication import replicated
from tests.unit.log.helpers import batch
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest


def log_with_epochs(tmp_path, name: str, epochs: list[tuple[int, int]]):
    """A replicated partition whose log holds ``n`` records at each (epoch, n), appended as a
    follower would (batches stamped with their epoch)."""
    p = replicated(tmp_path / name, "t-0")
    offset = 0
    for epoch, n in epochs:
        b = batch(n, base_offset=offset, partition_leader_epoch=epoch)
        p.append_records_as_follower(b)
        offset += n
    return p


def fetch(p, offset: int, last_fetched_epoch: int, replica: int = 2):
    fp = FetchRequest.FetchPartition(partition=0, current_leader_epoch=p.leader_epoch, fetch_offset=offset,
                                     last_fetched_epoch=last_fetched_epoch, log_start_offset=0,
                                     partition_max_bytes=1 << 20)
    return _read_replica_partition(p, fp, 12, 1 << 20, True, replica)


def test_the_leader_names_the_divergence_when_the_follower_wrote_an_epoch_it_never_had(tmp_path):
    leader = log_with_epochs(tmp_path, "l", [(0, 5), (2, 5)])
    leader.make_leader(3, 0, [1, 2], [1, 2], local_id=1, replica_lag_time_max_ms=30_000)
    pd = fetch(leader, 7, 1)   # the follower's log: epoch 0 to 5, then epoch 1 to 7
    assert pd.error_code == ErrorCode.NONE and pd.records == b""
    assert (pd.diverging_epoch.epoch, pd.diverging_epoch.end_offset) == (0, 5)
    assert leader.replication.followers[2].log_end_offset == -1   # no state update on a divergence


def test_a_follower_ahead_within_the_leaders_epoch_is_told_where_that_epoch_ends(tmp_path):
    leader = log_with_epochs(tmp_path, "l", [(0, 5), (2, 5)])
    leader.make_leader(3, 0, [1, 2], [1, 2], local_id=1, replica_lag_time_max_ms=30_000)
    pd = fetch(leader, 12, 2)
    assert (pd.diverging_epoch.epoch, pd.diverging_epoch.end_offset) == (2, 10)


def test_a_follower_in_step_gets_records_up_to_the_leo_and_moves_the_high_watermark(tmp_path):
    leader = log_with_epochs(tmp_path, "l", [(0, 5)])
    leader.make_leader(1, 0, [1, 2], [1, 2], local_id=1, replica_lag_time_max_ms=30_000)
    assert leader.high_watermark == 0
    pd = fetch(leader, 3, 0)
    assert pd.diverging_epoch.epoch == -1 and pd.records      # offsets 3..4 (whole batch from 0)
    pd = fetch(leader, 5, 0)
    assert pd.high_watermark == 5 and leader.high_watermark == 5
    assert fetch(leader, 5, 0, replica=9).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    fenced = FetchRequest.FetchPartition(partition=0, current_leader_epoch=0, fetch_offset=5, last_fetched_epoch=0,
                                         log_start_offset=0, partition_max_bytes=1 << 20)
    assert _read_replica_partition(leader, fenced, 12, 1 << 20, True, 2).error_code == ErrorCode.FENCED_LEADER_EPOCH


def truncate(follower, epoch: int, end: int) -> int:
    me = SimpleNamespace(leader_id=1)
    ReplicaFetcher._truncate_to_diverging(me, ("t", 0), follower, epoch, end)
    return follower.log_end_offset


def test_the_follower_truncates_to_the_end_of_the_last_epoch_both_logs_share(tmp_path):
    follower = log_with_epochs(tmp_path, "f", [(0, 5), (1, 2)])
    assert truncate(follower, 0, 5) == 5
    assert follower._log.leader_epoch_cache.entries() == [(0, 0)]


def test_a_follower_that_never_had_the_leaders_epoch_goes_back_to_its_own_earlier_epoch(tmp_path):
    follower = log_with_epochs(tmp_path, "f", [(0, 5), (3, 4)])
    # the leader says epoch 2 ended at 8; we have no epoch 2: back to the end of epoch 0 (5)
    assert truncate(follower, 2, 8) == 5


def test_fetchers_are_chosen_by_kafkas_hash_of_topic_and_partition():
    assert java_string_hash("topic") == 110546223       # "topic".hashCode() in Java
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(1 << 31)   # Java's Integer.MIN_VALUE case
    assert {fetcher_id("t", p, 1) for p in range(10)} == {0}
    # abs(31 * hash + partition) % n: consecutive partitions take consecutive fetchers
    ids = [fetcher_id("topic", p, 3) for p in range(6)]
    assert sorted(set(ids)) == [0, 1, 2] and ids[:3] == ids[3:]


def test_an_epoch_this_broker_led_without_appending_is_dropped_so_the_next_fetch_names_the_shared_one(tmp_path):
    follower = log_with_epochs(tmp_path, "f", [(0, 5)])
    follower.make_leader(3, 0, [2], [1, 2], local_id=2, replica_lag_time_max_ms=30_000)   # led, wrote nothing
    follower.make_follower(4)
    assert follower.latest_epoch == 3
    leader = log_with_epochs(tmp_path, "l", [(0, 5)])
    leader.make_leader(4, 0, [1, 2], [1, 2], local_id=1, replica_lag_time_max_ms=30_000)
    pd = fetch(leader, 5, 3)
    assert (pd.diverging_epoch.epoch, pd.diverging_epoch.end_offset) == (0, 5)
    assert truncate(follower, 0, 5) == 5
    assert follower.latest_epoch == 0            # Kafka's truncateTo trims the cache at the LEO too
    assert fetch(leader, 5, 0).diverging_epoch.epoch == -1
