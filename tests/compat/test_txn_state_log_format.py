"""``__transaction_state`` as Kafka reads it: a broker process runs one committed and one
aborted transaction for confluent-kafka, then Kafka's own DumpLogSegments
(``kafka-dump-log.sh --transaction-log-decoder``, 4.3.1 jars) decodes the partition's
segment: every record's key and value are Kafka's TransactionLogKey / TransactionLogValue
v0, and the states follow Kafka's sequence (Empty, Ongoing, PrepareCommit,
CompleteCommit, Ongoing, PrepareAbort, CompleteAbort)."""

from __future__ import annotations

import json
import re

from confluent_kafka import Producer

from tests.support.kafka_tools import kafka_tool
from wire.java_hash import partition_for

TXN_ID = "tx-dump"


def test_kafkas_dump_log_decodes_the_transaction_state_records(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": TXN_ID,
                  "transaction.timeout.ms": 45000})
    p.init_transactions(60)
    for commit in (True, False):
        p.begin_transaction()
        p.produce("dumped", b"v", partition=0)
        p.flush(60)
        if commit:
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    del p
    assert broker.stop() == 0
    segment = broker.data_dir / f"__transaction_state-{partition_for(TXN_ID, 50)}" / "00000000000000000000.log"
    out = kafka_tool("org.apache.kafka.tools.DumpLogSegments", "--transaction-log-decoder",
                     "--print-data-log", "--files", str(segment))
    records = [(json.loads(m.group(1)), json.loads(m.group(2)))
               for m in re.finditer(r"key: (\{.*?\}) payload: (\{.*\})$", out, re.M)]
    assert {json.dumps(k, sort_keys=True) for k, _ in records} == {
        json.dumps({"type": "0", "data": {"transactionalId": TXN_ID}}, sort_keys=True)}
    assert {v["version"] for _, v in records} == {"0"}
    values = [v["data"] for _, v in records]
    assert [v["transactionStatus"] for v in values] == [0, 1, 2, 4, 1, 3, 5]
    assert {(v["producerId"], v["producerEpoch"], v["transactionTimeoutMs"]) for v in values} == {
        (values[0]["producerId"], 0, 45000)}
    assert values[0]["transactionPartitions"] is None and values[0]["transactionStartTimestampMs"] == -1
    assert [v["transactionPartitions"] for v in values[1:]] == [
        [{"topic": "dumped", "partitionIds": [0]}]] * 2 + [[]] + [[{"topic": "dumped", "partitionIds": [0]}]] * 2 + [[]]
