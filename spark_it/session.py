"""A small, quiet local SparkSession with Spark's own Kafka connector on its classpath.

The connector jars are the ones ``make spark-jars`` copies into ``spark_it/jars/`` (see
``spark_it/pom.xml`` for which versions and why); they are handed to Spark with
``spark.jars``, exactly as a user of ``spark-submit --jars`` would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JARS_DIR = Path(__file__).resolve().parent / "jars"
# The four jars spark_it/pom.xml copies; Spark ships everything else they need.
CONNECTOR_ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)


def connector_jars(jars_dir: Path = JARS_DIR) -> list[Path]:
    """The connector's jars, one per artifact; a clear error when ``make spark-jars`` has not run."""
    jars = sorted(jars_dir.glob("*.jar"))
    missing = [a for a in CONNECTOR_ARTIFACTS
               if not any(j.name.startswith(a + "-") and j.name[len(a) + 1].isdigit() for j in jars)]
    if missing:
        raise FileNotFoundError(f"{jars_dir} lacks {', '.join(missing)}: run `make spark-jars`")
    return jars


def local_session(app_name: str = "kbroker-spark-it", *, cores: int = 2,
                  shuffle_partitions: int = 4, extra_conf: dict[str, str] | None = None) -> SparkSession:
    """A ``local[cores]`` SparkSession: UI off, WARN, few shuffle partitions, UTC, loopback only.

    Spark timestamps are shown in the session time zone; UTC keeps printed values equal to
    the broker's epoch milliseconds.  Binding the driver to 127.0.0.1 avoids Spark's
    "hostname resolves to a loopback address" probing and any non-loopback interface.
    """
    from pyspark.sql import SparkSession

    # Python workers (UDFs, foreachBatch helpers) must be this interpreter, not whatever
    # `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = {
        "spark.jars": ",".join(str(j) for j in connector_jars()),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(cores),
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        **(extra_conf or {}),
    }
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
