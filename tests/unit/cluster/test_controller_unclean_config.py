"""The controller learns each topic's ``unclean.leader.election.enable`` from
``/config/topics/<t>`` (Kafka reads the topic configs when it elects), and turning it on
elects the topic's offline partitions (TopicUncleanLeaderElectionEnable)."""

from __future__ import annotations

from cluster import znodes
from cluster.controller import TopicUncleanLeaderElectionEnable
from cluster.controller.zk_io import read_unclean_overrides
from cluster.fake_store import FakeZooKeeper
from tests.support.controller_harness import Cluster, run


def test_only_topics_whose_config_znode_sets_unclean_election_are_reported():
    zk = FakeZooKeeper()
    s = zk.session()
    s.create_now(znodes.config_entity_path("topics", "on"),
                 znodes.encode_config({"unclean.leader.election.enable": " TRUE "}), make_parents=True)
    s.create_now(znodes.config_entity_path("topics", "off"),
                 znodes.encode_config({"unclean.leader.election.enable": "false", "retention.ms": "1"}))
    s.create_now(znodes.config_entity_path("topics", "other"), znodes.encode_config({"retention.ms": "1"}))
    got = run(read_unclean_overrides(s, ["on", "off", "other", "missing"]))
    assert got == {"on": True, "off": False}


def test_turning_unclean_election_on_for_a_topic_elects_its_offline_partitions():
    c = Cluster([1, 2], unclean={"t": False})
    c.create_topic("t", {0: [1, 2]})
    c.create_topic("u", {0: [1, 2]})
    c.kill(2)
    c.broker_change()
    c.kill(1)
    c.broker_change()
    c.register(2)
    c.broker_change()
    assert (c.state("t", 0)[0].leader, c.state("u", 0)[0].leader) == (-1, -1)
    c.unclean["t"] = True
    c.feed(TopicUncleanLeaderElectionEnable("t"))
    state, _ = c.state("t", 0)
    assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), 1)
    assert c.state("u", 0)[0].leader == -1  # only the topic named
