"""Producer ids in cluster mode come in blocks of 1000 claimed in ZooKeeper's
``/latest_producer_id_block`` with Kafka's JSON, so no two brokers hand out the same id
(a file per broker did: two idempotent producers on different brokers got one id and
broke each other's sequences)."""

from __future__ import annotations

import asyncio

import pytest

from cluster import znodes
from cluster.fake_store import FakeZooKeeper
from kbroker.coordinators.producer_ids import BLOCK_SIZE, ProducerIdsNotReady, ZkProducerIdManager


async def _settle(manager: ZkProducerIdManager) -> None:
    while manager._task is not None and not manager._task.done():
        await asyncio.sleep(0)


def test_brokers_claim_consecutive_blocks_in_kafkas_json_and_never_share_an_id():
    async def main() -> None:
        server = FakeZooKeeper()
        admin = server.session()
        await admin.create(znodes.PRODUCER_ID_BLOCK_PATH, b"")  # as Kafka's top-level paths
        one, two = ZkProducerIdManager(server.session(), 1), ZkProducerIdManager(server.session(), 2)
        with pytest.raises(ProducerIdsNotReady):
            one.generate()  # the first block is being claimed: clients retry
        two.start()
        await _settle(one)
        await _settle(two)
        data, _ = await admin.get(znodes.PRODUCER_ID_BLOCK_PATH)
        assert data == b'{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}'
        ids_one = [one.generate() for _ in range(BLOCK_SIZE)]
        ids_two = [two.generate() for _ in range(BLOCK_SIZE)]
        assert ids_one == list(range(0, 1000)) and ids_two == list(range(1000, 2000))
        # 90 % into its block each claimed the next one already
        await _settle(one)
        await _settle(two)
        more = {one.generate(), two.generate()}
        assert more == {2000, 3000}
        assert znodes.decode_producer_id_block((await admin.get(znodes.PRODUCER_ID_BLOCK_PATH))[0]) \
            == znodes.ProducerIdBlock(2, 3000, 3999)

    asyncio.run(main())


def test_a_claim_that_races_another_brokers_reads_again_and_takes_the_next_block():
    async def main() -> None:
        server = FakeZooKeeper()
        managers = [ZkProducerIdManager(server.session(), b) for b in (1, 2, 3)]
        blocks = await asyncio.gather(*(m.claim_block() for m in managers))
        assert sorted(blocks) == [(0, 1000), (1000, 2000), (2000, 3000)]

    asyncio.run(main())
