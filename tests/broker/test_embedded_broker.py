"""kbroker.Broker runs in-process, from synchronous code and from asyncio."""

from __future__ import annotations

import asyncio

from kbroker import Broker
from kbroker.client import Connection
from wire.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse


def _call(bootstrap: str, msg, version: int, resp_cls, correlation_id: int = 7):
    host, port = bootstrap.rsplit(":", 1)
    with Connection.open(host, int(port), client_id="test", timeout_s=10, negotiate=False) as c:
        c.send(msg, version, correlation_id)
        return c.receive(resp_cls, version)


def test_a_synchronous_embedded_broker_answers_api_versions_and_stops(tmp_path):
    with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}) as b:
        assert b.bootstrap_servers.startswith("127.0.0.1:") and not b.bootstrap_servers.endswith(":0")
        cid, resp = _call(b.bootstrap_servers, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, ApiVersionsResponse)
        assert cid == 7 and resp.error_code == 0
        keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert keys[0] == (0, 9) and keys[1] == (4, 17) and keys[18] == (0, 4)
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "meta.properties").exists()


def test_an_asyncio_embedded_broker_auto_creates_a_topic_through_metadata(tmp_path):
    async def main():
        async with Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                           "num.partitions": "3"}) as b:
            loop = asyncio.get_running_loop()
            return b.port, await loop.run_in_executor(
                None, _call, b.bootstrap_servers,
                MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto")]), 12,
                MetadataResponse)

    port, (_, resp) = asyncio.run(main())
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(1, "127.0.0.1", port)]
    assert resp.controller_id == 1 and resp.cluster_id
    [topic] = resp.topics
    assert (topic.error_code, topic.name, topic.is_internal) == (0, "auto", False)
    assert [(p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes)
            for p in topic.partitions] == [(i, 1, 0, [1], [1]) for i in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["auto-0", "auto-1", "auto-2"]


def test_the_cluster_id_survives_a_restart(tmp_path):
    ids = []
    for _ in range(2):
        with Broker.start({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}) as b:
            ids.append(_call(b.bootstrap_servers, MetadataRequest(topics=[]), 12, MetadataResponse)[1].cluster_id)
    assert ids[0] == ids[1] and len(ids[0]) == 22
