"""The shop's producer and consumer against real brokers from kbroker's pytest plugin."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic
from shop.orders import order_totals, publish_orders

ORDERS = [{"customer": "ann", "amount": 3}, {"customer": "bob", "amount": 5},
          {"customer": "ann", "amount": 4}, {"customer": "cy", "amount": 1}]


def test_totals_per_customer_on_the_session_broker(kafka_bootstrap_servers):
    publish_orders(kafka_bootstrap_servers, "orders", ORDERS)
    assert order_totals(kafka_bootstrap_servers, "orders", "billing", len(ORDERS)) == {"ann": 7, "bob": 5, "cy": 1}


def test_a_second_group_reads_the_same_orders_again(kafka_bootstrap_servers):
    publish_orders(kafka_bootstrap_servers, "orders-again", ORDERS)
    assert order_totals(kafka_bootstrap_servers, "orders-again", "first", 4) == {"ann": 7, "bob": 5, "cy": 1}
    assert order_totals(kafka_bootstrap_servers, "orders-again", "second", 4) == {"ann": 7, "bob": 5, "cy": 1}


def test_a_function_scoped_broker_starts_empty(kafka_broker_function):
    admin = AdminClient({"bootstrap.servers": kafka_broker_function.bootstrap_servers})
    assert "orders" not in admin.list_topics(timeout=30).topics
    publish_orders(kafka_broker_function.bootstrap_servers, "orders", ORDERS[:1])
    assert order_totals(kafka_broker_function.bootstrap_servers, "orders", "g", 1) == {"ann": 3}


def test_totals_on_a_three_broker_cluster_with_replicated_orders(kafka_cluster):
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic("replicated-orders", num_partitions=3, replication_factor=3)])
    futures["replicated-orders"].result(60)
    publish_orders(kafka_cluster.bootstrap_servers, "replicated-orders", ORDERS)
    assert order_totals(kafka_cluster.bootstrap_servers, "replicated-orders", "billing", 4) == {
        "ann": 7, "bob": 5, "cy": 1}
