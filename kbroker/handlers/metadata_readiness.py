"""Requests that describe the cluster, on a broker that has not yet heard from the controller.

A broker (re)started in cluster mode learns the cluster only from the controller's first
UpdateMetadata (kbroker/metadata/metadata_cache.py), which the controller sends once it sees the
broker's registration in ZooKeeper.  Until then the cache holds no broker and no topic.

ZooKeeper-mode Kafka answered Metadata from that empty cache: no brokers, every topic
unknown (or, asked to auto-create it, an error).  librdkafka (2.10 and later) takes the
brokers of a Metadata answer as the whole cluster and decommissions every broker not in
it, so one such answer from a restarting broker leaves the client knowing no broker at all;
with ``metadata.recovery.strategy=none`` it never finds one again, and a
``send_offsets_to_transaction`` waiting on a decommissioned group coordinator waits
forever (confluentinc/librdkafka#5511, #5456).  KRaft-mode Kafka serves no request before
its first metadata is published (``BrokerServer`` enables request processing after it).

A broker restarted at once after a kill -9 also binds its listener seconds before it can
register (its previous ZooKeeper session, whose ephemeral /brokers/ids znode blocks the new
one, has to expire first): Kafka processes no request before it has registered.

kbroker holds the requests whose answer is the cluster's description (Metadata,
DescribeCluster, DescribeTopicPartitions, and FindCoordinator, whose answer is a leader in
that description and which would otherwise try to create the internal topics it cannot
see) until the first UpdateMetadata has been applied,
at most ``HOLD_S`` (under the Java clients' 30 s ``request.timeout.ms``), then answers from
whatever it has.  Other requests are not held: the controller's own requests must get
through (they are what ends the wait), and a Produce or Fetch answered NOT_LEADER sends the
client to Metadata, which waits here.  Single-node mode knows its metadata from the start.

Ports (kbroker/server/services.py): ``metadata`` (``known``, ``wait_known``: the single node's is
always known, kbroker/metadata/metadata_view.py).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from kbroker.server.request_context import RequestContext

__all__ = ["HOLD_S", "held_until_metadata_known"]

HOLD_S = 25.0


def held_until_metadata_known(handler: Callable[[RequestContext, Any], Any]) -> Callable[[RequestContext, Any], Any]:
    """Wrap a handler so that it runs only once the broker's metadata is known (or after
    ``HOLD_S``); answered at once otherwise, exactly as the handler answers."""

    @functools.wraps(handler)
    def held(ctx: RequestContext, req: Any) -> Any:
        metadata = ctx.services.metadata
        if metadata.known():
            return handler(ctx, req)

        async def once_known() -> Any:
            await metadata.wait_known(HOLD_S)
            answer = handler(ctx, req)
            return await answer if inspect.isawaitable(answer) else answer
        return once_known()
    return held
