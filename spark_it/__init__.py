"""spark_it: PySpark Structured Streaming against kbroker (issue 7).

Spark's own spark-sql-kafka connector, unmodified: ``readStream.format("kafka")`` and
``writeStream.format("kafka")`` pointed at a kbroker.  The connector jars are fetched by
Maven (``spark_it/pom.xml``, ``make spark-jars``) into the git-ignored ``spark_it/jars/``.

* ``session``: a small local SparkSession with those jars on ``spark.jars``;
* ``clicks``: the example pipeline (click events -> per-page counts per minute);
* ``demo``: ``make spark-demo``, one run of that pipeline against ``make run``'s broker.

The bounded tests are in ``tests/spark/``.
"""
