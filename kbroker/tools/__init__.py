"""``kbroker <tool>``: Kafka's command-line tools (kafka-topics.sh, kafka-consumer-groups.sh,
kafka-configs.sh, kafka-get-offsets.sh, kafka-dump-log.sh, kafka-console-producer.sh,
kafka-console-consumer.sh) with their flags and output layout, speaking the Kafka protocol to
any Kafka-compatible cluster through :mod:`kbroker.tools.client` (dump-log reads files).

Exit status: 0 on success; 1 when the request failed (the message, Kafka's wording where Kafka
has one, goes to stderr); 2 for a usage error (click's convention, as Kafka's tools print
their usage and exit non-zero).
"""

from __future__ import annotations

import click


def commands() -> list[click.Command]:
    """Every tool's click command, for ``kbroker``'s command group."""
    from kbroker.tools.consumer_groups import consumer_groups
    from kbroker.tools.get_offsets import get_offsets
    from kbroker.tools.topics import topics
    return [topics, consumer_groups, get_offsets]
