"""A cluster on the in-memory ZooKeeper driven through the pure controller.

Brokers register ephemeral ``/brokers/ids/<id>`` znodes on their own sessions (so their
epoch is a real czxid); an admin session writes topics as ``AdminZkClient`` does; the
controller's output is applied as the runner must apply it (writes in order with
``zk_io.execute``, stop and report at the first failure, requests only after every write).
The fake store never suspends, so the coroutines are driven synchronously.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from cluster import znodes
from cluster.controller import (
    BrokerChange,
    BrokerRequest,
    Controller,
    ControllerConfig,
    ControllerElection,
    ControllerOutput,
    Event,
    TopicChange,
    TopicDeletion,
    election_ops,
)
from cluster.controller.zk_io import execute, read_brokers, read_cluster, read_topics
from cluster.coordination import Create
from cluster.fake_store import FakeSession, FakeZooKeeper
from wire.messages import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("the fake store suspended")


def topic_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=0xABC000 + n)


class Cluster:
    def __init__(self, broker_ids: Sequence[int], controller_id: int = 1,
                 unclean: Mapping[str, bool] | None = None) -> None:
        self.zk = FakeZooKeeper()
        self.admin = self.zk.session()
        for path in znodes.PERSISTENT_PATHS:
            self.admin.create_now(path, make_parents=True)
        self.broker_sessions: dict[int, FakeSession] = {}
        self.unclean = dict(unclean or {})
        self._ids = 0
        for b in broker_ids:
            self.register(b)
        self.controller_id = controller_id
        self.sent: list[BrokerRequest] = []
        self.controller, self.session = self.new_controller()

    # -- the controller ------------------------------------------------------------------

    def _next_topic_id(self) -> uuid.UUID:
        self._ids += 1
        return topic_id(1000 + self._ids)

    def new_controller(self) -> tuple[Controller, FakeSession]:
        """Elect a fresh controller (Kafka's election multi) and feed it BecameController.

        The previous controller's session expires first (its ``/controller`` goes); the
        previous ``Controller`` object is not told, as a zombie would not be.
        """
        if getattr(self, "session", None) is not None:
            self.zk.expire(self.session)
        session = self.zk.session()
        stat = run(session.exists(znodes.CONTROLLER_EPOCH_PATH))
        epoch = 0 if stat is None else znodes.decode_controller_epoch(
            run(session.get(znodes.CONTROLLER_EPOCH_PATH))[0])
        seen = ControllerElection(epoch, -1 if stat is None else stat.version)
        session.multi_now(election_ops(self.controller_id, 1700000000000, seen))
        controller = Controller(ControllerConfig(
            broker_id=self.controller_id,
            unclean_leader_election_enable=lambda t: self.unclean.get(t, False),
            new_topic_id=self._next_topic_id,
        ))
        self.controller, self.session = controller, session
        self.feed(run(read_cluster(session, seen.new_epoch, seen.new_epoch_zk_version)))
        return controller, session

    def feed(self, event: Event, controller: Controller | None = None,
             session: FakeSession | None = None) -> ControllerOutput:
        controller = controller or self.controller
        session = session or self.session
        out = controller.handle(event)
        for write in out.writes:
            result = run(execute(session, write))
            if result.error is not None:
                resign = controller.handle(result)
                out.resigned = resign.resigned
                return out
        self.sent.extend(out.requests)
        return out

    # -- brokers and topics --------------------------------------------------------------

    def register(self, broker_id: int) -> None:
        session = self.zk.session()
        reg = znodes.BrokerRegistration(
            broker_id, (znodes.EndPoint("PLAINTEXT", "localhost", 9091 + broker_id),),
            timestamp_ms=1700000000000)
        session.create_now(znodes.broker_path(broker_id), znodes.encode_broker(reg), ephemeral=True)
        self.broker_sessions[broker_id] = session

    def kill(self, broker_id: int) -> None:
        self.zk.expire(self.broker_sessions.pop(broker_id))

    def broker_change(self) -> ControllerOutput:
        return self.feed(BrokerChange(run(read_brokers(self.session))))

    def create_topic(self, name: str, assignment: Mapping[int, Sequence[int]],
                     with_id: bool = True) -> ControllerOutput:
        ta = znodes.TopicAssignment({p: tuple(r) for p, r in assignment.items()},
                                    topic_id(len(name)) if with_id else None)
        self.admin.multi_now([Create(znodes.topic_path(name), znodes.encode_topic(ta))])
        return self.feed(TopicChange(run(read_topics(self.session))))

    def delete_topic(self, name: str) -> ControllerOutput:
        self.admin.create_now(znodes.delete_topic_path(name))
        return self.feed(TopicDeletion(frozenset(run(self.session.children(znodes.DELETE_TOPICS_PATH)))))

    # -- reading the store ---------------------------------------------------------------

    def state(self, topic: str, partition: int) -> tuple[znodes.PartitionState, int]:
        data, stat = run(self.admin.get(znodes.partition_state_path(topic, partition)))
        return znodes.decode_partition_state(data), stat.version

    def exists(self, path: str) -> bool:
        return run(self.admin.exists(path)) is not None

    def take_sent(self) -> list[BrokerRequest]:
        sent, self.sent = self.sent, []
        return sent


def of_type(requests: Sequence[BrokerRequest], cls: type) -> list[BrokerRequest]:
    return [r for r in requests if isinstance(r.message, cls)]


def lai_partitions(req: BrokerRequest) -> dict[tuple[str, int], Any]:
    assert isinstance(req.message, LeaderAndIsrRequest)
    return {(t.topic_name, p.partition_index): p for t in req.message.topic_states for p in t.partition_states}


def um_partitions(req: BrokerRequest) -> dict[tuple[str, int], Any]:
    assert isinstance(req.message, UpdateMetadataRequest)
    return {(t.topic_name, p.partition_index): p for t in req.message.topic_states for p in t.partition_states}


def sr_partitions(req: BrokerRequest) -> dict[tuple[str, int], Any]:
    assert isinstance(req.message, StopReplicaRequest)
    return {(t.topic_name, p.partition_index): p for t in req.message.topic_states for p in t.partition_states}


def assert_store_matches_context(cluster: Cluster) -> None:
    """Every partition state znode equals the controller's context, and vice versa."""
    ctx = cluster.controller.context
    assert ctx is not None
    in_store = {}
    for topic in run(cluster.admin.children(znodes.TOPICS_PATH)):
        if not cluster.exists(znodes.partitions_path(topic)):
            continue
        for p in run(cluster.admin.children(znodes.partitions_path(topic))):
            if cluster.exists(znodes.partition_state_path(topic, int(p))):
                in_store[(topic, int(p))] = cluster.state(topic, int(p))
    assert set(in_store) == set(ctx.leadership)
    for tp, (state, version) in in_store.items():
        lic = ctx.leadership[tp]
        lai = lic.leader_and_isr
        assert (state.leader, state.leader_epoch, state.isr, state.controller_epoch,
                state.leader_recovery_state, version) == (
            lai.leader, lai.leader_epoch, lai.isr, lic.controller_epoch,
            lai.leader_recovery_state, lai.partition_epoch), tp
