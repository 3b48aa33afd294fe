"""A Fetch naming many partitions (kbroker/handlers/fetch.py ``_read_all``): the per-partition
path a wide fetch takes for each one, most of them with nothing new.

Partitions are opened directly (tests/unit/log/helpers.open_log) behind a minimal broker state,
as tests/unit/kbroker/replica/test_fetch_from_follower.py does; the answers are also encoded and decoded
to check that what goes on the wire is what a fresh PartitionData would give.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kbroker.handlers.fetch import _read_all
from kbroker.replica.fetch_waiters import FetchWaiters
from kbroker.replica.partition import Partition
from log.log import Log
from tests.support.fakes import context as fake_context
from tests.support.fakes import services
from tests.unit.log.helpers import batch, open_log
from wire.codec import decode, encode
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest, FetchResponse

PARTITIONS = 6


def wide(tmp_path, with_data: set[int]) -> dict[int, Partition]:
    parts = {}
    for i in range(PARTITIONS):
        lg = open_log(tmp_path, name=f"w-{i}", high_watermark_follows_log_end=True)
        p = Partition("w", i, lg, FetchWaiters())
        if i in with_data:
            p.append_records_as_leader(memoryview(batch(3)))
        parts[i] = p
    return parts


def context(parts: dict[int, Partition], version: int = 12):
    catalog = SimpleNamespace(partition=lambda t, i: parts.get(i) if t == "w" else None)
    return fake_context(1, version, services(catalog=catalog))


def fetch_all(offsets: dict[int, int], isolation_level: int = 1) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                        isolation_level=isolation_level, session_id=0, session_epoch=-1,
                        topics=[FetchRequest.FetchTopic(topic="w", partitions=[
                            FetchRequest.FetchPartition(partition=i, current_leader_epoch=-1, fetch_offset=o,
                                                        last_fetched_epoch=-1, log_start_offset=-1,
                                                        partition_max_bytes=1 << 16)
                            for i, o in offsets.items()])],
                        forgotten_topics_data=[], rack_id="")


def test_partitions_with_nothing_past_the_fetch_offset_are_answered_without_reading_their_logs(tmp_path,
                                                                                                 monkeypatch):
    parts = wide(tmp_path, with_data={2})
    read_from = []
    real_read = Log.read

    def counting(self, *a, **kw):
        read_from.append(self.topic_partition)
        return real_read(self, *a, **kw)
    monkeypatch.setattr(Log, "read", counting)
    resp, total, errors = _read_all(context(parts), fetch_all({i: 0 for i in range(PARTITIONS)}))
    answers = {pd.partition_index: pd for pd in resp.responses[0].partitions}
    assert read_from == [("w", 2)]
    assert total == len(batch(3)) and not errors
    assert [(i, answers[i].error_code, answers[i].high_watermark, answers[i].records) for i in (0, 1, 3, 4, 5)] == \
        [(i, ErrorCode.NONE, 0, b"") for i in (0, 1, 3, 4, 5)]
    # at the end of the data, partition 2 is answered without a read too
    read_from.clear()
    resp, total, _ = _read_all(context(parts), fetch_all({2: 3}))
    assert read_from == [] and total == 0 and resp.responses[0].partitions[0].high_watermark == 3


@pytest.mark.parametrize("isolation_level", [0, 1])
def test_every_answer_of_a_wide_fetch_encodes_as_a_freshly_built_partition_answer(tmp_path, isolation_level):
    parts = wide(tmp_path, with_data={0, 3})
    resp, _, _ = _read_all(context(parts), fetch_all({i: 0 for i in range(PARTITIONS)}, isolation_level))
    expected = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        FetchResponse.FetchableTopicResponse(topic="w", partitions=[
            FetchResponse.PartitionData(
                partition_index=i, error_code=ErrorCode.NONE, high_watermark=3 if i in (0, 3) else 0,
                last_stable_offset=3 if i in (0, 3) else 0, log_start_offset=0,
                aborted_transactions=[] if isolation_level == 1 else None, preferred_read_replica=-1,
                records=parts[i].read(0, 1 << 16, True).records if i in (0, 3) else b"")   # as stored
            for i in range(PARTITIONS)])])
    for version in (4, 11, 12):
        wire_bytes = encode(resp, version)
        assert wire_bytes == encode(expected, version)
        decoded = decode(FetchResponse, wire_bytes, version)
        assert [pd.partition_index for pd in decoded.responses[0].partitions] == list(range(PARTITIONS))


def test_read_committed_answers_do_not_share_their_aborted_transactions_lists(tmp_path):
    parts = wide(tmp_path, with_data={1})
    resp, _, _ = _read_all(context(parts), fetch_all({i: 0 for i in range(PARTITIONS)}))
    lists = [pd.aborted_transactions for pd in resp.responses[0].partitions]
    assert all(lst == [] for lst in lists)
    assert len({id(lst) for lst in lists}) == PARTITIONS
