"""Dynamic broker configs through ZooKeeper (the change by kbroker/zk/zk_config_admin.py,
kbroker/zk/broker_config_sync.py and the /config/changes listener of
kbroker/zk/topic_config_sync.py) over the in-memory ZooKeeper: which notifications a broker
applies, what it reads at start-up, the znodes' JSON, and the purge of notifications older
than 15 minutes."""

from __future__ import annotations

import asyncio
import json

import pytest

from cluster import znodes
from cluster.fake_store import FakeZooKeeper
from kbroker.configs.config import BrokerConfig
from kbroker.metadata.metadata_cache import MetadataCache
from kbroker.replica.broker_state import BrokerState
from kbroker.zk.topic_config_sync import CHANGE_EXPIRATION_MS, ConfigChangeListener
from kbroker.zk.zk_config_admin import ZkConfigAdmin

DEFAULT_MAX = 1048588  # Kafka's message.max.bytes default


class Clock:
    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def zk(clock: Clock) -> FakeZooKeeper:
    server = FakeZooKeeper(now_ms=clock)
    s = server.session()
    for path in znodes.PERSISTENT_PATHS:
        if path not in server.dump():
            s.create_now(path, make_parents=True)
    return server


_STATES: list[BrokerState] = []


@pytest.fixture(autouse=True)
def _shutdown_states():
    yield
    while _STATES:
        _STATES.pop().shutdown()


def _state(tmp_path, node_id: int) -> BrokerState:
    state = BrokerState(BrokerConfig({"node.id": str(node_id), "log.dirs": str(tmp_path / f"b{node_id}")}))
    _STATES.append(state)
    return state


def _run(coro):
    return asyncio.run(coro)


async def _alter(state: BrokerState, session, resource_name: str, props: dict[str, str]) -> None:
    """What AlterConfigs on a BROKER resource does in cluster mode once validated: the
    level applied here, its file and then ZooKeeper written (the entity, the notification)."""
    admin = ZkConfigAdmin(state, session, MetadataCache(state.node_id))
    for stored in admin.set_broker_level(resource_name, props):
        await asyncio.wrap_future(stored)


def _notifications(server: FakeZooKeeper) -> list[str]:
    prefix = znodes.CONFIG_CHANGES_PATH + "/"
    return sorted(p[len(prefix):] for p in server.dump() if p.startswith(prefix))


def test_a_cluster_default_set_on_one_broker_is_applied_by_another_through_its_notification(tmp_path, zk):
    one, two = _state(tmp_path, 1), _state(tmp_path, 2)

    async def scenario() -> None:
        listener = ConfigChangeListener(two, zk.session())
        await listener.start()
        await _alter(one, zk.session(), "", {"message.max.bytes": "2000"})
        await listener._process()

    _run(scenario())
    assert two.dynamic_configs.level("") == {"message.max.bytes": "2000"}
    assert two.config["message.max.bytes"] == 2000
    assert two.topic_configs.defaults.max_message_bytes == 2000


def test_the_znodes_hold_kafkas_json(tmp_path, zk):
    one = _state(tmp_path, 1)
    _run(_alter(one, zk.session(), "", {"log.retention.ms": "60000"}))
    _run(_alter(one, zk.session(), "1", {"message.max.bytes": "3000"}))
    dump = zk.dump()
    assert json.loads(dump["/config/brokers/<default>"]) == {"version": 1, "config": {"log.retention.ms": "60000"}}
    assert json.loads(dump["/config/brokers/1"]) == {"version": 1, "config": {"message.max.bytes": "3000"}}
    changes = [json.loads(dump[f"{znodes.CONFIG_CHANGES_PATH}/{c}"]) for c in _notifications(zk)]
    assert changes == [{"version": 2, "entity_path": "brokers/<default>"},
                       {"version": 2, "entity_path": "brokers/1"}]


def test_a_broker_applies_its_own_ids_level_and_ignores_another_brokers(tmp_path, zk):
    one, two = _state(tmp_path, 1), _state(tmp_path, 2)

    async def scenario() -> None:
        listener = ConfigChangeListener(two, zk.session())
        await listener.start()
        await _alter(one, zk.session(), "1", {"message.max.bytes": "3000"})
        await listener._process()
        assert two.dynamic_configs.level("2") == {}
        assert two.config["message.max.bytes"] == DEFAULT_MAX
        await _alter(two, zk.session(), "2", {"message.max.bytes": "4000"})
        await _alter(one, zk.session(), "", {"message.max.bytes": "2000"})
        await listener._process()

    _run(scenario())
    # per-broker dynamic beats the cluster default
    assert two.dynamic_configs.level("") == {"message.max.bytes": "2000"}
    assert two.config["message.max.bytes"] == 4000


def test_a_starting_broker_reads_both_levels_and_drops_what_it_cannot_apply(tmp_path, zk):
    s = zk.session()
    s.create_now("/config/brokers/<default>", znodes.encode_config(
        {"log.retention.ms": "60000", "broker.rack": "r1", "message.max.bytes": "x"}), make_parents=True)
    s.create_now("/config/brokers/3", znodes.encode_config({"log.retention.ms": "120000"}), make_parents=True)
    three = _state(tmp_path, 3)
    _run(ConfigChangeListener(three, zk.session()).start())
    assert three.dynamic_configs.level("") == {"log.retention.ms": "60000"}
    assert three.dynamic_configs.level("3") == {"log.retention.ms": "120000"}
    assert three.topic_configs.defaults.retention_ms == 120000
    # the local file mirrors ZooKeeper: a restart opens its logs with the same values
    three.dynamic_configs.close()
    assert json.loads((tmp_path / "b3" / "kbroker-broker-configs.json").read_text()) == {
        "": {"log.retention.ms": "60000"}, "3": {"log.retention.ms": "120000"}}


def test_a_deleted_level_is_removed_on_every_broker(tmp_path, zk):
    one, two = _state(tmp_path, 1), _state(tmp_path, 2)

    async def scenario() -> None:
        listener = ConfigChangeListener(two, zk.session())
        await listener.start()
        await _alter(one, zk.session(), "", {"message.max.bytes": "2000"})
        await listener._process()
        assert two.config["message.max.bytes"] == 2000
        await _alter(one, zk.session(), "", {})
        await listener._process()

    _run(scenario())
    assert two.dynamic_configs.level("") == {}
    assert two.config["message.max.bytes"] == DEFAULT_MAX


def test_notifications_older_than_fifteen_minutes_are_purged_and_newer_ones_kept(tmp_path, zk, clock):
    one, two = _state(tmp_path, 1), _state(tmp_path, 2)

    async def scenario() -> None:
        listener = ConfigChangeListener(two, zk.session(), now_ms=clock)
        await listener.start()
        await _alter(one, zk.session(), "", {"message.max.bytes": "2000"})
        old = _notifications(zk)
        clock.ms += CHANGE_EXPIRATION_MS  # exactly 15 minutes: not older yet
        await _alter(one, zk.session(), "", {"message.max.bytes": "3000"})
        await listener._process()
        assert len(_notifications(zk)) == 2
        clock.ms += 1
        await _alter(one, zk.session(), "1", {"message.max.bytes": "5000"})
        await listener._process()
        assert old[0] not in _notifications(zk)
        assert len(_notifications(zk)) == 2

    _run(scenario())
    assert two.config["message.max.bytes"] == 3000


def test_a_broker_starting_after_old_notifications_purges_them(tmp_path, zk, clock):
    one = _state(tmp_path, 1)
    _run(_alter(one, zk.session(), "", {"message.max.bytes": "2000"}))
    assert len(_notifications(zk)) == 1
    clock.ms += CHANGE_EXPIRATION_MS + 1
    two = _state(tmp_path, 2)
    _run(ConfigChangeListener(two, zk.session(), now_ms=clock).start())
    assert _notifications(zk) == []
    assert two.config["message.max.bytes"] == 2000  # read from the entity at start-up
