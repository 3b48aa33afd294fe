"""Fixtures for the Spark tests: one local SparkSession for the whole run (starting a JVM
costs ~10 s), and a fresh real broker process per test.

Every Spark test is bounded twice: each streaming query is awaited with a timeout and
asserted to have terminated, and pytest-timeout stops the test as a whole.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from spark_it.session import local_session
from tests.support.broker_process import BrokerProcess


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    # Spark writes spark-warehouse/ and metastore files into the working directory unless
    # told otherwise: keep them in a temporary directory.
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = local_session("kbroker-tests", extra_conf={
        "spark.sql.warehouse.dir": str(warehouse),
        # Each test's broker is gone after it; Spark keeps its sink producers and source
        # consumers cached for 10 minutes (5 for consumers), reconnecting to the dead port
        # and logging it.  Evict idle ones quickly instead.
        "spark.kafka.producer.cache.timeout": "5s",
        "spark.kafka.producer.cache.evictorThreadRunInterval": "2s",
        "spark.kafka.consumer.cache.timeout": "5s",
        "spark.kafka.consumer.cache.evictorThreadRunInterval": "2s",
    })
    yield session
    session.stop()
    shutil.rmtree(warehouse, ignore_errors=True)


@pytest.fixture
def broker(tmp_path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data", overrides={"num.partitions": "4"}).start()
    yield b
    b.stop()
    assert "Traceback" not in b.log_text(), b.log_text()
