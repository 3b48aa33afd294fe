"""DescribeClientQuotas (48) and AlterClientQuotas (49), v0-1, over kbroker/security/quotas.py.

* Describe needs DescribeConfigs on the cluster, Alter AlterConfigs on the cluster, else
  CLUSTER_AUTHORIZATION_FAILED (top level / per entry).
* Entity types ``user`` and ``client-id`` (a null name is the ``<default>`` entity); ``ip``
  entities are answered INVALID_REQUEST (connection-rate quotas are not served).
* Describe filters (Kafka's ClientQuotaFilterComponent): match_type 0 EXACT (that name), 1
  DEFAULT (the default entity), 2 ANY (any entity with that type); with ``strict`` only
  entities made of exactly the filtered types match, otherwise entities with other types too.
* Alter: the keys are Kafka's (producer_byte_rate, consumer_byte_rate, request_percentage,
  controller_mutation_rate); unknown keys, non-positive values and a byte rate that is not a
  whole number are INVALID_REQUEST for that entry; ``validate_only`` changes nothing.
  Answered once the change is durable (cluster mode: also written to ZooKeeper and announced
  to every broker, kbroker/zk/zk_config_admin.py).

Ports (kbroker/server/services.py): ``quotas`` (describe), ``config_admin`` (alter), ``authorizer``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from concurrent.futures import Future

from kbroker.configs.json_file import answer_when_stored
from kbroker.handlers.authorize import authorize_cluster
from kbroker.security.quotas import CLIENT_ID, DEFAULT, FETCH, PRODUCE, QUOTA_KEYS, USER, Entity
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.acl import ALTER_CONFIGS, DESCRIBE_CONFIGS
from wire.error_codes import ErrorCode
from wire.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)

EXACT, DEFAULT_MATCH, ANY = 0, 1, 2


def _wire_name(name: str) -> str | None:
    return None if name == DEFAULT else name


def _entity_parts(entity: Entity) -> list[tuple[str, str]]:
    user, client = entity
    out = []
    if user is not None:
        out.append((USER, user))
    if client is not None:
        out.append((CLIENT_ID, client))
    return out


@REGISTRY.register(48, 0, 1)
def handle_describe_client_quotas(ctx: RequestContext, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not authorize_cluster(ctx, DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                            error_message=None, entries=None)
    wanted: dict[str, tuple[int, str | None]] = {}
    for c in req.components:
        if c.entity_type not in (USER, CLIENT_ID) or c.entity_type in wanted or c.match_type not in (0, 1, 2):
            why = (f"Custom entity type {c.entity_type} not supported" if c.entity_type not in (USER, CLIENT_ID)
                   else "Duplicate entity type" if c.entity_type in wanted else "Invalid match type")
            return DescribeClientQuotasResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=why, entries=None)
        wanted[c.entity_type] = (c.match_type, c.match)
    entries = []
    for entity, values in sorted(ctx.services.quotas.configs.items(), key=lambda kv: str(kv[0])):
        parts = dict(_entity_parts(entity))
        if req.strict and set(parts) != set(wanted):
            continue
        ok = True
        for etype, (match_type, match) in wanted.items():
            name = parts.get(etype)
            if name is None:
                ok = False
            elif match_type == EXACT and name != match:
                ok = False
            elif match_type == DEFAULT_MATCH and name != DEFAULT:
                ok = False
        if not ok:
            continue
        entries.append(DescribeClientQuotasResponse.EntryData(
            entity=[DescribeClientQuotasResponse.EntityData(entity_type=t, entity_name=_wire_name(n))
                    for t, n in _entity_parts(entity)],
            values=[DescribeClientQuotasResponse.ValueData(key=k, value=v) for k, v in sorted(values.items())]))
    return DescribeClientQuotasResponse(error_code=0, error_message=None, entries=entries)


def _entity(entry: AlterClientQuotasRequest.EntryData) -> tuple[Entity | None, str | None]:
    user = client = None
    seen = set()
    for e in entry.entity:
        if e.entity_type in seen:
            return None, f"Duplicate {e.entity_type} in entity"
        seen.add(e.entity_type)
        name = DEFAULT if e.entity_name is None else e.entity_name
        if e.entity_type == USER:
            user = name
        elif e.entity_type == CLIENT_ID:
            client = name
        else:
            return None, f"Unhandled client quota entity type: {e.entity_type}"
    if user is None and client is None:
        return None, "Invalid empty client quota entity"
    return (user, client), None


def _ops_error(ops: list[AlterClientQuotasRequest.OpData]) -> str | None:
    for op in ops:
        if op.key not in QUOTA_KEYS:
            return f"Invalid configuration key {op.key}"
        if op.remove:
            continue
        if op.value <= 0:
            return f"Quota {op.key} must be greater than 0"
        if op.key in (PRODUCE, FETCH) and op.value != int(op.value):
            return f"Configuration {op.key} must be a Long value"
    return None


@REGISTRY.register(49, 0, 1)
def handle_alter_client_quotas(ctx: RequestContext, req: AlterClientQuotasRequest
                               ) -> AlterClientQuotasResponse | Awaitable[AlterClientQuotasResponse]:
    E = AlterClientQuotasResponse.EntryData

    def echo(entry: AlterClientQuotasRequest.EntryData) -> list[AlterClientQuotasResponse.EntityData]:
        return [AlterClientQuotasResponse.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                for e in entry.entity]

    allowed = authorize_cluster(ctx, ALTER_CONFIGS)
    admin = ctx.services.config_admin
    stored: list[Future[None]] = []
    results = []
    for entry in req.entries:
        if not allowed:
            results.append(E(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, entity=echo(entry)))
            continue
        entity, why = _entity(entry)
        why = why or _ops_error(entry.ops)
        if entity is None or why is not None:
            results.append(E(error_code=ErrorCode.INVALID_REQUEST, error_message=why, entity=echo(entry)))
            continue
        if not req.validate_only:
            stored.extend(admin.set_client_quota(entity, {op.key: None if op.remove else op.value
                                                          for op in entry.ops}))
        results.append(E(error_code=0, error_message=None, entity=echo(entry)))
    return answer_when_stored(AlterClientQuotasResponse(entries=results), stored)
