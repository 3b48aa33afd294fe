"""Leaders' AlterPartition requests, fresh or stale, from the leader or not, interleaved with
broker failures, returns and controller failovers, against the controller on the fake
ZooKeeper: every answer is checked against a plain model of Kafka's rules, and the store
against the controller's context after every step."""

from __future__ import annotations

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cluster.controller import AlterPartition
from tests.support.controller_harness import Cluster, assert_store_matches_context, run
from tests.unit.cluster.test_controller_alter_partition import request
from wire.error_codes import ErrorCode

BROKERS = (1, 2, 3, 4)
ASSIGNMENT = {0: (1, 2, 3), 1: (2, 3, 4), 2: (4, 1)}


class AlterPartitionMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.c = Cluster(BROKERS)
        self.c.create_topic("t", ASSIGNMENT)
        self.committed = 0

    @rule(broker=st.sampled_from(BROKERS))
    def broker_dies(self, broker: int) -> None:
        if broker in self.c.broker_sessions and len(self.c.broker_sessions) > 1:
            self.c.kill(broker)
            self.c.broker_change()

    @rule(broker=st.sampled_from(BROKERS))
    def broker_returns(self, broker: int) -> None:
        if broker not in self.c.broker_sessions:
            self.c.register(broker)
            self.c.broker_change()

    @rule()
    def controller_fails_over(self) -> None:
        self.c.new_controller()

    @rule(partition=st.sampled_from(sorted(ASSIGNMENT)), data=st.data())
    def a_broker_asks_for_an_isr(self, partition: int, data: st.DataObject) -> None:
        c = self.c
        before, version = c.state("t", partition)
        live = set(c.broker_sessions)
        sender = data.draw(st.sampled_from(sorted(live)), label="sender")
        # Usually the leader with what it was told; sometimes a stale or wrong view.
        leader_epoch = before.leader_epoch - data.draw(st.sampled_from([0, 0, 0, 1, -1]), label="epoch lag")
        partition_epoch = version - data.draw(st.sampled_from([0, 0, 0, 1, -1]), label="version lag")
        replicas = ASSIGNMENT[partition]
        isr = data.draw(st.lists(st.sampled_from(replicas), unique=True, max_size=len(replicas)), label="isr")
        if sender in replicas and sender not in isr and data.draw(st.booleans(), label="leader first"):
            isr = [sender, *isr]
        ctx = c.controller.context
        req = request(c, sender, "t", partition, leader_epoch, isr, partition_epoch,
                      isr_epochs=[ctx.broker_epoch(b) for b in isr])
        out = c.feed(AlterPartition(req, 3))
        [p] = out.alter_partition.topics[0].partitions
        after, new_version = c.state("t", partition)
        expected = self._model(before, version, sender, leader_epoch, partition_epoch, isr, live)
        event(f"answer {ErrorCode(expected).name}")
        assert p.error_code == expected, (before, version, sender, leader_epoch, partition_epoch, isr, live)
        if expected == ErrorCode.NONE:
            assert (p.leader_id, p.leader_epoch, p.isr, p.partition_epoch) == (
                after.leader, after.leader_epoch, list(after.isr), new_version)
            assert after.leader_epoch == before.leader_epoch  # a leader's change keeps the epoch
            self.committed += 1
        else:
            assert (after, new_version) == (before, version)

    @staticmethod
    def _model(before, version, sender, leader_epoch, partition_epoch, isr, live) -> int:  # noqa: ANN001
        if partition_epoch > version or leader_epoch > before.leader_epoch:
            return ErrorCode.NOT_CONTROLLER
        if leader_epoch < before.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if sender != before.leader:
            return ErrorCode.INVALID_REQUEST
        if tuple(isr) == before.isr:
            return ErrorCode.NONE
        if partition_epoch < version:
            return ErrorCode.INVALID_UPDATE_VERSION
        if not isr or before.leader not in isr:
            return ErrorCode.INVALID_REQUEST
        if not set(isr) <= live:
            return ErrorCode.INELIGIBLE_REPLICA
        return ErrorCode.NONE

    @invariant()
    def the_store_is_what_the_controller_believes_and_every_isr_is_sound(self) -> None:
        assert_store_matches_context(self.c)
        for p, replicas in ASSIGNMENT.items():
            state, _ = self.c.state("t", p)
            assert state.isr and set(state.isr) <= set(replicas)
            assert state.leader == -1 or state.leader in state.isr
        assert run(self.c.session.exists("/controller")) is not None


AlterPartitionMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_alter_partition_against_a_model_of_kafkas_rules = AlterPartitionMachine.TestCase
