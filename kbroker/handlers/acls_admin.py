"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31), v0-3, as Kafka's AclApis.

* No authorizer configured: SECURITY_DISABLED ("No Authorizer is configured."), top level
  for DescribeAcls, per creation / per filter for the others.
* DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER on the cluster:
  else CLUSTER_AUTHORIZATION_FAILED (everywhere the response has an error code).
* v0 has no pattern type: LITERAL.  DescribeAcls answers the matching bindings grouped by
  resource pattern; a filter with UNKNOWN elements is INVALID_REQUEST.  CreateAcls refuses
  invalid bindings one by one (wire/acl.py ``binding_invalid_reason``) and stores the
  rest; DeleteAcls answers, per filter, every binding it removed.  Both answer once the
  change is durable (the log-dir file written, or ZooKeeper).

Ports (kbroker/server/services.py): ``authorizer`` (whether one is configured, and the cluster
checks), ``acls`` (the bindings).
"""

from __future__ import annotations

from collections.abc import Awaitable

from kbroker.configs.json_file import answer_when_stored
from kbroker.handlers.authorize import authorize_cluster
from kbroker.security.authorizer import NO_AUTHORIZER
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.acl import (
    ALTER,
    DESCRIBE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
)
from wire.error_codes import ErrorCode
from wire.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)

CLUSTER_DENIED = "Cluster authorization failed."   # Errors.CLUSTER_AUTHORIZATION_FAILED.message()
LITERAL = 3


def _filter(f: DescribeAclsRequest | DeleteAclsRequest.DeleteAclsFilter, version: int) -> AclBindingFilter:
    return AclBindingFilter(f.resource_type_filter, f.resource_name_filter,
                            f.pattern_type_filter if version >= 1 else LITERAL,
                            f.principal_filter, f.host_filter, f.operation, f.permission_type)


@REGISTRY.register(29, 0, 3)
def handle_describe_acls(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    if not ctx.services.authorizer.configured:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
    if not authorize_cluster(ctx, DESCRIBE):
        return DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=CLUSTER_DENIED)
    flt = _filter(req, ctx.api_version)
    why = flt.invalid_reason()
    if why is not None:
        return DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=why)
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in ctx.services.acls.acls(flt):
        grouped.setdefault(b.pattern, []).append(b.entry)
    resources = [
        DescribeAclsResponse.DescribeAclsResource(
            resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
            acls=[DescribeAclsResponse.AclDescription(principal=e.principal, host=e.host,
                                                      operation=e.operation, permission_type=e.permission)
                  for e in sorted(entries, key=lambda e: (e.principal, e.host, e.operation, e.permission))])
        for p, entries in sorted(grouped.items(), key=lambda kv: (kv[0].resource_type, kv[0].pattern_type,
                                                                  kv[0].name))]
    return DescribeAclsResponse(error_code=0, error_message=None, resources=resources)


@REGISTRY.register(30, 0, 3)
def handle_create_acls(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse | Awaitable[CreateAclsResponse]:
    R = CreateAclsResponse.AclCreationResult
    if not ctx.services.authorizer.configured:
        return CreateAclsResponse(results=[R(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
                                           for _ in req.creations])
    if not authorize_cluster(ctx, ALTER):
        return CreateAclsResponse(results=[R(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                     error_message=CLUSTER_DENIED)
                                           for _ in req.creations])
    v = ctx.api_version
    bindings = [AclBinding(ResourcePattern(c.resource_type, c.resource_name,
                                           c.resource_pattern_type if v >= 1 else LITERAL),
                           AccessControlEntry(c.principal, c.host, c.operation, c.permission_type))
                for c in req.creations]
    errors, stored = ctx.services.acls.create_acls(bindings)
    results = [R(error_code=0, error_message=None) if err is None else R(error_code=err[0], error_message=err[1])
               for err in errors]
    return answer_when_stored(CreateAclsResponse(results=results), [stored] if stored else [])


@REGISTRY.register(31, 0, 3)
def handle_delete_acls(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse | Awaitable[DeleteAclsResponse]:
    FR = DeleteAclsResponse.DeleteAclsFilterResult
    if not ctx.services.authorizer.configured:
        return DeleteAclsResponse(filter_results=[FR(error_code=ErrorCode.SECURITY_DISABLED,
                                                     error_message=NO_AUTHORIZER) for _ in req.filters])
    if not authorize_cluster(ctx, ALTER):
        return DeleteAclsResponse(filter_results=[FR(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                     error_message=None) for _ in req.filters])
    filters = [_filter(f, ctx.api_version) for f in req.filters]
    bad = {i: why for i, f in enumerate(filters) if (why := f.invalid_reason()) is not None}
    removed, stored = ctx.services.acls.delete_acls([f for i, f in enumerate(filters) if i not in bad])
    results = []
    good = iter(removed)
    for i in range(len(filters)):
        if i in bad:
            results.append(FR(error_code=ErrorCode.INVALID_REQUEST, error_message=bad[i]))
            continue
        results.append(FR(error_code=0, error_message=None, matching_acls=[
            DeleteAclsResponse.DeleteAclsMatchingAcl(
                error_code=0, error_message=None, resource_type=b.pattern.resource_type,
                resource_name=b.pattern.name, pattern_type=b.pattern.pattern_type,
                principal=b.entry.principal, host=b.entry.host, operation=b.entry.operation,
                permission_type=b.entry.permission)
            for b in next(good)]))
    return answer_when_stored(DeleteAclsResponse(filter_results=results), [stored] if stored else [])
