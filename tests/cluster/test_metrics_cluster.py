"""/metrics of three kbroker processes and a real ZooKeeper: with a broker down, the
leaders report its partitions under-replicated and the controller reports the partitions
that had no other replica offline; when it returns, both go back to 0.  Exactly one broker
reports itself the active controller throughout.  The web console (``kbroker console``
against the cluster) shows the same: three brokers, then the ISR without the dead one."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.console.helpers import ConsoleProcess, cells, get
from tests.support.cluster_processes import Cluster, metered_cluster, wait_until
from tests.support.metrics_scrape import scrape_unlabelled

pytestmark = pytest.mark.timeout(600)

REPLICATED, SOLO = "urp", "solo"


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = metered_cluster(tmp_path_factory.mktemp("metrics"), zookeeper, **{"replica.lag.time.max.ms": "3000"}).start()
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in admin.create_topics([NewTopic(REPLICATED, 3, 3), NewTopic(SOLO, 3, 1)],
                                 request_timeout=60, operation_timeout=60).values():
        f.result(60)
    yield c
    c.stop()


def partitions(cluster: Cluster, topic: str):
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(topic, timeout=30)
    return md.topics[topic].partitions


def live_sum(cluster: Cluster, name: str) -> float:
    return sum(scrape_unlabelled(cluster.metrics_ports[b])[name] for b, p in cluster.brokers.items() if p.alive())


def check_console(cluster: Cluster, base: str, solo_on_3: int) -> None:
    """Before and after broker 3 is killed, as the console shows it (through the protocol)."""
    brokers = cells(get(base + "brokers"), "brokers")
    assert [r[0] for r in brokers] == ["1", "2", "3"]
    controller, _ = cluster.controller()
    assert [r[0] for r in brokers if r[4] == "controller"] == [str(controller)]
    rows = cells(get(f"{base}topics/{REPLICATED}"), "partitions")
    assert [sorted(r[3].split(",")) for r in rows] == [["1", "2", "3"]] * 3
    assert [r[5] for r in rows] == ["ok"] * 3

    cluster.brokers[3].kill()

    def urp_shown() -> bool:
        rows = cells(get(f"{base}topics/{REPLICATED}"), "partitions")
        return all(r[5] == "under-replicated" and "3" not in r[3].split(",") and r[1] in ("1", "2")
                   for r in rows)

    wait_until(urp_shown, "the console to show urp without broker 3 in any ISR", timeout_s=120)
    solo = {r[0]: r for r in cells(get(f"{base}topics/{SOLO}"), "partitions")}
    assert solo[str(solo_on_3)][1] == "none"   # no leader: offline
    summary = dict(cells(get(base), "summary"))
    assert summary["Under-replicated partitions"] == "3"
    assert summary["Offline partitions"] == "1"


def test_a_stopped_broker_shows_as_under_replicated_and_offline_partitions_until_it_returns(cluster):
    wait_until(lambda: all(len(p.isrs) == 3 for p in partitions(cluster, REPLICATED).values()),
               "urp's ISRs to hold all three brokers")
    wait_until(lambda: live_sum(cluster, "kafka_server_replicamanager_underreplicatedpartitions") == 0,
               "no under-replicated partitions")
    assert live_sum(cluster, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert live_sum(cluster, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    only_on_3 = [i for i, p in partitions(cluster, SOLO).items() if p.replicas == [3]]
    assert len(only_on_3) == 1   # Kafka's assignment puts one of the three partitions on each broker
    console = ConsoleProcess(cluster.bootstrap)
    try:
        check_console(cluster, console.url(), only_on_3[0])
    finally:
        assert console.stop() == 0, "".join(console.lines)
    assert "Traceback" not in "".join(console.lines), "".join(console.lines)
    # every urp partition loses broker 3 from its ISR (the controller removes a dead broker),
    # and broker 1 or 2 leads each: together they report all three
    wait_until(lambda: live_sum(cluster, "kafka_server_replicamanager_underreplicatedpartitions") == 3,
               "3 under-replicated partitions reported by brokers 1 and 2", timeout_s=120)
    wait_until(lambda: live_sum(cluster, "kafka_controller_kafkacontroller_activecontrollercount") == 1,
               "one active controller among brokers 1 and 2", timeout_s=120)
    wait_until(lambda: live_sum(cluster, "kafka_controller_kafkacontroller_offlinepartitionscount")
               == len(only_on_3), "solo's partition on broker 3 offline", timeout_s=120)

    cluster.brokers[3].start(timeout_s=60)
    cluster.wait_serving()
    wait_until(lambda: live_sum(cluster, "kafka_server_replicamanager_underreplicatedpartitions") == 0,
               "broker 3 back in every ISR", timeout_s=180)
    wait_until(lambda: live_sum(cluster, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0,
               "no offline partitions", timeout_s=120)
    assert live_sum(cluster, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    # broker 3 rejoined the ISRs: the leaders proposed those expansions
    assert live_sum(cluster, "kafka_server_replicamanager_isrexpands_total") >= 3
