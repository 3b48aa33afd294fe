"""The committed schema table is exactly what the generator makes of Kafka's schemas,
and it keeps facts only."""

from __future__ import annotations

from wire.codegen.__main__ import OUT, generate
from wire.codegen.kept import KEPT_FROM
from wire.codegen.schema_json import load_json
from wire.schema import REQUESTS, RESPONSES, SPECS


def test_committed_generated_files_equal_a_fresh_generation_from_the_schemas_in_the_repository():
    for name, text in generate().items():
        assert (OUT / name).read_text() == text, f"{name} is stale: run `make gen`"


def test_the_schemas_are_kafka_4_4_and_the_versions_kafka_4_dropped_are_kept_from_zero():
    from wire.codegen.__main__ import SCHEMAS
    produce = load_json(SCHEMAS / "ProduceRequest.json")
    assert produce["validVersions"] == "3-13"   # Kafka 4.4's file, unmodified
    assert SPECS["ProduceRequest"].valid == (0, 13) and SPECS["FetchRequest"].valid == (0, 18)
    for name, lowest in KEPT_FROM.items():
        assert SPECS[name].valid[0] == lowest, name
    # a field only a kept version has comes back with its version range
    partition = SPECS["ListOffsetsRequest"].fields[2].struct.fields[-1].struct
    assert [f.name for f in partition.fields][-1] == "MaxNumOffsets"
    # the ZooKeeper-era inter-broker APIs Kafka 4 removed whole are Kafka 3.9's schemas
    assert SPECS["LeaderAndIsrRequest"].valid == (0, 7) and SPECS["UpdateMetadataRequest"].valid == (0, 8)


def test_the_table_holds_no_about_texts():
    text = (OUT / "schema_table.py").read_text()
    assert "'about'" not in text and '"about"' not in text


def test_requests_and_responses_pair_up_with_equal_version_ranges():
    assert set(REQUESTS) == set(RESPONSES)
    for key, req in REQUESTS.items():
        assert req.valid == RESPONSES[key].valid, key


def test_flexible_versions_and_tagged_fields_are_recorded():
    fetch = SPECS["FetchResponse"]
    assert fetch.api_key == 1 and fetch.valid == (0, 18) and fetch.flexible_from == 12
    partition = fetch.fields[3].struct.fields[-1].struct  # responses -> partitions
    tagged = {f.name: f.tag for f in partition.fields if f.tagged}
    assert tagged == {"DivergingEpoch": 0, "CurrentLeader": 1, "SnapshotId": 2}
    header = SPECS["RequestHeader"]
    client_id = [f for f in header.fields if f.name == "ClientId"][0]
    assert client_id.flexible == () and client_id.nullable == (1, None)


def test_coordinator_record_schemas_are_in_the_table():
    for name in ("OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue"):
        assert SPECS[name].kind in ("coordinator-key", "coordinator-value")
    assert SPECS["OffsetCommitKey"].api_key == 1 and SPECS["GroupMetadataKey"].api_key == 2
