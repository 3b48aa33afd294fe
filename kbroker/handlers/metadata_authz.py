"""What Metadata shows a principal when an authorizer is configured (KafkaApis
``handleTopicMetadataRequest``):

* all topics asked for: only the topics it may Describe, the others silently left out;
* topics asked for by name: those it may not Describe answer TOPIC_AUTHORIZATION_FAILED
  whether they exist or not (their existence is not disclosed), after the others (Kafka's
  order: answered topics, refused Create, refused Describe);
* a topic that would be auto-created needs Create on the cluster or on the topic, else
  TOPIC_AUTHORIZATION_FAILED and nothing is created;
* ``cluster_authorized_operations`` (v8-10, when asked): 0 without Describe on the
  cluster, else the allowed cluster operations; ``topic_authorized_operations`` (v8+, when
  asked): the topic's allowed operations.

Ports (kbroker/server/services.py): ``authorizer`` (``configured`` False: the null object
``AllowAll``, nothing is filtered).
"""

from __future__ import annotations

from typing import Any

from kbroker.handlers.authorize import authorize, authorize_cluster, authorized_operations
from kbroker.security.authorizer import client_host
from kbroker.server.request_context import RequestContext
from wire.acl import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, TOPIC
from wire.error_codes import ErrorCode


def topic_access(ctx: RequestContext, names: list[Any], creatable: list[str],
                 all_topics: bool) -> tuple[list[Any], dict[str, int]]:
    """(the names to answer, name -> TOPIC_AUTHORIZATION_FAILED for those refused)."""
    a = ctx.services.authorizer
    host = client_host(ctx.peer)
    if all_topics:
        return [n for n in names
                if a.authorize(ctx.principal, host, DESCRIBE, TOPIC, n, log_if_denied=False)], {}
    no_describe = [n for n in names if n is not None and not authorize(ctx, DESCRIBE, TOPIC, n)]
    creatable = [n for n in creatable if n not in no_describe]
    no_create = []
    if creatable and not a.authorize(ctx.principal, host, CREATE, CLUSTER, CLUSTER_NAME, log_if_denied=False):
        no_create = [n for n in creatable if not authorize(ctx, CREATE, TOPIC, n)]
    refused = no_create + no_describe
    # Kafka's order: the topics answered, then those refused Create, then those refused Describe
    ordered = [n for n in names if n not in refused] + refused
    return ordered, {n: ErrorCode.TOPIC_AUTHORIZATION_FAILED for n in refused}


def cluster_operations(ctx: RequestContext, unrestricted: int) -> int:
    if not ctx.services.authorizer.configured:
        return unrestricted
    return authorized_operations(ctx, CLUSTER, CLUSTER_NAME) if authorize_cluster(ctx, DESCRIBE) else 0


def topic_operations(ctx: RequestContext, name: str, unrestricted: int) -> int:
    """``unrestricted``: the value without an authorizer (INT_MIN when not asked for)."""
    if unrestricted == -(1 << 31) or not ctx.services.authorizer.configured:
        return unrestricted
    return authorized_operations(ctx, TOPIC, name)
