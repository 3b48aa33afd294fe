"""``kbroker <tool>``: Kafka's command-line tools (kafka-topics.sh, kafka-consumer-groups.sh,
kafka-configs.sh, kafka-get-offsets.sh, kafka-dump-log.sh, kafka-console-producer.sh,
kafka-console-consumer.sh, kafka-acls.sh) with their flags and output layout, speaking the Kafka protocol to
any Kafka-compatible cluster through :mod:`kbroker.tools.client` (dump-log reads files).

Exit status: 0 on success; 1 when the request failed (the message, Kafka's wording where Kafka
has one, goes to stderr); 2 for a usage error (click's convention, as Kafka's tools print
their usage and exit non-zero).
"""

from __future__ import annotations

# ``kbroker <name>`` -> the click command ("module:attribute"), imported when it runs
COMMANDS = {
    "topics": "kbroker.tools.topics:topics",
    "consumer-groups": "kbroker.tools.consumer_groups:consumer_groups",
    "configs": "kbroker.tools.configs:configs",
    "get-offsets": "kbroker.tools.get_offsets:get_offsets",
    "dump-log": "kbroker.tools.dump_log:dump_log_command",
    "console-producer": "kbroker.tools.console_producer:console_producer",
    "console-consumer": "kbroker.tools.console_consumer:console_consumer",
    "acls": "kbroker.tools.acls:acls",
}
