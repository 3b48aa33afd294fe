"""Kafka's own command-line tools (the 4.3.1 jars of bench/kafka/jars, `make kafka-jars`) run
against a broker process: AclCommand (kafka-acls.sh) and ConfigCommand (kafka-configs.sh)."""

from __future__ import annotations

import subprocess

from tests.support.broker_process import ROOT
from tests.support.requirements_helper import missing_tool

JARS = ROOT / "bench" / "kafka" / "jars"


def kafka_tool(main_class: str, *args: str, timeout_s: float = 300) -> str:
    """Run one tool; its stdout (a failing exit fails the test with the tool's stderr)."""
    if not list(JARS.glob("kafka-tools-*.jar")):
        missing_tool("Kafka's jars are not fetched: make kafka-jars")
    done = subprocess.run(["java", "-cp", f"{JARS}/*", main_class, *args], capture_output=True, text=True,
                          timeout=timeout_s)
    assert done.returncode == 0, f"{main_class} {args}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def kafka_acls(bootstrap: str, *args: str) -> str:
    return kafka_tool("org.apache.kafka.tools.AclCommand", "--bootstrap-server", bootstrap, *args)


def kafka_configs(bootstrap: str, *args: str) -> str:
    return kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, *args)
