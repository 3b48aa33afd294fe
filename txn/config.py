"""The coordinator's settings (Kafka's ``TransactionConfig``), in ms unless named otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TxnConfig"]


@dataclass(frozen=True, slots=True)
class TxnConfig:
    transactional_id_expiration_ms: int = 604_800_000     # 7 days
    max_timeout_ms: int = 900_000                           # transaction.max.timeout.ms
    num_partitions: int = 50                                # transaction.state.log.num.partitions
    abort_timed_out_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> TxnConfig:
        return cls(
            transactional_id_expiration_ms=int(props["transactional.id.expiration.ms"]),
            max_timeout_ms=int(props["transaction.max.timeout.ms"]),
            num_partitions=int(props["transaction.state.log.num.partitions"]),
            abort_timed_out_interval_ms=int(
                props["transaction.abort.timed.out.transaction.cleanup.interval.ms"]),
            remove_expired_interval_ms=int(
                props["transaction.remove.expired.transaction.cleanup.interval.ms"]),
        )
