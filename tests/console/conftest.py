"""Fixtures for the console's browser tests: one real broker process serving the console
(``kbroker.console.listener``), with topics and a consumer group whose lag is known, and
headless Chromium from Debian (``chromium`` + ``chromium-driver``, installed by
``make deps-system``) driven by Selenium."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from selenium.common.exceptions import StaleElementReferenceException

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.requirements_helper import missing_tool

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
ORDERS, GROUP = "orders", "billing"
PER_PARTITION = 10
COMMITTED = {0: 7, 1: 5, 2: 3}        # the group's committed offsets: lag 3, 5, 7


@dataclass
class ConsoleSite:
    broker: BrokerProcess
    url: str
    consumer: Consumer


def order_value(partition: int, i: int) -> bytes:
    return (b'{"order_id": %d, "partition": %d, "item": "book-%d", "amount": %d.5}'
            % (partition * 100 + i, partition, i, 10 + i))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[ConsoleSite]:
    port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("console") / "data", overrides={
        "kbroker.console.listener": f"http://127.0.0.1:{port}"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic(ORDERS, 3, 1), NewTopic("payments", 1, 1)]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for part in range(3):
            for i in range(PER_PARTITION):
                p.produce(ORDERS, partition=part, key=f"customer-{i % 4}".encode(), value=order_value(part, i),
                          headers=[("source", b"web"), ("trace", bytes([0xde, 0xad, 0xbe, 0xef]))],
                          timestamp=1_700_000_000_000 + part * 1000 + i)
        p.produce("payments", key=b"\x00\x01\xff", value=b"\x89PNG\r\n\x1a\n")
        assert p.flush(60) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                             "client.id": "billing-service", "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([ORDERS])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.5)
        assert len(consumer.assignment()) == 3
        consumer.commit(offsets=[TopicPartition(ORDERS, part, off) for part, off in COMMITTED.items()],
                        asynchronous=False)
        yield ConsoleSite(broker, f"http://127.0.0.1:{port}", consumer)
        consumer.close()
    finally:
        broker.stop()
    assert "Traceback" not in broker.log_text(), broker.log_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        missing_tool("Debian's chromium and chromium-driver are not installed (make deps-system)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1360,900", "--lang=en-US"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(driver_path), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


@pytest.fixture
def screenshot(browser, tmp_path_factory) -> Callable[[str], Path]:
    """Save the whole page as <name>.png: into docs/screenshots/ (committed; the README shows
    them) when KBROKER_UPDATE_SCREENSHOTS=1, else into the test's temporary directory, so an
    ordinary test run leaves the work tree as it was."""
    into = SCREENSHOTS if os.environ.get("KBROKER_UPDATE_SCREENSHOTS") == "1" \
        else tmp_path_factory.mktemp("screenshots")

    def take(name: str) -> Path:
        height = int(browser.execute_script("return document.documentElement.scrollHeight"))
        # headless Chromium keeps its viewport on a window resize: size the page itself
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1360, "height": max(600, min(height, 2400)), "deviceScaleFactor": 1, "mobile": False})
        into.mkdir(parents=True, exist_ok=True)
        path = into / f"{name}.png"
        try:
            browser.save_screenshot(str(path))
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        assert path.stat().st_size > 10_000   # a real page, not a blank one
        return path
    return take


def wait_for(predicate: Callable[[], object], timeout_s: float = 60.0, what: str = "") -> object:
    """Poll ``predicate`` until truthy.  An element of the page being replaced (a form's POST
    and redirect under way) goes stale between finding it and reading it: not yet, ask again."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = predicate()
        except StaleElementReferenceException:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what or predicate}")
        time.sleep(0.2)
