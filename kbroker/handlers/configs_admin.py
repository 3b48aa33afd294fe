"""DescribeConfigs (key 32) v1-4, AlterConfigs (33) v0-2, IncrementalAlterConfigs (44) v0-1.

Resources: TOPIC (2) and BROKER (4; name "" = the cluster-wide dynamic default, or this
broker's node id).  The checks and messages follow Kafka's ConfigAdminManager (on the
broker) and ConfigurationControlManager / ControllerConfigurationValidator (on the
controller), in that order:

* a resource listed twice: INVALID_REQUEST "Each resource must appear at most once." for both;
* a config name listed twice in one resource: INVALID_REQUEST "Error due to duplicate config keys";
* a null value (except for DELETE): INVALID_REQUEST "Null value not supported for : a, b";
* BROKER: a name other than "" or this node id INVALID_REQUEST; a non-dynamic name or a bad
  value INVALID_REQUEST (Kafka wraps the broker's ConfigException so, KAFKA-13609);
* TOPIC: an unknown topic UNKNOWN_TOPIC_OR_PARTITION; an unknown config name or a bad
  value INVALID_CONFIG; APPEND/SUBTRACT on a non-LIST config INVALID_CONFIG;
* any other resource type INVALID_REQUEST.

AlterConfigs replaces the whole set of a resource's overrides (names not sent are
removed); IncrementalAlterConfigs applies SET (0), DELETE (1), APPEND (2), SUBTRACT (3)
to the current set, APPEND/SUBTRACT starting from the current effective value.
``validate_only`` checks everything and changes nothing.  Changes take effect at once on
every affected log and persist across restarts (kbroker/configs/topic_configs.py,
kbroker/configs/dynamic_broker_configs.py).  In cluster mode ZooKeeper holds both kinds and every
broker follows its notifications; the named resources are re-read from it first and the
answer waits for the znode writes (kbroker/zk/zk_config_admin.py).

Ports (kbroker/server/services.py): ``config_admin``, ``config``, ``node_id``.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from kbroker.configs.config import KEYS, ConfigError
from kbroker.configs.json_file import answer_when_stored
from kbroker.configs.topic_configs import TopicConfigStore
from kbroker.handlers.config_describe import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    describe,
    to_config_string,
    topic_config_type,
)
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from log.config import DEFAULTS as TOPIC_DEFAULTS
from wire.error_codes import ErrorCode
from wire.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class AlterError(Exception):
    def __init__(self, error: ErrorCode, message: str):
        super().__init__(message)
        self.error = error
        self.message = message


T = TypeVar("T")


def _names(resources: list[Any], resource_type: int) -> list[str]:
    return [r.resource_name for r in resources if r.resource_type == resource_type]


def _after_refresh(refreshed: Awaitable[None] | None, answer: Callable[[], T | Awaitable[T]]
                   ) -> T | Awaitable[T]:
    """``answer()`` once the config admin has re-read what the request names (cluster mode:
    from ZooKeeper), at once when there is nothing to re-read (a single node)."""
    if refreshed is None:
        return answer()

    async def then() -> T:
        await refreshed
        result = answer()
        return await result if inspect.isawaitable(result) else result

    return then()


@REGISTRY.register(32, 1, 4)
def handle_describe_configs(ctx: RequestContext, req: DescribeConfigsRequest
                            ) -> DescribeConfigsResponse | Awaitable[DescribeConfigsResponse]:
    # the topics only: DescribeConfigs answers a broker level from what this broker applied,
    # as Kafka does
    refreshed = ctx.services.config_admin.refresh(_names(req.resources, RESOURCE_TOPIC), [])
    return _after_refresh(refreshed, lambda: _describe_configs(ctx, req))


def _describe_configs(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    return DescribeConfigsResponse(throttle_time_ms=0, results=[
        describe(ctx.services, r.resource_type, r.resource_name, r.configuration_keys, req.include_synonyms)
        for r in req.resources])


def _refresh_for_alter(ctx: RequestContext, resources: list[Any]) -> Awaitable[None] | None:
    """An alter starts from the cluster's current set of each topic and broker level it
    names, as Kafka's ZkAdminManager reads the entity before changing it."""
    return ctx.services.config_admin.refresh(_names(resources, RESOURCE_TOPIC),
                                             _names(resources, RESOURCE_BROKER))


@REGISTRY.register(33, 0, 2)
def handle_alter_configs(ctx: RequestContext, req: AlterConfigsRequest
                         ) -> AlterConfigsResponse | Awaitable[AlterConfigsResponse]:
    return _after_refresh(_refresh_for_alter(ctx, req.resources), lambda: _alter_configs(ctx, req))


def _alter_configs(ctx: RequestContext, req: AlterConfigsRequest
                   ) -> AlterConfigsResponse | Awaitable[AlterConfigsResponse]:
    def ops(resource: Any) -> list[tuple[str, int, str | None]]:
        return [(c.name, SET, c.value) for c in resource.configs]

    stored: list[Future[None]] = []
    results = _alter(ctx, req.resources, req.validate_only, ops, replace=True, stored=stored)
    return answer_when_stored(AlterConfigsResponse(throttle_time_ms=0, responses=[
        AlterConfigsResponse.AlterConfigsResourceResponse(*r) for r in results]), stored)


@REGISTRY.register(44, 0, 1)
def handle_incremental_alter_configs(ctx: RequestContext, req: IncrementalAlterConfigsRequest
                                     ) -> IncrementalAlterConfigsResponse | Awaitable[IncrementalAlterConfigsResponse]:
    return _after_refresh(_refresh_for_alter(ctx, req.resources),
                          lambda: _incremental_alter_configs(ctx, req))


def _incremental_alter_configs(ctx: RequestContext, req: IncrementalAlterConfigsRequest
                               ) -> IncrementalAlterConfigsResponse | Awaitable[IncrementalAlterConfigsResponse]:
    def ops(resource: Any) -> list[tuple[str, int, str | None]]:
        return [(c.name, c.config_operation, c.value) for c in resource.configs]

    stored: list[Future[None]] = []
    results = _alter(ctx, req.resources, req.validate_only, ops, replace=False, stored=stored)
    return answer_when_stored(IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=[
        IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(*r) for r in results]), stored)


def _alter(ctx: RequestContext, resources: list[Any], validate_only: bool, ops_of: Any,
           replace: bool, stored: list[Future[None]]) -> list[tuple[int, str | None, int, str]]:
    """One (error_code, error_message, resource_type, resource_name) per resource, in order;
    the writes of the changed configs (the answer waits for them) go to ``stored``."""
    admin = ctx.services.config_admin
    seen = Counter((r.resource_type, r.resource_name) for r in resources)
    out = []
    for r in resources:
        try:
            if seen[(r.resource_type, r.resource_name)] > 1:
                raise AlterError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            ops = ops_of(r)
            if any(n > 1 for n in Counter(name for name, _, _ in ops).values()):
                raise AlterError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
            nulls = [name for name, op, value in ops if value is None and op != DELETE]
            if nulls:
                raise AlterError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
            if r.resource_type == RESOURCE_TOPIC:
                props = _topic_overrides(ctx, r.resource_name, ops, replace)
                if not validate_only:
                    stored.extend(admin.set_topic_overrides(r.resource_name, props))
            elif r.resource_type == RESOURCE_BROKER:
                props = _broker_level(ctx, r.resource_name, ops, replace)
                if not validate_only:
                    stored.extend(admin.set_broker_level(r.resource_name, props))
            else:
                raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {r.resource_type}")
            out.append((int(ErrorCode.NONE), None, r.resource_type, r.resource_name))
        except AlterError as e:
            out.append((int(e.error), e.message, r.resource_type, r.resource_name))
    return out


def _apply_ops(current: dict[str, str], ops: list[tuple[str, int, str | None]], replace: bool,
               is_list: Any, default_value: Any, not_list: Any) -> dict[str, str]:
    """The new override set.  ``is_list(name)`` tells LIST configs; ``default_value(name)``
    is the value APPEND/SUBTRACT start from when there is no override (Kafka's ConfigDef
    default, not the effective value: ConfigurationControlManager.getParts and
    ConfigAdminManager.prepareIncrementalConfigs); ``not_list(op, name)`` is the AlterError
    for APPEND/SUBTRACT on any other config."""
    props = {} if replace else dict(current)
    for name, op, value in ops:
        if op == SET:
            props[name] = value  # type: ignore[assignment]
        elif op == DELETE:
            props.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if not is_list(name):
                raise not_list(op, name)
            base = props[name] if name in props else default_value(name) or ""
            items = [p.strip() for p in base.split(",") if p.strip()]
            changes = [p.strip() for p in (value or "").split(",") if p.strip()]
            if op == APPEND:
                items += [c for c in dict.fromkeys(changes) if c not in items]
            else:
                items = [i for i in items if i not in changes]
            props[name] = ",".join(items)
        else:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    return props


def _topic_overrides(ctx: RequestContext, topic: str, ops: list[tuple[str, int, str | None]],
                     replace: bool) -> dict[str, str]:
    """The topic's new overrides.  In the order of Kafka's controller
    (ConfigurationControlManager): the operations (APPEND/SUBTRACT on a non-LIST or unknown
    name fails there), then the whole new set (LogConfig.validate: unknown names, bad values),
    then whether the topic exists, so an unknown topic with a bad config answers INVALID_CONFIG."""
    admin = ctx.services.config_admin

    def not_list(op: int, name: str) -> AlterError:
        return AlterError(ErrorCode.INVALID_CONFIG, f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.")

    props = _apply_ops(
        admin.topic_overrides(topic), ops, replace,
        lambda n: n in TOPIC_DEFAULTS and topic_config_type(n, TOPIC_DEFAULTS[n]) == "list",
        lambda n: to_config_string(TOPIC_DEFAULTS[n]), not_list)
    try:
        TopicConfigStore.validate(props, ctx.services.config.config.log_config)
    except KeyError as e:
        raise AlterError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {e.args[0]}") from None
    except ValueError as e:
        raise AlterError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if not admin.topic_exists(topic):
        raise AlterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")
    return props


def _broker_level(ctx: RequestContext, name: str, ops: list[tuple[str, int, str | None]],
                  replace: bool) -> dict[str, str]:
    """The dynamic broker level's new set ("" = the cluster default, else this node's id)."""
    admin = ctx.services.config_admin
    node_id = ctx.services.node_id
    if name != "":
        try:
            node = int(name)
        except ValueError:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
        if node != node_id:
            raise AlterError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {node_id}, but received {name}")
    for config_name, _, _ in ops:
        if config_name not in KEYS:
            raise AlterError(ErrorCode.INVALID_REQUEST,
                             f"Cannot update these configs dynamically: Set({config_name})")

    def not_list(op: int, config_name: str) -> AlterError:
        # ConfigAdminManager.prepareIncrementalConfigs, on the broker, before the controller
        return AlterError(ErrorCode.INVALID_REQUEST,
                          f"Config value {_OP_NAMES[op].lower()} is not allowed for config key: {config_name}")

    props = _apply_ops(
        admin.broker_level(name), ops, replace, lambda n: KEYS[n].type == "list",
        lambda n: to_config_string(KEYS[n].default), not_list)
    try:
        admin.validate_broker_level(name, props)
    except ConfigError as e:
        raise AlterError(ErrorCode.INVALID_REQUEST, str(e)) from None
    return props
