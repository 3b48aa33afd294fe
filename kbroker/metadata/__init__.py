"""metadata: what this broker knows of the cluster's topics, partitions and brokers.

Theory of operation: ``metadata_cache.MetadataCache`` is the cluster as UpdateMetadata and
LeaderAndIsr told this broker (Kafka's ZooKeeper-era MetadataCache).
``metadata_view`` is what Metadata and DescribeTopicPartitions read: the ``MetadataView``
of a single node (every topic here, this broker leads all) or of the cache in cluster
mode, with the answers cached per topic until the topic changes.  ``catalog.TopicInfo`` is
the vocabulary of the topic catalog.
"""
