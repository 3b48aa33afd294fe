"""The vocabulary of the topic catalog: what a broker records about a topic it holds.

``TopicInfo`` is kept in a leaf module so that the ports (kbroker/server/services.py), the state
that implements them (kbroker/replica/broker_state.py) and replication (kbroker/replica/replica_manager.py)
can all name it without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TopicInfo"]


@dataclass(slots=True)
class TopicInfo:
    name: str
    partitions: int   # the partition count (indexes 0..partitions-1)
    internal: bool    # __consumer_offsets / __transaction_state (wire/topic_names.py)
