"""``__transaction_state`` records byte for byte as Kafka's TransactionLog writes them
(key version 0; value version 0 while transaction.version < 1: int64 producer id, int16
epoch, int32 timeout, int8 state, nullable [topic, [partition]], int64 last update,
int64 start)."""

from __future__ import annotations

from txn.metadata import TxnTransit
from txn.records import decode_key, decode_value, key_bytes, value_bytes
from txn.states import TxnState


def test_the_key_is_version_0_and_the_transactional_id_as_a_java_string():
    assert key_bytes("tx-1") == bytes.fromhex("0000" "0004") + b"tx-1"
    assert decode_key(key_bytes("tx-1")) == "tx-1"


def test_an_empty_state_is_written_with_null_partitions():
    t = TxnTransit(5, -1, -1, 3, -1, 60000, TxnState.EMPTY, frozenset(), -1, 20)
    assert value_bytes(t) == bytes.fromhex(
        "0000" "0000000000000005" "0003" "0000ea60" "00" "ffffffff"
        "0000000000000014" "ffffffffffffffff")


def test_an_ongoing_state_lists_its_partitions_grouped_by_topic():
    t = TxnTransit(7, -1, -1, 0, -1, 1000, TxnState.ONGOING,
                   frozenset({("b", 2), ("a", 1), ("a", 0)}), 10, 20)
    assert value_bytes(t) == bytes.fromhex(
        "0000" "0000000000000007" "0000" "000003e8" "01"
        "00000002" "0001" "61" "00000002" "00000000" "00000001" "0001" "62" "00000001" "00000002"
        "0000000000000014" "000000000000000a")
    back = decode_value(value_bytes(t))
    assert (back.state, back.partitions, back.txn_start_timestamp_ms) == (TxnState.ONGOING, t.partitions, 10)


def test_the_state_bytes_are_kafkas_transaction_state_ids():
    assert [int(s) for s in (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT,
                             TxnState.PREPARE_ABORT, TxnState.COMPLETE_COMMIT,
                             TxnState.COMPLETE_ABORT, TxnState.DEAD,
                             TxnState.PREPARE_EPOCH_FENCE)] == [0, 1, 2, 3, 4, 5, 6, 7]


def test_a_tombstone_decodes_as_no_state():
    assert decode_value(None) is None
