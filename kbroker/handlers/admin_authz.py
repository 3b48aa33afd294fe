"""Authorization of the admin, transaction and inter-broker APIs, as Kafka's KafkaApis /
AclApis check them, installed around the registered handlers (``install``, called by
kbroker/handlers/__init__.py) so that the handlers stay as they are.  Every wrapper first
tests whether an authorizer is configured (``services.authorizer.configured``, False for the
null object ``AllowAll``) and if not calls the handler untouched: without an authorizer
nothing changes.

Ports (kbroker/server/services.py): ``authorizer``, ``metadata`` (DeleteTopics v6: a topic id's name).

Per API (operation on resource -> error):
* CreateTopics: Create on the cluster, else Create per topic -> TOPIC_AUTHORIZATION_FAILED;
  v5+ the created topic's configs need DescribeConfigs (else ``topic_config_error_code``).
* DeleteTopics, DeleteRecords: Delete per topic.  CreatePartitions: Alter per topic.
* DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: DescribeConfigs / AlterConfigs
  on the topic (TOPIC_AUTHORIZATION_FAILED) or on the cluster for broker and broker-logger
  resources (CLUSTER_AUTHORIZATION_FAILED).
* DescribeTopicPartitions: Describe per topic (asked-for topics refused, listed ones hidden);
  ``topic_authorized_operations`` from the ACLs.
* OffsetForLeaderEpoch: ClusterAction for a follower, else Describe per topic.
* ElectLeaders, AlterPartitionReassignments, AlterUserScramCredentials: Alter on the cluster;
  ListPartitionReassignments, DescribeLogDirs, DescribeUserScramCredentials: Describe on the
  cluster -> CLUSTER_AUTHORIZATION_FAILED.
* DescribeCluster: ``cluster_authorized_operations`` from the ACLs (0 without Describe).
* InitProducerId: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), or
  without one IdempotentWrite on the cluster or Write on some topic
  (CLUSTER_AUTHORIZATION_FAILED).  AddPartitionsToTxn (v0-3), AddOffsetsToTxn, EndTxn,
  TxnOffsetCommit: Write on the transactional id; AddOffsetsToTxn / TxnOffsetCommit also
  Read on the group; AddPartitionsToTxn v0-3 Write per topic (TxnOffsetCommit's per-topic
  Read is in its handler).  DescribeTransactions: Describe per
  transactional id.  ListTransactions: only the transactional ids it may Describe.
* The controller-to-broker APIs and WriteTxnMarkers: ClusterAction on the cluster ->
  CLUSTER_AUTHORIZATION_FAILED (brokers' principals belong in ``super.users``, as in Kafka).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kbroker.handlers.authorize import (
    authorize,
    authorize_any,
    authorize_cluster,
    authorized_operations,
)
from kbroker.handlers.authz_responses import refused
from kbroker.handlers.group_authz import after
from kbroker.security.authorizer import INT_MIN, client_host
from kbroker.server.registry import INTER_BROKER, REGISTRY, ApiEntry, Registry
from kbroker.server.request_context import RequestContext
from wire.acl import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    IDEMPOTENT_WRITE,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from wire.error_codes import ErrorCode
from wire.messages import AddPartitionsToTxnResponse, DescribeTransactionsResponse

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
# DescribeConfigs resource types (ConfigResource.Type): TOPIC 2, BROKER 4, BROKER_LOGGER 8
CONFIG_TOPIC = 2

Call = Callable[[Any], Any]


def split(ctx: RequestContext, req: Any, call: Call, array: str, response_array: str,
          code_of: Callable[[Any], int | None]) -> Any:
    """Answer the entries of ``req.<array>`` that ``code_of`` refuses with that error in the
    API's own entry layout (kbroker/handlers/authz_responses.py), the others by the handler; the
    refused entries follow the handler's in ``response.<response_array>``."""
    items = list(getattr(req, array) or [])
    codes = [code_of(x) for x in items]
    if not any(codes):
        return call(req)
    setattr(req, array, [x for x, c in zip(items, codes, strict=True) if not c])
    refusals: list[Any] = []
    for code in dict.fromkeys(c for c in codes if c):
        denied_req = copy.copy(req)
        setattr(denied_req, array, [x for x, c in zip(items, codes, strict=True) if c == code])
        refusals += getattr(refused(ctx.api_key, ctx.api_version, denied_req, code), response_array)

    def finish(resp: Any) -> Any:
        getattr(resp, response_array).extend(refusals)
        return resp
    return after(call(req), finish)


def whole(ctx: RequestContext, req: Any, call: Call, allowed: bool, code: int) -> Any:
    return call(req) if allowed else refused(ctx.api_key, ctx.api_version, req, code)


def _topic_code(ctx: RequestContext, op: int) -> Callable[[str], int | None]:
    return lambda name: None if name is None or authorize(ctx, op, TOPIC, name) else TOPIC_DENIED


# ---------------------------------------------------------------- topics
def create_topics(ctx: RequestContext, req: Any, call: Call) -> Any:
    a = ctx.services.authorizer
    may_create_all = a.authorize(ctx.principal, client_host(ctx.peer), CREATE, CLUSTER, CLUSTER_NAME,
                                 log_if_denied=False)
    code = (lambda t: None) if may_create_all else (lambda t: _topic_code(ctx, CREATE)(t.name))

    def configs_visible(resp: Any) -> Any:
        if ctx.api_version >= 5:
            for r in resp.topics:
                if r.error_code == 0 and not authorize(ctx, DESCRIBE_CONFIGS, TOPIC, r.name):
                    r.topic_config_error_code = TOPIC_DENIED
                    r.configs = None
                    r.num_partitions = r.replication_factor = -1
        return resp
    return after(split(ctx, req, call, "topics", "topics", code), configs_visible)


def delete_topics(ctx: RequestContext, req: Any, call: Call) -> Any:
    by_name = _topic_code(ctx, DELETE)
    if ctx.api_version >= 6:
        # by id (name null): the check is on the topic the id names (an unknown id passes
        # on, to answer UNKNOWN_TOPIC_ID)
        return split(ctx, req, call, "topics", "responses", lambda t: by_name(
            t.name if t.name is not None else ctx.services.metadata.name_for_id(t.topic_id)))
    return split(ctx, req, call, "topic_names", "responses", by_name)


def per_topic(op: int, array: str = "topics", response_array: str = "topics",
              name: str = "name") -> Callable[[RequestContext, Any, Call], Any]:
    def check(ctx: RequestContext, req: Any, call: Call) -> Any:
        by_name = _topic_code(ctx, op)
        return split(ctx, req, call, array, response_array, lambda t: by_name(getattr(t, name)))
    return check


def offset_for_leader_epoch(ctx: RequestContext, req: Any, call: Call) -> Any:
    if req.replica_id >= 0:
        return whole(ctx, req, call, authorize_cluster(ctx, CLUSTER_ACTION), CLUSTER_DENIED)
    return per_topic(DESCRIBE, name="topic")(ctx, req, call)


def describe_topic_partitions(ctx: RequestContext, req: Any, call: Call) -> Any:
    listing = not req.topics

    def finish(resp: Any) -> Any:
        kept = []
        for t in resp.topics:
            if t.error_code == 0 and not authorize(ctx, DESCRIBE, TOPIC, t.name):
                if listing:
                    continue
                t.error_code, t.partitions, t.topic_id = TOPIC_DENIED, [], type(t.topic_id)(int=0)
                t.is_internal, t.topic_authorized_operations = False, INT_MIN
            elif t.error_code == 0:
                t.topic_authorized_operations = authorized_operations(ctx, TOPIC, t.name)
            kept.append(t)
        resp.topics = kept
        return resp
    return after(call(req), finish)


# ---------------------------------------------------------------- configs
def _config_code(ctx: RequestContext, op: int) -> Callable[[Any], int | None]:
    def code(r: Any) -> int | None:
        if r.resource_type == CONFIG_TOPIC:
            return None if authorize(ctx, op, TOPIC, r.resource_name) else TOPIC_DENIED
        return None if authorize_cluster(ctx, op) else CLUSTER_DENIED
    return code


def describe_configs(ctx: RequestContext, req: Any, call: Call) -> Any:
    return split(ctx, req, call, "resources", "results", _config_code(ctx, DESCRIBE_CONFIGS))


def alter_configs(ctx: RequestContext, req: Any, call: Call) -> Any:
    return split(ctx, req, call, "resources", "responses", _config_code(ctx, ALTER_CONFIGS))


# ---------------------------------------------------------------- cluster
def cluster_op(op: int) -> Callable[[RequestContext, Any, Call], Any]:
    def check(ctx: RequestContext, req: Any, call: Call) -> Any:
        return whole(ctx, req, call, authorize_cluster(ctx, op), CLUSTER_DENIED)
    return check


def describe_cluster(ctx: RequestContext, req: Any, call: Call) -> Any:
    def finish(resp: Any) -> Any:
        if req.include_cluster_authorized_operations:
            resp.cluster_authorized_operations = (authorized_operations(ctx, CLUSTER, CLUSTER_NAME)
                                                  if authorize_cluster(ctx, DESCRIBE) else 0)
        return resp
    return after(call(req), finish)


# ---------------------------------------------------------------- transactions
def init_producer_id(ctx: RequestContext, req: Any, call: Call) -> Any:
    if req.transactional_id is not None:
        return whole(ctx, req, call, authorize(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id), TXN_DENIED)
    may = authorize_cluster(ctx, IDEMPOTENT_WRITE) or authorize_any(ctx, WRITE, TOPIC)
    return whole(ctx, req, call, may, CLUSTER_DENIED)


def txn_write(group_field: str | None = None) -> Callable[[RequestContext, Any, Call], Any]:
    """Write on the request's transactional id; Read on its group when it names one."""
    def check(ctx: RequestContext, req: Any, call: Call) -> Any:
        if not authorize(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
            return refused(ctx.api_key, ctx.api_version, req, TXN_DENIED)
        if group_field is not None and not authorize(ctx, READ, GROUP, getattr(req, group_field)):
            return refused(ctx.api_key, ctx.api_version, req, GROUP_DENIED)
        return call(req)
    return check


def add_partitions_to_txn(ctx: RequestContext, req: Any, call: Call) -> Any:
    """v4+ is the brokers' KIP-890 verification: ClusterAction.  v0-3 (a producer): Write on
    the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition;
    then Write per topic: if any topic is refused nothing is added, its partitions answer
    TOPIC_AUTHORIZATION_FAILED and the others OPERATION_NOT_ATTEMPTED (KafkaApis)."""
    if ctx.api_version >= 4:
        return whole(ctx, req, call, authorize_cluster(ctx, CLUSTER_ACTION), CLUSTER_DENIED)
    R = AddPartitionsToTxnResponse
    topics = req.v3_and_below_topics or []

    def answer(code_of: Callable[[str], int]) -> Any:
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=[
            R.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
                R.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=code_of(t.name))
                for p in t.partitions]) for t in topics])

    if not authorize(ctx, WRITE, TRANSACTIONAL_ID, req.v3_and_below_transactional_id):
        return answer(lambda _name: TXN_DENIED)
    refused_names = {t.name for t in topics if not authorize(ctx, WRITE, TOPIC, t.name)}
    if refused_names:
        return answer(lambda name: TOPIC_DENIED if name in refused_names else ErrorCode.OPERATION_NOT_ATTEMPTED)
    return call(req)


def txn_offset_commit(ctx: RequestContext, req: Any, call: Call) -> Any:
    if not authorize(ctx, WRITE, TRANSACTIONAL_ID, req.transactional_id):
        return refused(ctx.api_key, ctx.api_version, req, TXN_DENIED)
    if not authorize(ctx, READ, GROUP, req.group_id):
        return refused(ctx.api_key, ctx.api_version, req, GROUP_DENIED)
    return call(req)


def describe_transactions(ctx: RequestContext, req: Any, call: Call) -> Any:
    denied = [t for t in req.transactional_ids if not authorize(ctx, DESCRIBE, TRANSACTIONAL_ID, t)]
    if not denied:
        return call(req)
    req.transactional_ids = [t for t in req.transactional_ids if t not in denied]

    def finish(resp: Any) -> Any:
        resp.transaction_states += [DescribeTransactionsResponse.TransactionState(
            error_code=TXN_DENIED, transactional_id=t, transaction_state="", transaction_timeout_ms=0,
            transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1, topics=[]) for t in denied]
        return resp
    return after(call(req), finish)


def list_transactions(ctx: RequestContext, req: Any, call: Call) -> Any:
    def finish(resp: Any) -> Any:
        resp.transaction_states = [s for s in resp.transaction_states
                                   if authorize(ctx, DESCRIBE, TRANSACTIONAL_ID, s.transactional_id)]
        return resp
    return after(call(req), finish)


CHECKS: dict[int, Callable[[RequestContext, Any, Call], Any]] = {
    19: create_topics,
    20: delete_topics,
    21: per_topic(DELETE),
    22: init_producer_id,
    23: offset_for_leader_epoch,
    24: add_partitions_to_txn,
    25: txn_write(group_field="group_id"),
    26: txn_write(),
    27: cluster_op(CLUSTER_ACTION),
    28: txn_offset_commit,
    32: describe_configs,
    33: alter_configs,
    35: cluster_op(DESCRIBE),
    37: per_topic(ALTER, response_array="results"),
    43: cluster_op(ALTER),
    44: alter_configs,
    45: cluster_op(ALTER),
    46: cluster_op(DESCRIBE),
    50: cluster_op(DESCRIBE),   # DescribeUserScramCredentials
    51: cluster_op(ALTER),      # AlterUserScramCredentials
    60: describe_cluster,
    65: describe_transactions,
    66: list_transactions,
    75: describe_topic_partitions,
}


def _wrap(registry: Registry, key: int, check: Callable[[RequestContext, Any, Call], Any]) -> None:
    entry = registry.get(key)
    if entry is None or getattr(entry.handler, "authorizing", False):
        return
    inner = entry.handler

    def handler(ctx: RequestContext, req: Any) -> Any:
        if not ctx.services.authorizer.configured:
            return inner(ctx, req)
        return check(ctx, req, lambda r: inner(ctx, r))

    handler.authorizing = True  # type: ignore[attr-defined]
    handler.__name__ = getattr(inner, "__name__", "handler")
    registry.replace(ApiEntry(entry.api_key, entry.min_version, entry.max_version, handler))


def install() -> None:
    """Wrap the registered handlers of ``CHECKS`` and every inter-broker API (idempotent)."""
    for key, check in CHECKS.items():
        _wrap(REGISTRY, key, check)
    for entry in INTER_BROKER.entries():
        _wrap(INTER_BROKER, entry.api_key, cluster_op(CLUSTER_ACTION))
