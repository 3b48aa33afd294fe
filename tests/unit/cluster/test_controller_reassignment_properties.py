"""Reassignments started, replaced and cancelled while followers catch up, brokers die and
return and the controller fails over, on the fake ZooKeeper: the store always equals the
controller's context, and every reassignment the ISR allows completes to its target."""

from __future__ import annotations

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cluster import znodes
from cluster.controller import AlterPartition, ApiPartitionReassignment
from tests.support.controller_harness import Cluster, assert_store_matches_context, run
from tests.unit.cluster.test_controller_alter_partition import request
from wire.error_codes import ErrorCode

BROKERS = (1, 2, 3, 4, 5)
PARTITIONS = (0, 1)


class ReassignmentMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.c = Cluster(BROKERS)
        self.c.create_topic("t", {0: [1, 2, 3], 1: [3, 4, 5]})

    @rule(broker=st.sampled_from(BROKERS))
    def broker_dies(self, broker: int) -> None:
        if broker in self.c.broker_sessions and len(self.c.broker_sessions) > 2:
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

    @rule(partition=st.sampled_from(PARTITIONS), data=st.data())
    def an_admin_reassigns(self, partition: int, data: st.DataObject) -> None:
        target = tuple(data.draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3, unique=True)))
        out = self.c.feed(ApiPartitionReassignment({("t", partition): target}))
        code, _ = out.reassignments[("t", partition)]
        live = self.c.controller.context.live_broker_ids()
        before = self.c.controller.context.assignments[("t", partition)]
        event(f"reassign {ErrorCode(code).name}")
        if code == ErrorCode.NONE:
            assert set(before.adding) <= live | set(target)
        else:
            assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT

    @rule(partition=st.sampled_from(PARTITIONS))
    def an_admin_cancels(self, partition: int) -> None:
        out = self.c.feed(ApiPartitionReassignment({("t", partition): None}))
        event(f"cancel {ErrorCode(out.reassignments[('t', partition)][0]).name}")

    @rule(partition=st.sampled_from(PARTITIONS))
    def the_live_replicas_catch_up(self, partition: int) -> None:
        """The leader adds every live replica of the (full) assignment to the ISR."""
        c = self.c
        ctx = c.controller.context
        tp = ("t", partition)
        state, version = c.state(*tp)
        if state.leader == -1 or state.leader not in ctx.live_broker_ids():
            return
        isr = [state.leader] + [r for r in ctx.assignments[tp].replicas
                                if r != state.leader and r in ctx.live_broker_ids()]
        req = request(c, state.leader, "t", partition, state.leader_epoch, isr, version,
                      isr_epochs=[ctx.broker_epoch(b) for b in isr])
        out = c.feed(AlterPartition(req, 3))
        code = out.alter_partition.topics[0].partitions[0].error_code
        event(f"catch up {ErrorCode(code).name}")
        assert code == ErrorCode.NONE
        a = c.controller.context.assignments[tp]
        if not a.is_being_reassigned:
            event("reassignment complete")

    @invariant()
    def the_store_matches_the_context_and_assignments_are_coherent(self) -> None:
        c = self.c
        ctx = c.controller.context
        assert ctx is not None
        assert_store_matches_context(c)
        znode = znodes.decode_topic(run(c.admin.get(znodes.topic_path("t")))[0])
        for p in PARTITIONS:
            tp = ("t", p)
            a = ctx.assignments[tp]
            assert (znode.partitions[p], tuple(znode.adding_replicas.get(p, ())),
                    tuple(znode.removing_replicas.get(p, ()))) == (a.replicas, a.adding, a.removing)
            assert (tp in ctx.partitions_being_reassigned) == a.is_being_reassigned
            assert set(a.adding) <= set(a.replicas) and set(a.removing) <= set(a.replicas)
            assert not set(a.adding) & set(a.removing)
            state, _ = c.state(*tp)
            assert state.isr
            assert state.leader == -1 or state.leader in state.isr
            # The ISR stays within the replicas, except Kafka's never-empty rule can leave a
            # removed replica as the sole, leaderless member.
            assert set(state.isr) <= set(a.replicas) or (state.leader == -1 and len(state.isr) == 1)


ReassignmentMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_reassignments_against_kafkas_invariants = ReassignmentMachine.TestCase
