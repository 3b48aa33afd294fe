"""Group coordinator settings, under Kafka's broker property names and defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["GroupConfig"]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """What the classic group coordinator reads from server.properties.

    ``from_properties`` maps Kafka's names (``group.min.session.timeout.ms`` ...) onto fields.
    """

    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000  # offsets.retention.minutes = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    offsets_topic_num_partitions: int = 50
    # Kafka's GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (not a property):
    # a new member's parked JoinGroup is dropped after this long (KIP-345 era fix, KAFKA-9232).
    new_member_join_timeout_ms: int = 300_000
    # the consumer group protocol (KIP-848): Kafka 4's group.consumer.* defaults
    consumer_session_timeout_ms: int = 45_000
    consumer_min_session_timeout_ms: int = 45_000
    consumer_max_session_timeout_ms: int = 60_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_min_heartbeat_interval_ms: int = 5_000
    consumer_max_heartbeat_interval_ms: int = 15_000
    consumer_max_size: int = 2**31 - 1
    # a group's target assignment is recomputed at most once per interval (0: at once);
    # joins and leaves within it are folded into the next computation
    consumer_assignment_interval_ms: int = 1_000
    consumer_assignors: tuple[str, ...] = ("uniform", "range")   # the first is the default
    consumer_migration_policy: str = "bidirectional"

    _NAMES = {
        "group.min.session.timeout.ms": "group_min_session_timeout_ms",
        "group.max.session.timeout.ms": "group_max_session_timeout_ms",
        "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
        "group.max.size": "group_max_size",
        "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
        "offset.metadata.max.bytes": "offset_metadata_max_bytes",
        "offsets.topic.num.partitions": "offsets_topic_num_partitions",
        "group.consumer.session.timeout.ms": "consumer_session_timeout_ms",
        "group.consumer.min.session.timeout.ms": "consumer_min_session_timeout_ms",
        "group.consumer.max.session.timeout.ms": "consumer_max_session_timeout_ms",
        "group.consumer.heartbeat.interval.ms": "consumer_heartbeat_interval_ms",
        "group.consumer.min.heartbeat.interval.ms": "consumer_min_heartbeat_interval_ms",
        "group.consumer.max.heartbeat.interval.ms": "consumer_max_heartbeat_interval_ms",
        "group.consumer.max.size": "consumer_max_size",
        "group.consumer.assignment.interval.ms": "consumer_assignment_interval_ms",
    }

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> GroupConfig:
        """Build from Kafka property names; unknown names are ignored, values may be strings."""
        kwargs: dict[str, object] = {}
        for name, field_name in cls._NAMES.items():
            if name in props:
                kwargs[field_name] = int(props[name])  # type: ignore[arg-type]
        if "offsets.retention.minutes" in props:
            kwargs["offsets_retention_ms"] = int(props["offsets.retention.minutes"]) * 60_000  # type: ignore[arg-type]
        if "group.consumer.assignors" in props:
            value = props["group.consumer.assignors"]
            names = value.split(",") if isinstance(value, str) else list(value)  # type: ignore[call-overload]
            # Kafka also takes the assignor's class name; its simple name maps to the short one
            kwargs["consumer_assignors"] = tuple(_assignor_name(str(n).strip()) for n in names if str(n).strip())
        if "group.consumer.migration.policy" in props:
            kwargs["consumer_migration_policy"] = str(props["group.consumer.migration.policy"]).lower()
        return cls(**kwargs)  # type: ignore[arg-type]


_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def _assignor_name(name: str) -> str:
    return _ASSIGNOR_CLASSES.get(name, name)
