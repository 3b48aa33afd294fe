"""The controller's settings, with Kafka's names and defaults."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from wire.uuids import random_uuid

__all__ = ["ControllerConfig"]


def _never(topic: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    broker_id: int  # this broker: the controller id stamped on every request
    # The listener whose endpoint LeaderAndIsr's live_leaders carry (inter.broker.listener.name).
    inter_broker_listener: str = "PLAINTEXT"
    delete_topic_enable: bool = True  # delete.topic.enable
    leader_imbalance_per_broker_percentage: int = 10  # leader.imbalance.per.broker.percentage
    # unclean.leader.election.enable of a topic (its config, else the broker default).
    unclean_leader_election_enable: Callable[[str], bool] = _never
    # Kafka's Uuid.randomUuid for topics that have no id yet (injectable for tests).
    new_topic_id: Callable[[], uuid.UUID] = field(default=random_uuid)
