"""The controller learns each topic's ``unclean.leader.election.enable`` from
``/config/topics/<t>`` (Kafka reads the topic configs when it elects)."""

from __future__ import annotations

from cluster import znodes
from cluster.controller.zk_io import read_unclean_overrides
from cluster.fake_store import FakeZooKeeper
from tests.cluster.controller_harness import run


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
