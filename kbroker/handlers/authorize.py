"""What handlers call to authorize a request: the principal and client host of its
context checked against the broker's authorizer port (``AllowAll`` when no authorizer is
configured, so a handler never branches on one being set)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbroker.security.authorizer import client_host
from wire.acl import CLUSTER, CLUSTER_NAME

if TYPE_CHECKING:
    from kbroker.server.request_context import RequestContext


def authorize(ctx: RequestContext, operation: int, resource_type: int, name: str) -> bool:
    """May this request's principal do ``operation`` on the resource?  (Always, with no
    authorizer configured: ``AllowAll``.)"""
    return ctx.services.authorizer.authorize(ctx.principal, client_host(ctx.peer), operation, resource_type, name)


def authorize_cluster(ctx: RequestContext, operation: int) -> bool:
    return authorize(ctx, operation, CLUSTER, CLUSTER_NAME)


def authorize_any(ctx: RequestContext, operation: int, resource_type: int) -> bool:
    return ctx.services.authorizer.authorize_by_resource_type(ctx.principal, client_host(ctx.peer),
                                                              operation, resource_type)


def authorized_operations(ctx: RequestContext, resource_type: int, name: str) -> int:
    """The authorized_operations bit field of a response (every supported operation when
    no authorizer is configured)."""
    return ctx.services.authorizer.authorized_operations(ctx.principal, client_host(ctx.peer), resource_type, name)
