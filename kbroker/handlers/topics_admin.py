"""CreateTopics (key 19) v2-7 and DeleteTopics (key 20) v1-6.

Ports (kbroker/server/services.py): ``topic_admin``.

Both are answered whole by the broker's ``TopicAdmin``, as Kafka's KafkaApis hands them to
its admin manager: a single node checks each topic as Kafka's controller does and creates or
deletes its own logs off the event loop (kbroker/replica/local_topic_admin.py, which states the
checks, messages and waits); in ZooKeeper mode only the controller serves them (NOT_CONTROLLER
elsewhere), writing the topic znodes and waiting for the metadata cache to show the result
(kbroker/zk/zk_topic_admin.py).  CreateTopics v5+ answers carry the partition count,
replication factor and configs, v7+ the topic's id; DeleteTopics v6 deletes by name or id.
The per-topic authorization (Create, Delete; DescribeConfigs for v5+ configs) wraps these
handlers (kbroker/handlers/admin_authz.py).
"""

from __future__ import annotations

from collections.abc import Awaitable

from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)


@REGISTRY.register(19, 2, 7)
def handle_create_topics(ctx: RequestContext, req: CreateTopicsRequest
                         ) -> CreateTopicsResponse | Awaitable[CreateTopicsResponse]:
    return ctx.services.topic_admin.create_topics(req, ctx.api_version)


@REGISTRY.register(20, 1, 6)
def handle_delete_topics(ctx: RequestContext, req: DeleteTopicsRequest
                         ) -> DeleteTopicsResponse | Awaitable[DeleteTopicsResponse]:
    return ctx.services.topic_admin.delete_topics(req, ctx.api_version)
