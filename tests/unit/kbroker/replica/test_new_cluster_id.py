"""A new cluster id is Kafka's ``Uuid.randomUuid().toString()``: 22 characters of URL-safe
base64 that never start with '-' (``kafka-storage format -t -x...`` reads that as an option,
which failed one Apache Kafka start in 64 in the benchmarks and the tools tests)."""

from __future__ import annotations

import re

from bench.harness.kafka_dist import _cluster_id
from kbroker.replica.broker_state import new_cluster_id


def test_new_cluster_ids_are_unpadded_url_safe_base64_and_never_start_with_a_dash():
    for make in (new_cluster_id, _cluster_id):
        ids = {make() for _ in range(5000)}   # a leading '-' is 1 in 64 per id without the retry
        assert len(ids) == 5000
        assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", i) for i in ids)
