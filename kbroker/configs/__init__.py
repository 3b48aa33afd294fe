"""configs: the broker's configuration, as Kafka names, types and defaults it.

Theory of operation: ``config.BrokerConfig`` parses ``server.properties`` (read by
``properties``, Java's format) against Kafka's KafkaConfig keys and defaults;
``dynamic_broker_configs`` layers KIP-226's dynamic broker configs (cluster default, then
per broker) over the static file; ``topic_configs`` keeps per-topic overrides; small JSON
documents in the first log dir go through ``json_file`` (written off the event loop).
Nothing here knows about requests or the network.
"""
