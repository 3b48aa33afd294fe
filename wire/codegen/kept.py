"""The versions kbroker keeps serving that Kafka 4.4 dropped, written in Kafka's schema language.

Kafka 4.0 removed the old versions of many APIs (KIP-896): its schema files start their
``validVersions`` higher and leave out fields only those versions had.  Old clients still
send them (kafka-python and librdkafka probe from v0, Spark's Kafka 2.x-era clients send
OffsetCommit v2-v4), and kbroker answered them before the codec was regenerated from
Kafka 4.4.0's schemas (``schemas/``), so the generator puts them back exactly as Kafka's
last schemas that had them wrote them (kafka-clients 3.9): each version kept here has the
byte layout it had in the table generated from the 2024 schemas.  The ZooKeeper-era
inter-broker APIs Kafka 4 removed whole (LeaderAndIsr, UpdateMetadata, StopReplica,
ControlledShutdown) are Kafka 3.9's files, unmodified, in ``schemas-3.9/``.

NOT_IMPLEMENTED.md lists what Kafka 4.4 refuses that kbroker still accepts.
"""

from __future__ import annotations

import copy
from typing import Any

# message name -> the lowest version kbroker keeps (Kafka 4.4's file starts higher)
KEPT_FROM: dict[str, int] = {
    "RequestHeader": 0,                     # v0: ControlledShutdown v0's header
    "ProduceRequest": 0, "ProduceResponse": 0,
    "FetchRequest": 0, "FetchResponse": 0,
    "ListOffsetsRequest": 0, "ListOffsetsResponse": 0,
    "OffsetCommitRequest": 0, "OffsetCommitResponse": 0,
    "OffsetFetchRequest": 0, "OffsetFetchResponse": 0,
    "CreateTopicsRequest": 0, "CreateTopicsResponse": 0,
    "DeleteTopicsRequest": 0, "DeleteTopicsResponse": 0,
    "OffsetForLeaderEpochRequest": 0, "OffsetForLeaderEpochResponse": 0,
    "WriteTxnMarkersRequest": 0, "WriteTxnMarkersResponse": 0,
    "DescribeAclsRequest": 0, "DescribeAclsResponse": 0,
    "CreateAclsRequest": 0, "CreateAclsResponse": 0,
    "DeleteAclsRequest": 0, "DeleteAclsResponse": 0,
    "DescribeConfigsRequest": 0, "DescribeConfigsResponse": 0,
    "AlterReplicaLogDirsRequest": 0, "AlterReplicaLogDirsResponse": 0,
    "DescribeLogDirsRequest": 0, "DescribeLogDirsResponse": 0,
    "CreateDelegationTokenRequest": 0, "CreateDelegationTokenResponse": 0,
    "RenewDelegationTokenRequest": 0, "RenewDelegationTokenResponse": 0,
    "ExpireDelegationTokenRequest": 0, "ExpireDelegationTokenResponse": 0,
    "DescribeDelegationTokenRequest": 0, "DescribeDelegationTokenResponse": 0,
    "AlterPartitionRequest": 0, "AlterPartitionResponse": 0,  # v0-1 by topic name (ZK mode)
}

# (message, path of the struct, the field it goes before (None: at the end), the field):
# the fields only the kept versions have, copied from Kafka 3.9's schema files.
KEPT_FIELDS: list[tuple[str, tuple[str, ...], str | None, dict[str, Any]]] = [
    ("ListOffsetsRequest", ("Topics", "Partitions"), None,
     {"name": "MaxNumOffsets", "type": "int32", "versions": "0", "default": "1"}),
    ("ListOffsetsResponse", ("Topics", "Partitions"), "Timestamp",
     {"name": "OldStyleOffsets", "type": "[]int64", "versions": "0", "ignorable": False}),
    ("OffsetCommitRequest", ("Topics", "Partitions"), "CommittedMetadata",
     {"name": "CommitTimestamp", "type": "int64", "versions": "1", "default": "-1"}),
    ("DescribeConfigsResponse", ("Results", "Configs"), "ConfigSource",
     {"name": "IsDefault", "type": "bool", "versions": "0"}),
    ("AlterPartitionRequest", ("Topics",), "TopicId",
     {"name": "TopicName", "type": "string", "versions": "0-1", "ignorable": True,
      "entityType": "topicName"}),
    ("AlterPartitionResponse", ("Topics",), "TopicId",
     {"name": "TopicName", "type": "string", "versions": "0-1", "ignorable": True,
      "entityType": "topicName"}),
]


def _fields_at(doc: dict[str, Any], path: tuple[str, ...]) -> list[dict[str, Any]]:
    fields = doc["fields"]
    for name in path:
        (field,) = [f for f in fields if f["name"] == name]
        fields = field["fields"]
    return fields


def apply_kept(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (one parsed schema file) with the kept versions and their fields put back."""
    name = doc["name"]
    if name not in KEPT_FROM:
        return doc
    hi = str(doc["validVersions"]).split("-")[-1]
    doc = copy.deepcopy(doc)
    doc["validVersions"] = f"{KEPT_FROM[name]}-{hi}"
    for message, path, before, field in KEPT_FIELDS:
        if message != name:
            continue
        fields = _fields_at(doc, path)
        at = len(fields) if before is None else [f["name"] for f in fields].index(before)
        fields.insert(at, dict(field))
    return doc
