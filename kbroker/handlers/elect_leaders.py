"""ElectLeaders (key 43) v0-2 (Kafka's ``KafkaApis.handleElectLeaders`` in ZooKeeper mode).

The request names partitions (null: every partition this broker's metadata knows) and an
election type (v1+; v0 is always PREFERRED): PREFERRED moves leadership back to the first
replica of the assignment when it is alive and in the ISR, UNCLEAN elects a leader for a
partition whose leader is gone, from outside the ISR if it must.

Cluster mode: the broker's own controller runs the election (Kafka does not forward it:
clients send ElectLeaders to the controller, and any other broker answers NOT_CONTROLLER
for every partition).  Per partition: NONE once this broker's metadata cache shows the
elected leader (Kafka's ``DelayedElectLeader``; REQUEST_TIMED_OUT if ``timeout_ms`` passes
first), ELECTION_NOT_NEEDED (already led by the preferred replica / by a live broker),
PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE (with the controller's
message), UNKNOWN_TOPIC_OR_PARTITION ("The partition does not exist."), or
INVALID_TOPIC_EXCEPTION for a topic being deleted.  For a null request the partitions that
needed no election are left out of the answer, as Kafka does.

A single broker answers too (it is its own controller, as a one-broker Kafka cluster is):
each of its partitions has one replica, which leads, so every election is
ELECTION_NOT_NEEDED, and an unknown partition UNKNOWN_TOPIC_OR_PARTITION.  Advertised in
both modes: the answers are the ones Kafka gives for the same cluster.

Per-partition messages follow Kafka's ``ApiError``: an error built from a code alone
carries that code's default message (ELECTION_NOT_NEEDED), NONE / NOT_CONTROLLER /
REQUEST_TIMED_OUT carry null.

Ports (kbroker/server/services.py): ``controller`` (kbroker/replica/local_controller.py on a single node,
kbroker/zk/zk_controller.py in ZooKeeper mode).
"""

from __future__ import annotations

from cluster.controller import ElectionOutcome, ElectionType
from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import ElectLeadersRequest, ElectLeadersResponse

TopicPartition = tuple[str, int]

# Errors.ELECTION_NOT_NEEDED.message() in Kafka (ApiError(error) takes the default message)
ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."


def _requested(req: ElectLeadersRequest) -> list[TopicPartition] | None:
    if req.topic_partitions is None:
        return None
    return [(t.topic, p) for t in req.topic_partitions for p in t.partitions]


def _response(req: ElectLeadersRequest, outcomes: dict[TopicPartition, ElectionOutcome],
              error: ErrorCode = ErrorCode.NONE) -> ElectLeadersResponse:
    R = ElectLeadersResponse
    by_topic: dict[str, list] = {}
    for (topic, index), o in outcomes.items():
        if req.topic_partitions is None and o.error_code == ErrorCode.ELECTION_NOT_NEEDED:
            continue  # a whole-cluster election lists only what it did or could not do
        message = o.error_message
        if message is None and o.error_code == ErrorCode.ELECTION_NOT_NEEDED:
            message = ELECTION_NOT_NEEDED_MESSAGE
        by_topic.setdefault(topic, []).append(R.PartitionResult(
            partition_id=index, error_code=int(o.error_code), error_message=message))
    return R(throttle_time_ms=0, error_code=int(error), replica_election_results=[
        R.ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()])


@REGISTRY.register(43, 0, 2)
async def handle_elect_leaders(ctx: RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse:
    election_type = ElectionType(req.election_type) if ctx.api_version >= 1 else ElectionType.PREFERRED
    outcomes = await ctx.services.controller.elect_leaders(_requested(req), election_type,
                                                           max(req.timeout_ms, 0) / 1000)
    return _response(req, outcomes)
