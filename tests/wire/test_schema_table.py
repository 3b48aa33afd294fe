"""The committed schema table is exactly what the generator makes of Kafka's schemas,
and it keeps facts only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wire.codegen.__main__ import OUT, generate
from wire.schema import REQUESTS, RESPONSES, SPECS

SHARED = Path(os.environ.get("KBROKER_SCHEMAS", Path(__file__).resolve().parents[2] / ".." / "shared" / "kafka-protocol"))


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no Kafka schema folder at {SHARED} (only in the dev checkout)")
def test_committed_generated_files_equal_a_fresh_generation_from_the_schemas():
    for name, text in generate(SHARED).items():
        assert (OUT / name).read_text() == text, f"{name} is stale: run `make gen`"


def test_the_table_holds_no_about_texts():
    text = (OUT / "schema_table.py").read_text()
    assert "'about'" not in text and '"about"' not in text


def test_requests_and_responses_pair_up_with_equal_version_ranges():
    assert set(REQUESTS) == set(RESPONSES)
    for key, req in REQUESTS.items():
        assert req.valid == RESPONSES[key].valid, key


def test_flexible_versions_and_tagged_fields_are_recorded():
    fetch = SPECS["FetchResponse"]
    assert fetch.api_key == 1 and fetch.valid == (0, 17) and fetch.flexible_from == 12
    partition = fetch.fields[3].struct.fields[-1].struct  # responses -> partitions
    tagged = {f.name: f.tag for f in partition.fields if f.tagged}
    assert tagged == {"DivergingEpoch": 0, "CurrentLeader": 1, "SnapshotId": 2}
    header = SPECS["RequestHeader"]
    client_id = [f for f in header.fields if f.name == "ClientId"][0]
    assert client_id.flexible == () and client_id.nullable == (1, None)


def test_coordinator_record_schemas_are_in_the_table():
    for name in ("OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue"):
        assert SPECS[name].kind == "data"
