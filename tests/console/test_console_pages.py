"""The web console in headless Chromium against a real broker process: each page shows what
a person looks for (the controller, ISR, offsets, message contents, lag per partition), the
forms create, change and delete, and each page is saved to docs/screenshots/."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from confluent_kafka import Producer
from selenium.webdriver.common.by import By

from tests.console.conftest import COMMITTED, GROUP, ORDERS, PER_PARTITION, wait_for

pytestmark = [pytest.mark.compat, pytest.mark.timeout(600)]


def rows(browser, table_id: str) -> list[list[str]]:
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in browser.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")]


def test_overview_shows_the_cluster_and_a_live_throughput_chart_of_records_per_second(site, browser, screenshot):
    stop = threading.Event()

    def produce() -> None:   # bounded: at most 90 s of 20 records every 0.3 s
        p = Producer({"bootstrap.servers": site.broker.bootstrap})
        deadline = time.monotonic() + 90
        while not stop.is_set() and time.monotonic() < deadline:
            for i in range(20):
                p.produce("clicks", value=b'{"page": "/cart", "n": %d}' % i)
            p.flush(30)
            stop.wait(0.3)

    Producer({"bootstrap.servers": site.broker.bootstrap}).produce("clicks", value=b"first")
    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    try:
        browser.get(site.url + "/")
        summary = dict(rows(browser, "summary"))
        assert summary["Brokers"] == "1"
        assert summary["Controller"] == "1"
        assert summary["Under-replicated partitions"] == "0"
        assert summary["Consumer groups"] == "1"
        legend = browser.find_element(By.ID, "throughput-legend")

        def clicks_rate() -> float:
            # the legend div stays; its entries are redrawn every 2 s (so read its text whole:
            # an entry element found a moment ago may be gone)
            m = re.search(r"(?:^|\s)clicks ([\d.]+)/s", legend.text)
            return float(m.group(1)) if m else 0.0

        wait_for(lambda: clicks_rate() > 0, 90, "a non-zero clicks rate in the chart's legend")
        chart = browser.find_element(By.ID, "throughput")
        # a few more samples (one per 2 s) so that the screenshot shows a line, not a point
        wait_for(lambda: int(chart.get_attribute("data-points") or 0) >= 3 * 8, 90, "8 points per topic")
        assert clicks_rate() > 0
        screenshot("console-overview")
    finally:
        stop.set()
        writer.join(60)


def test_brokers_page_names_the_controller_and_where_the_broker_listens(site, browser, screenshot):
    browser.get(site.url + "/brokers")
    (row,) = rows(browser, "brokers")
    assert row[:5] == ["1", "127.0.0.1", str(site.broker.port), "-", "controller"]
    screenshot("console-brokers")


def test_topics_page_lists_partitions_replication_and_record_counts(site, browser, screenshot):
    browser.get(site.url + "/topics")
    by_name = {r[0].split()[0]: r for r in rows(browser, "topics")}
    assert by_name[ORDERS][1:5] == ["3", "1", "0", str(3 * PER_PARTITION)]
    assert by_name["payments"][1:5] == ["1", "1", "0", "1"]
    assert by_name["__consumer_offsets"][0] == "__consumer_offsets internal"
    screenshot("console-topics")


def test_topic_page_shows_each_partitions_leader_isr_and_offsets(site, browser, screenshot):
    browser.get(f"{site.url}/topics/{ORDERS}")
    parts = rows(browser, "partitions")
    assert [r[:8] for r in parts] == [[str(p), "1", "1", "1", "-", "ok", "0", str(PER_PARTITION)] for p in range(3)]
    assert all(r[8].endswith("B") and r[8] != "0 B" for r in parts)
    configs = {r[0]: r for r in rows(browser, "configs")}
    assert configs["cleanup.policy"][1:] == ["delete", "default"]
    screenshot("console-topic")


def test_a_config_set_in_the_form_becomes_a_topic_override_and_resets_to_the_default(site, browser):
    browser.get(f"{site.url}/topics/payments")
    form = browser.find_element(By.ID, "edit-config")
    form.find_element(By.NAME, "key").send_keys("retention.ms")
    form.find_element(By.NAME, "value").send_keys("3600000")
    form.find_element(By.CSS_SELECTOR, "button[value=set]").click()
    wait_for(lambda: browser.find_elements(By.ID, "flash"), what="the flash message")
    assert browser.find_element(By.ID, "flash").text == "Set retention.ms=3600000"
    assert {r[0]: r for r in rows(browser, "configs")}["retention.ms"][1:] == ["3600000", "topic"]
    form = browser.find_element(By.ID, "edit-config")
    form.find_element(By.NAME, "key").send_keys("retention.ms")
    form.find_element(By.CSS_SELECTOR, "button[value=delete]").click()
    wait_for(lambda: "Reset" in browser.find_element(By.ID, "flash").text, what="the reset message")
    assert {r[0]: r for r in rows(browser, "configs")}["retention.ms"][1:] == ["604800000", "default"]


def test_messages_page_browses_a_partition_from_an_offset_with_keys_json_values_and_headers(site, browser, screenshot):
    browser.get(f"{site.url}/topics/{ORDERS}/messages?partition=1&offset=2&limit=5")
    assert browser.find_element(By.ID, "info").text == \
        f"partition 1 from offset 2: 5 record(s); high watermark {PER_PARTITION}"
    got = rows(browser, "messages")
    assert [r[0] for r in got] == ["2", "3", "4", "5", "6"]
    first = got[0]
    assert first[1] == "2023-11-14 22:13:21.002Z"   # 1_700_000_000_000 + 1000 + 2 ms
    assert first[2] == "customer-2"
    assert json.loads(first[3]) == {"order_id": 102, "partition": 1, "item": "book-2", "amount": 12.5}
    assert first[4].splitlines() == ["source: web", "trace: de ad be ef"]
    screenshot("console-messages")


def test_messages_page_finds_the_first_record_at_or_after_a_time(site, browser):
    browser.get(f"{site.url}/topics/{ORDERS}/messages?partition=2&timestamp=2023-11-14T22:13:22.007Z&limit=2")
    assert [r[0] for r in rows(browser, "messages")] == ["7", "8"]


def test_messages_page_shows_binary_keys_and_values_as_hex(site, browser):
    browser.get(f"{site.url}/topics/payments/messages?partition=0&offset=0")
    (row,) = rows(browser, "messages")
    assert row[2:4] == ["00 01 ff", "89 50 4e 47 0d 0a 1a 0a"]
    browser.get(f"{site.url}/topics/{ORDERS}/messages?partition=0&offset=0&limit=1&format=hex")
    assert rows(browser, "messages")[0][2] == b"customer-0".hex(" ")


def test_groups_page_lists_the_group_with_its_members_and_total_lag(site, browser, screenshot):
    browser.get(site.url + "/groups")
    (row,) = rows(browser, "groups")
    total_lag = sum(PER_PARTITION - off for off in COMMITTED.values())
    assert row == [GROUP, "classic", "Stable", "consumer", "-", "1", "3", str(total_lag)]
    screenshot("console-groups")


def test_group_page_shows_lag_per_partition_and_which_consumer_owns_it(site, browser, screenshot):
    browser.get(f"{site.url}/groups/{GROUP}")
    offsets = rows(browser, "offsets")
    assert [r[:5] for r in offsets] == [[ORDERS, str(p), str(off), str(PER_PARTITION), str(PER_PARTITION - off)]
                                        for p, off in sorted(COMMITTED.items())]
    (member,) = rows(browser, "members")
    assert member[2] == "billing-service"
    assert member[4] == f"{ORDERS}-0, {ORDERS}-1, {ORDERS}-2"
    assert all(r[5] == member[0] and r[7] == "billing-service" for r in offsets)
    screenshot("console-group")


def test_a_topic_created_in_the_form_can_be_deleted_after_typing_its_name(site, browser):
    browser.get(site.url + "/topics")
    form = browser.find_element(By.ID, "create-topic")
    form.find_element(By.NAME, "name").send_keys("made-in-console")
    partitions = form.find_element(By.NAME, "partitions")
    partitions.clear()
    partitions.send_keys("4")
    form.find_element(By.NAME, "configs").send_keys("cleanup.policy=compact")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(lambda: browser.find_elements(By.ID, "flash"), what="the creation message")
    assert browser.find_element(By.ID, "flash").text == "Created topic made-in-console"
    assert len(rows(browser, "partitions")) == 4
    assert {r[0]: r for r in rows(browser, "configs")}["cleanup.policy"][1:] == ["compact", "topic"]

    form = browser.find_element(By.ID, "delete-topic")
    form.find_element(By.NAME, "confirm").send_keys("wrong-name")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(lambda: browser.find_elements(By.ID, "error"), what="the refusal")
    assert "did not match" in browser.find_element(By.ID, "error").text
    form = browser.find_element(By.ID, "delete-topic")
    form.find_element(By.NAME, "confirm").send_keys("made-in-console")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(lambda: browser.find_elements(By.ID, "flash"), what="the deletion message")
    assert browser.find_element(By.ID, "flash").text == "Deleted topic made-in-console"
    assert "made-in-console" not in [r[0] for r in rows(browser, "topics")]


def test_a_page_for_an_unknown_topic_answers_not_found(site, browser):
    browser.get(site.url + "/topics/no-such-topic")
    assert "no topic no-such-topic" in browser.find_element(By.TAG_NAME, "body").text


def test_every_resource_a_page_loads_comes_from_the_console_itself(site, browser):
    for path in ("/", f"/topics/{ORDERS}", f"/topics/{ORDERS}/messages", f"/groups/{GROUP}"):
        browser.get(site.url + path)
        wait_for(lambda: browser.execute_script("return document.readyState") == "complete")
        loaded = browser.execute_script(
            "return performance.getEntriesByType('resource').map(function (e) { return e.name; })")
        assert {u.split("?")[0] for u in loaded} >= {site.url + "/static/console.css", site.url + "/static/console.js"}
        assert [u for u in loaded if not u.startswith(site.url + "/")] == []
