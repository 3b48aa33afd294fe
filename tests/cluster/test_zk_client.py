"""kbroker.zk.zk_client against a real ZooKeeper: broker registration, start-up failures and
reconnection after a ZooKeeper restart."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from cluster import znodes
from cluster.coordination import NodeExistsError, SessionState
from kbroker.zk.zk_client import ZkClient, ZkConnectionTimeoutError
from tests.support.zookeeper_process import ROOT, ZooKeeperProcess, free_port


def registration(broker_id: int, port: int) -> znodes.BrokerRegistration:
    return znodes.BrokerRegistration(
        broker_id, (znodes.EndPoint("PLAINTEXT", "127.0.0.1", port),), timestamp_ms=1
    )


def test_broker_registration_writes_kafkas_json_and_returns_the_czxid_as_broker_epoch(zookeeper):
    async def main():
        c = ZkClient(zookeeper.connect_string, session_timeout_ms=4000, connection_timeout_ms=30000)
        await c.start()
        try:
            epoch = await c.register_broker(registration(101, 9092))
            data, stat = await c.get("/brokers/ids/101")
            assert data == znodes.encode_broker(registration(101, 9092))
            assert epoch == stat.czxid > 0 and stat.ephemeral_owner == c.session_id
        finally:
            await c.close()

    asyncio.run(main())


def test_a_broker_id_registered_by_another_live_broker_is_refused_with_kafkas_message(zookeeper):
    async def main():
        a = ZkClient(zookeeper.connect_string, session_timeout_ms=4000, connection_timeout_ms=30000)
        b = ZkClient(zookeeper.connect_string, session_timeout_ms=4000, connection_timeout_ms=30000)
        await a.start()
        await b.start()
        try:
            await a.register_broker(registration(102, 9092))
            with pytest.raises(NodeExistsError, match=r"Error while creating ephemeral at "
                               r"/brokers/ids/102, node already exists and owner '\d+' does "
                               r"not match current session '\d+'"):
                await b.register_broker(registration(102, 9999))
        finally:
            await a.close()
            await b.close()

    asyncio.run(main())


def test_a_restarted_broker_waits_out_its_killed_predecessors_registration(zookeeper):
    # The predecessor registers from its own process and is killed with SIGKILL: its session
    # lives on until ZooKeeper expires it (2 s here), and only then is the id free again.
    code = (
        "import asyncio, sys\n"
        "from kbroker.zk.zk_client import ZkClient\n"
        "from tests.cluster.test_zk_client import registration\n"
        "async def main():\n"
        f"    c = ZkClient({zookeeper.connect_string!r}, session_timeout_ms=2000, connection_timeout_ms=30000)\n"
        "    await c.start()\n"
        "    await c.register_broker(registration(103, 9092))\n"
        "    print('registered', flush=True)\n"
        "    await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "registered"
    finally:
        proc.kill()
        proc.wait()

    async def main():
        new = ZkClient(zookeeper.connect_string, session_timeout_ms=2000, connection_timeout_ms=30000)
        await new.start()
        try:
            epoch = await new.register_broker(registration(103, 9092))
            _, stat = await new.get("/brokers/ids/103")
            assert stat.ephemeral_owner == new.session_id and epoch == stat.czxid
        finally:
            await new.close()

    asyncio.run(main())


def test_an_unreachable_zookeeper_fails_start_after_the_connection_timeout():
    async def main():
        c = ZkClient(f"127.0.0.1:{free_port()}", session_timeout_ms=2000, connection_timeout_ms=1500)
        t0 = time.monotonic()
        with pytest.raises(ZkConnectionTimeoutError, match="within 1500 ms"):
            await c.start()
        return time.monotonic() - t0

    assert asyncio.run(main()) >= 1.4


def test_a_zookeeper_down_for_longer_than_the_session_timeout_is_reconnected_to_at_once_on_the_same_session(
        tmp_path):
    # Issue 28: kazoo's default pause between reconnection attempts doubles up to an hour;
    # after 14 s down the next attempt came seconds after ZooKeeper was back - later than the
    # session timeout, so the session (and the broker's registration, and the controller's
    # CreateTopics in flight) was lost.  ZooKeeper's own client tries again within a second.
    zk = ZooKeeperProcess(tmp_path / "zk").start()
    try:
        async def main() -> tuple[float, list[SessionState]]:
            c = ZkClient(zk.connect_string, session_timeout_ms=6000, connection_timeout_ms=30000)
            states: list[SessionState] = []
            back = asyncio.Event()

            def on_state(s: SessionState) -> None:
                states.append(s)
                if s is SessionState.CONNECTED:
                    back.set()

            await c.start()
            c.add_session_listener(on_state)
            try:
                session = c.session_id
                zk.stop()
                await asyncio.sleep(14)
                await asyncio.get_running_loop().run_in_executor(None, zk.start)
                serving = time.monotonic()
                await asyncio.wait_for(back.wait(), 30)
                reconnected_after = time.monotonic() - serving
                assert c.session_id == session
                assert await c.exists("/") is not None
                return reconnected_after, states
            finally:
                await c.close()

        reconnected_after, states = asyncio.run(main())
        assert states[:2] == [SessionState.SUSPENDED, SessionState.CONNECTED]  # never LOST
        assert reconnected_after < 3.0
    finally:
        zk.stop()
