"""The transaction coordinator's state machine and answers, as Kafka's
TransactionCoordinatorTest states them (TV1)."""

from __future__ import annotations

from tests.unit.txn.helpers import Harness
from txn.metadata import SHORT_MAX
from txn.records import decode_key, decode_value
from txn.states import TxnState
from wire.error_codes import ErrorCode as E

TP = ("t", 0)
TP2 = ("t", 1)


def test_a_new_transactional_id_gets_a_producer_id_with_epoch_0_written_as_empty():
    h = Harness()
    assert h.init("tx") == (E.NONE, 1000, 0)
    records = [r for rs in h.log.values() for r in rs]
    assert len(records) == 1
    assert decode_key(records[0][0]) == "tx"
    value = decode_value(records[0][1])
    assert (value.producer_id, value.producer_epoch, value.state) == (1000, 0, TxnState.EMPTY)


def test_init_producer_id_again_bumps_the_epoch_and_fences_the_old_producer():
    h = Harness()
    h.init("tx")
    assert h.init("tx") == (E.NONE, 1000, 1)
    assert h.add("tx", 1000, 0, TP) is E.PRODUCER_FENCED
    assert h.add("tx", 1000, 1, TP) is E.NONE


def test_a_timeout_above_transaction_max_timeout_ms_is_invalid_transaction_timeout():
    h = Harness(max_timeout_ms=900000)
    assert h.init("tx", timeout_ms=900001)[0] is E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("tx", timeout_ms=0)[0] is E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("tx", timeout_ms=900000)[0] is E.NONE


def test_an_empty_transactional_id_is_invalid_request():
    assert Harness().init("")[0] is E.INVALID_REQUEST


def test_a_committed_transaction_goes_prepare_commit_then_markers_then_complete_commit():
    h = Harness()
    _, pid, epoch = h.init("tx")
    assert h.add("tx", pid, epoch, TP, TP2) is E.NONE
    assert h.state("tx") == "Ongoing"
    assert h.end("tx", pid, epoch, True) is E.NONE
    assert h.state("tx") == "PrepareCommit"
    [job] = h.jobs
    assert (job.committed, job.partitions, job.producer_epoch) == (True, {TP, TP2}, epoch)
    # while the markers are out, the next transaction waits
    assert h.add("tx", pid, epoch, TP) is E.CONCURRENT_TRANSACTIONS
    assert h.end("tx", pid, epoch, True) is E.CONCURRENT_TRANSACTIONS
    assert h.end("tx", pid, epoch, False) is E.INVALID_TXN_STATE
    h.write_all_markers()
    assert h.state("tx") == "CompleteCommit"
    assert h.c.txns["tx"].partitions == set()
    # a retried commit is answered NONE, an abort now is INVALID_TXN_STATE
    assert h.end("tx", pid, epoch, True) is E.NONE
    assert h.end("tx", pid, epoch, False) is E.INVALID_TXN_STATE
    assert h.add("tx", pid, epoch, TP) is E.NONE


def test_end_txn_without_partitions_completes_without_markers():
    h = Harness()
    _, pid, epoch = h.init("tx")
    assert h.end("tx", pid, epoch, True) is E.INVALID_TXN_STATE  # Empty
    h.add("tx", pid, epoch, TP)
    h.c.txns["tx"].partitions.clear()  # (cannot happen through the API; the path exists)
    h.end("tx", pid, epoch, False)
    assert h.jobs == [] and h.state("tx") == "CompleteAbort"


def test_add_partitions_answers_as_kafka_for_a_wrong_producer_id_or_epoch():
    h = Harness()
    _, pid, epoch = h.init("tx")
    assert h.add("tx", pid + 1, epoch, TP) is E.INVALID_PRODUCER_ID_MAPPING
    assert h.add("unknown", pid, epoch, TP) is E.INVALID_PRODUCER_ID_MAPPING
    assert h.add("tx", pid, epoch + 1, TP) is E.PRODUCER_FENCED
    assert h.end("tx", pid, epoch + 1, True) is E.PRODUCER_FENCED


def test_adding_partitions_already_in_the_transaction_writes_nothing():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.add("tx", pid, epoch, TP, TP2)
    before = sum(len(r) for r in h.log.values())
    assert h.add("tx", pid, epoch, TP) is E.NONE
    assert sum(len(r) for r in h.log.values()) == before


def test_init_producer_id_during_an_ongoing_transaction_fences_and_aborts_it():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.add("tx", pid, epoch, TP)
    assert h.init("tx") == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    md = h.c.txns["tx"]
    assert md.state is TxnState.PREPARE_ABORT and md.producer_epoch == epoch + 1
    [job] = h.jobs
    assert (job.committed, job.producer_epoch) == (False, epoch + 1)
    assert h.end("tx", pid, epoch, True) is E.PRODUCER_FENCED  # the zombie
    assert h.init("tx") == (E.CONCURRENT_TRANSACTIONS, -1, -1)  # markers still out
    h.write_all_markers()
    assert h.init("tx") == (E.NONE, pid, epoch + 2)


def test_a_retried_init_producer_id_with_the_previous_epoch_returns_the_same_epoch():
    """KIP-360: the producer did not get the answer to its epoch bump and asks again."""
    h = Harness()
    _, pid, e0 = h.init("tx")
    assert h.init("tx", pid=pid, epoch=e0) == (E.NONE, pid, e0 + 1)
    assert h.init("tx", pid=pid, epoch=e0) == (E.NONE, pid, e0 + 1)  # retry: no second bump
    assert h.init("tx", pid=pid, epoch=e0 + 1) == (E.NONE, pid, e0 + 2)
    assert h.init("tx", pid=pid, epoch=e0 + 7)[0] is E.PRODUCER_FENCED
    assert h.init("tx", pid=pid + 55, epoch=0)[0] is E.PRODUCER_FENCED


def test_an_exhausted_epoch_rotates_to_a_new_producer_id_with_epoch_0():
    h = Harness()
    _, pid, _ = h.init("tx")
    h.c.txns["tx"].producer_epoch = SHORT_MAX - 1
    error, new_pid, epoch = h.init("tx")
    assert (error, epoch) == (E.NONE, 0) and new_pid != pid
    assert h.c.txns["tx"].previous_producer_id == pid


def test_a_transaction_past_its_timeout_is_fenced_and_aborted_by_the_coordinator():
    h = Harness()
    _, pid, epoch = h.init("tx", timeout_ms=1000)
    h.add("tx", pid, epoch, TP)
    h.clock.sleep(1000)
    assert h.c.abort_timed_out_transactions() == []
    h.clock.sleep(1)
    assert h.c.abort_timed_out_transactions() == ["tx"]
    assert h.state("tx") == "PrepareAbort"
    h.write_all_markers()
    assert h.state("tx") == "CompleteAbort"
    assert h.c.txns["tx"].producer_epoch == epoch + 1
    assert h.end("tx", pid, epoch, True) is E.PRODUCER_FENCED
    assert h.add("tx", pid, epoch, TP) is E.PRODUCER_FENCED


def test_an_idle_transactional_id_expires_with_a_tombstone():
    h = Harness(transactional_id_expiration_ms=5000)
    h.init("tx")
    h.clock.sleep(4999)
    assert h.c.remove_expired_transactional_ids() == []
    h.clock.sleep(1)
    assert h.c.remove_expired_transactional_ids() == ["tx"]
    assert "tx" not in h.c.txns
    partition = h.c.partition_for("tx")
    assert h.log[partition][-1][1] is None
    assert "tx" not in h.replayed().txns


def test_a_failed_append_changes_nothing_and_answers_the_mapped_error():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.fail_next_append = E.NOT_ENOUGH_REPLICAS
    assert h.add("tx", pid, epoch, TP) is E.COORDINATOR_NOT_AVAILABLE
    assert h.state("tx") == "Empty" and not h.c.txns["tx"].pending_transition_in_progress
    h.fail_next_append = E.NOT_LEADER_OR_FOLLOWER
    assert h.add("tx", pid, epoch, TP) is E.NOT_COORDINATOR
    assert h.add("tx", pid, epoch, TP) is E.NONE


def test_requests_during_a_pending_append_are_concurrent_transactions():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.defer_appends = True
    assert h.add("tx", pid, epoch, TP) is None  # waiting for its append
    assert h.add("tx", pid, epoch, TP2) is E.CONCURRENT_TRANSACTIONS
    assert h.init("tx") == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    h.release_appends()
    assert h.state("tx") == "Ongoing"


def test_an_unowned_partition_is_not_coordinator_and_a_loading_one_load_in_progress():
    h = Harness(num_partitions=4)
    p = h.c.partition_for("tx")
    h.c.unload_partition(p)
    assert h.init("tx")[0] is E.NOT_COORDINATOR
    h.c.begin_load(p)
    assert h.init("tx")[0] is E.COORDINATOR_LOAD_IN_PROGRESS
    h.c.complete_load(p, 3)
    assert h.init("tx")[0] is E.NONE


def test_an_unload_during_an_append_answers_not_coordinator_and_drops_the_state():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.defer_appends = True
    out = []
    h.c.add_partitions("tx", pid, epoch, {TP}, out.append)
    h.c.unload_partition(h.c.partition_for("tx"))
    h.release_appends()
    assert out == [E.NOT_COORDINATOR] and "tx" not in h.c.txns


def test_a_failover_replays_the_log_and_resends_markers_of_prepared_transactions():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.add("tx", pid, epoch, TP, TP2)
    h.end("tx", pid, epoch, True)
    h.jobs.clear()  # the old coordinator died before its markers went out
    other = h.replayed()
    md = other.txns["tx"]
    assert (md.state, md.producer_id, md.producer_epoch, md.partitions) == \
        (TxnState.PREPARE_COMMIT, pid, epoch, {TP, TP2})
    [job] = h.jobs
    assert (job.committed, job.coordinator_epoch, job.partitions) == (True, 1, {TP, TP2})
    for tp in sorted(job.partitions):
        other.marker_written(job, tp)
    assert other.txns["tx"].state is TxnState.COMPLETE_COMMIT


def test_markers_of_a_job_from_an_older_coordinator_epoch_are_ignored():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.add("tx", pid, epoch, TP)
    h.end("tx", pid, epoch, True)
    [stale] = h.jobs
    p = h.c.partition_for("tx")
    # the partition's leadership moves away and comes back: the reload at coordinator epoch
    # 1 finds the transaction prepared and starts its own job for the same markers
    h.c.unload_partition(p)
    assert not h.c.job_is_current(stale)
    h.c.begin_load(p)
    for key, value in h.log[p]:
        h.c.replay(key, value)
    h.c.complete_load(p, 1)
    assert h.jobs[0] is stale
    [_, current] = h.jobs
    assert (current.coordinator_epoch, current.partitions) == (1, {TP})
    records_before = len(h.log[p])

    # the old job's sender delivers its marker late: same producer, epoch, outcome and
    # partition, only the coordinator epoch is old, so it must neither complete the
    # transaction nor count as the current job's marker
    h.c.marker_written(stale, TP)
    md = h.c.txns["tx"]
    assert (md.state, md.partitions) == (TxnState.PREPARE_COMMIT, {TP})
    assert len(h.log[p]) == records_before  # no CompleteCommit written
    assert current.partitions == {TP} and h.c.job_is_current(current)

    # the current job's marker completes it (so the stale one was ignored, not lost)
    h.c.marker_written(current, TP)
    assert h.c.txns["tx"].state is TxnState.COMPLETE_COMMIT
    assert decode_value(h.log[p][-1][1]).state is TxnState.COMPLETE_COMMIT


def test_verification_says_which_partitions_are_in_the_ongoing_transaction():
    h = Harness()
    _, pid, epoch = h.init("tx")
    h.add("tx", pid, epoch, TP)
    assert h.c.verify_partitions("tx", pid, epoch, [TP, TP2]) == {TP: E.NONE, TP2: E.INVALID_TXN_STATE}
    assert h.c.verify_partitions("tx", pid, epoch - 1 if epoch else 5, [TP]) == {TP: E.PRODUCER_FENCED}
    assert h.c.verify_partitions("tx", pid + 1, epoch, [TP]) == {TP: E.INVALID_PRODUCER_ID_MAPPING}
    h.end("tx", pid, epoch, True)
    assert h.c.verify_partitions("tx", pid, epoch, [TP]) == {TP: E.CONCURRENT_TRANSACTIONS}


def test_list_and_describe_transactions_filter_by_state_producer_and_duration():
    h = Harness()
    _, pid_a, ea = h.init("a")
    _, pid_b, _ = h.init("b")
    h.add("a", pid_a, ea, TP)
    h.clock.sleep(500)
    error, found = h.c.list_transactions(set(), set(), -1)
    assert error is E.NONE and [m.transactional_id for m in found] == ["a", "b"]
    assert [m.transactional_id for m in h.c.list_transactions({TxnState.ONGOING}, set(), -1)[1]] == ["a"]
    assert [m.transactional_id for m in h.c.list_transactions(set(), {pid_b}, -1)[1]] == ["b"]
    # "running longer than": the start timestamp decides (an idle id has none, -1)
    assert [m.transactional_id for m in h.c.list_transactions({TxnState.ONGOING}, set(), 499)[1]] == ["a"]
    assert h.c.list_transactions({TxnState.ONGOING}, set(), 500)[1] == []
    assert [m.transactional_id for m in h.c.list_transactions(set(), set(), 500)[1]] == ["b"]
    assert h.c.describe("nope")[0] is E.TRANSACTIONAL_ID_NOT_FOUND
    error, md = h.c.describe("a")
    assert error is E.NONE and md.partitions == {TP}
