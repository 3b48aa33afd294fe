"""Random broker failures, returns, topic creations, controlled shutdowns, elections and
controller failovers against the controller on the fake ZooKeeper, with Kafka's invariants
checked after every step."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cluster.controller import ControlledShutdown, ReplicaLeaderElection
from tests.support.controller_harness import Cluster, assert_store_matches_context

BROKERS = (1, 2, 3, 4)


class ControllerMachine(RuleBasedStateMachine):
    @initialize(unclean=st.booleans())
    def start(self, unclean: bool) -> None:
        self.unclean = unclean
        self.c = Cluster(BROKERS)
        self.topics = 0
        # partition -> (leader, leader_epoch, isr) at the last check
        self.seen: dict[tuple[str, int], tuple[int, int, tuple[int, ...]]] = {}

    @rule(broker=st.sampled_from(BROKERS))
    def broker_dies(self, broker: int) -> None:
        if broker in self.c.broker_sessions:
            self.c.kill(broker)
            self.c.broker_change()

    @rule(broker=st.sampled_from(BROKERS))
    def broker_returns(self, broker: int) -> None:
        if broker not in self.c.broker_sessions:
            self.c.register(broker)
            self.c.broker_change()

    @rule(broker=st.sampled_from(BROKERS))
    def broker_shuts_down_cleanly(self, broker: int) -> None:
        if broker in self.c.broker_sessions:
            out = self.c.feed(ControlledShutdown(broker, self.c.controller.context.broker_epoch(broker)))
            assert out.controlled_shutdown.error_code == 0
            self.c.kill(broker)
            self.c.broker_change()

    @rule(partitions=st.integers(1, 3), rf=st.integers(1, 3), data=st.data())
    def topic_created(self, partitions: int, rf: int, data: st.DataObject) -> None:
        self.topics += 1
        name = f"t{self.topics}"
        self.c.unclean[name] = self.unclean
        assignment = {p: data.draw(st.permutations(BROKERS))[:rf] for p in range(partitions)}
        self.c.create_topic(name, assignment)

    @rule()
    def preferred_election(self) -> None:
        self.c.feed(ReplicaLeaderElection(None))

    @rule()
    def controller_fails_over(self) -> None:
        self.c.new_controller()

    @invariant()
    def kafkas_invariants_hold(self) -> None:
        if not hasattr(self, "c"):
            return
        ctx = self.c.controller.context
        assert ctx is not None, "the controller resigned"
        assert_store_matches_context(self.c)
        live = set(self.c.broker_sessions)
        for tp, lic in ctx.leadership.items():
            lai = lic.leader_and_isr
            assert lai.isr, f"{tp}: empty ISR"
            assert set(lai.isr) <= set(ctx.replicas(tp))
            assert lai.leader == -1 or (lai.leader in live and lai.leader in lai.isr), (tp, lai, live)
            before = self.seen.get(tp)
            if before is not None:
                leader, epoch, isr = before
                assert lai.leader_epoch >= epoch
                if lai.leader != leader:
                    assert lai.leader_epoch > epoch, f"{tp}: leader changed without an epoch bump"
                    if not self.unclean and lai.leader != -1:
                        assert lai.leader in isr, f"{tp}: out-of-sync leader {lai.leader}, ISR was {isr}"
            self.seen[tp] = (lai.leader, lai.leader_epoch, lai.isr)


ControllerMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_controller_keeps_kafkas_invariants_through_random_failures = ControllerMachine.TestCase
