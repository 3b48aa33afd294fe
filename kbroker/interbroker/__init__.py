"""interbroker: connections from this broker to other brokers.

Theory of operation: ``inter_broker_client`` opens a connection to another broker's
inter-broker listener with that listener's security (TLS, SASL login), through the one
protocol client (kbroker/client/); ``broker_channel`` keeps one link per broker (Kafka's
ControllerChannelManager / BrokerToControllerChannelManager): requests queued in order,
reconnects with backoff, and every task ended at shutdown.
"""
