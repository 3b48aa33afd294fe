"""Running Kafka's Java AdminClient programs (tests/support/java/*.java, single-file source
launch) with the kafka-clients jar `make test` already fetched for Spark (spark_it/jars)
and slf4j-api from pyspark's jars (kafka-clients' one required runtime dependency), as
tests/cluster/test_cluster_processes.py does for DescribeCluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.broker_process import ROOT

JAVA_DIR = Path(__file__).resolve().parent / "java"


def java_client_classpath() -> str:
    """Kafka's Java client as `make test` already has it: kafka-clients from spark_it/jars
    (`make spark-jars`, the version Spark's connector names) and slf4j-api from pyspark's own
    jars (kafka-clients' one required runtime dependency)."""
    import pyspark

    clients = sorted((ROOT / "spark_it" / "jars").glob("kafka-clients-*.jar"))
    slf4j = sorted((Path(pyspark.__file__).parent / "jars").glob("slf4j-api-*.jar"))
    assert clients and slf4j, "run `make spark-jars` (make test does) for kafka-clients"
    return ":".join(str(p) for p in (clients[-1], slf4j[-1]))


def describe_topics(bootstrap: str, topics: list[str], partition_limit: int = 2000) -> list[str]:
    """The lines tests/support/java/DescribeTopics.java prints (see its header)."""
    done = subprocess.run(["java", "-cp", java_client_classpath(), str(JAVA_DIR / "DescribeTopics.java"),
                           bootstrap, str(partition_limit), *topics],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.startswith(("topic ", "partition ", "error "))]
