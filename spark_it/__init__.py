"""spark_it: PySpark Structured Streaming against kbroker (issue 7).

Spark's own spark-sql-kafka connector, unmodified: ``readStream.format("kafka")`` and
``writeStream.format("kafka")`` pointed at a kbroker.  The connector jars are fetched by
Maven into a git-ignored folder; the jobs and their bounded tests land with issue 7.
"""
