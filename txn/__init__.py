"""The transaction coordinator, pure: Kafka's ``TransactionCoordinator`` /
``TransactionStateManager`` / ``TransactionMetadata`` without sockets or an event loop.

The runtime adapter is kbroker/coordinators/txn_service.py (appends to ``__transaction_state``, sends
the transaction markers, drives the timers).  Time comes from an injected clock; the
coordinator hands its log writes and its marker jobs to injected callables and learns
their outcomes through callbacks, as Kafka's coordinator does with its ReplicaManager
and marker channel manager.
"""

from txn.config import TxnConfig
from txn.coordinator import MarkerJob, TransactionCoordinator
from txn.metadata import TransactionMetadata
from txn.states import TxnState

__all__ = ["MarkerJob", "TransactionCoordinator", "TransactionMetadata", "TxnConfig", "TxnState"]
