"""A controller's writes are fenced by the /controller_epoch version (fake store)."""

from __future__ import annotations

import pytest

from cluster import znodes
from cluster.controller import ControllerElection, election_ops, fenced
from cluster.coordination import BadVersionError, MultiError, NodeExistsError, SetData
from cluster.fake_store import FakeZooKeeper


def elect(session, broker_id: int) -> ControllerElection:
    stat = session._server._exists(znodes.CONTROLLER_EPOCH_PATH, None)
    seen = ControllerElection(
        epoch=0 if stat is None else znodes.decode_controller_epoch(
            session._server._get(znodes.CONTROLLER_EPOCH_PATH, None)[0]),
        epoch_zk_version=-1 if stat is None else stat.version,
    )
    session.multi_now(election_ops(broker_id, 1700000000000, seen))
    return seen


def test_a_deposed_controllers_write_fails_the_epoch_check_and_changes_nothing():
    zk = FakeZooKeeper()
    b1, b2 = zk.session(), zk.session()
    b1.create_now("/brokers/topics/t/partitions/0/state", b"v0", make_parents=True)
    first = elect(b1, 1)
    assert first.new_epoch == 1 and first.new_epoch_zk_version == 0
    b1.multi_now(fenced(first.new_epoch_zk_version,
                        [SetData("/brokers/topics/t/partitions/0/state", b"by-1")]))

    zk.expire(b1)  # controller 1's session ends (it is not told yet: a zombie)
    second = elect(b2, 2)
    assert second.new_epoch == 2 and zk.dump()["/controller_epoch"] == b"2"
    assert znodes.decode_controller(zk.dump()["/controller"]) == 2

    zombie = zk.session()  # controller 1's state, on any session, with its old token
    with pytest.raises(MultiError) as info:
        zombie.multi_now(fenced(first.new_epoch_zk_version,
                                [SetData("/brokers/topics/t/partitions/0/state", b"by-zombie")]))
    assert info.value.index == 0 and isinstance(info.value.cause, BadVersionError)
    assert zk.dump()["/brokers/topics/t/partitions/0/state"] == b"by-1"
    b2.multi_now(fenced(second.new_epoch_zk_version,
                        [SetData("/brokers/topics/t/partitions/0/state", b"by-2")]))
    assert zk.dump()["/brokers/topics/t/partitions/0/state"] == b"by-2"


def test_a_second_broker_loses_the_election_while_the_controller_lives():
    zk = FakeZooKeeper()
    b1, b2 = zk.session(), zk.session()
    seen = elect(b1, 1)
    with pytest.raises(MultiError) as info:
        b2.multi_now(election_ops(2, 1, ControllerElection(1, seen.new_epoch_zk_version)))
    assert isinstance(info.value.cause, NodeExistsError)
    assert zk.dump()["/controller_epoch"] == b"1"
