"""ZooKeeper calls made on behalf of a request, retried through a lost connection, as Kafka's
``KafkaZkClient.retryRequestsUntilConnected`` retries them.

kazoo fails a call with ``ConnectionLoss`` when the connection drops while the call is in
flight (the call may or may not have been applied), and with ``SessionExpired`` when the
reconnection finds the session expired (every call queued meanwhile fails) or while the
client is between the expired session and its new one.  Neither says anything about the
request: the connection comes back (kazoo reconnects by itself, on a new session after an
expiry) and the same call then answers.  Left to the handler, either became
UNKNOWN_SERVER_ERROR (issue 28: a CreateTopics on the controller right after a ZooKeeper
restart, answered while its session was being expired).

:func:`until_connected` runs one *step* (an async callable doing one or a few ZooKeeper
calls) and, on one of those errors, runs it again after a short pause, until it answers or
the request's deadline (``by``) passes; then :class:`ZkUnavailableError`.  While kazoo is
reconnecting a call waits in its queue and completes once connected, so the wait for the
connection is that call, bounded by the time left.  Everything stays on the event loop as
awaits (kazoo's threads do the I/O).

Where it is used, and what ZooKeeper still away by the deadline answers:

* CreateTopics, DeleteTopics, CreatePartitions (zk_topic_admin.py, zk_admin.py):
  bound ``timeout_ms``; REQUEST_TIMED_OUT for the topic (retriable).
* Auto-creation for Metadata (zk_topic_admin.py): LEADER_NOT_AVAILABLE; for
  FindCoordinator, groups and transactions (zk_coordinators.py):
  COORDINATOR_NOT_AVAILABLE - both as while the topic has no leader yet; the client asks
  again.
* AlterConfigs / IncrementalAlterConfigs / AlterClientQuotas / AlterUserScramCredentials
  (config_entities.py) and CreateAcls / DeleteAcls (acl_zk_store.py): the write waits, as
  does the re-read of the configs before DescribeConfigs / AlterConfigs
  (topic_config_sync.refresh, broker_config_sync.refresh); if ZooKeeper is still away the
  request fails as before (UNKNOWN_SERVER_ERROR, what Kafka's ZooKeeperClientTimeoutException
  gives too).
* The controller's LeaderAndIsr / StopReplica / UpdateMetadata on a broker
  (handlers/inter_broker.py's registration check, replica_manager.py's topic read): the
  read waits; if ZooKeeper is still away the request fails as before.

A step is run again after a ``ConnectionLoss`` that may have been applied, so it must be
idempotent: reads, a set of the same data, a create whose ``NodeExists`` the step
recognises as its own (kbroker/zk/zk_admin.py compares the topic id it wrote).  The bound is
the request's own timeout where it has one (CreateTopics ``timeout_ms``...), else
``zookeeper.connection.timeout.ms`` (Kafka's ``waitUntilConnected`` bound).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from cluster.coordination import ConnectionLossError, MultiError, SessionExpiredError

__all__ = ["ZkUnavailableError", "deadline", "is_connection_error", "until_connected"]

log = logging.getLogger("kbroker.zk_retry")

T = TypeVar("T")

DEFAULT_CONNECTION_TIMEOUT_MS = 18000   # Kafka's zookeeper.connection.timeout.ms default
FIRST_PAUSE_S = 0.05
MAX_PAUSE_S = 0.5


class ZkUnavailableError(Exception):
    """ZooKeeper did not answer a request's call before the request's deadline."""


def is_connection_error(e: BaseException) -> bool:
    """A connection loss or session expiry (also as the cause of a failed multi)."""
    if isinstance(e, MultiError):
        e = e.cause
    return isinstance(e, ConnectionLossError | SessionExpiredError)


def deadline(zk: Any, timeout_ms: int | None = None) -> float:
    """The event loop's time by which a request's ZooKeeper calls must have answered:
    ``timeout_ms`` from now if positive, else the client's connection timeout."""
    if timeout_ms is None or timeout_ms <= 0:
        timeout_ms = getattr(zk, "connection_timeout_ms", None) or DEFAULT_CONNECTION_TIMEOUT_MS
    return asyncio.get_running_loop().time() + timeout_ms / 1000.0


async def until_connected(step: Callable[[], Awaitable[T]], by: float, what: str = "") -> T:
    """``await step()``, again after each connection loss or session expiry, until it
    answers or the loop's clock reaches ``by`` (:class:`ZkUnavailableError`).  Any other
    error of the step is the caller's."""
    loop = asyncio.get_running_loop()
    pause = FIRST_PAUSE_S
    last: BaseException | None = None
    while True:
        left = by - loop.time()
        if left <= 0:
            raise ZkUnavailableError(f"ZooKeeper did not answer {what or 'a call'} in time"
                                     + (f" (last error: {last!r})" if last else "")) from last
        try:
            return await asyncio.wait_for(step(), left)
        except TimeoutError:
            # the call waited in kazoo's queue for a reconnection that did not come in time
            raise ZkUnavailableError(f"ZooKeeper did not answer {what or 'a call'} in time "
                                     "(still reconnecting)") from last
        except Exception as e:
            if not is_connection_error(e):
                raise
            last = e
            log.info("ZooKeeper call for %s interrupted (%r); retrying once connected",
                     what or "a request", e)
        await asyncio.sleep(min(pause, max(0.0, by - loop.time())))
        pause = min(pause * 2, MAX_PAUSE_S)
