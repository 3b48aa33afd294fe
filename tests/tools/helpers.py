"""Running ``kbroker <tool>`` and Kafka's own tools (from the `make kafka-jars` jars) as
subprocesses, capturing exit status, stdout and stderr separately."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / "bench" / "kafka" / "jars"
LOG4J2 = Path(__file__).resolve().parent / "log4j2-quiet.properties"

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
GET_OFFSET_SHELL = "org.apache.kafka.tools.GetOffsetShell"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"


@dataclass
class Run:
    rc: int
    out: str
    err: str


def kafka_jars_present() -> bool:
    return any(JARS.glob("kafka-tools-*.jar"))


def kbroker(*args: str, stdin: str | None = None, timeout_s: float = 120) -> Run:
    r = subprocess.run([sys.executable, "-m", "kbroker", *args], cwd=ROOT, input=stdin,
                       capture_output=True, text=True, timeout=timeout_s)
    return Run(r.returncode, r.stdout, r.stderr)


def kafka_tool(main: str, *args: str, timeout_s: float = 180) -> Run:
    cmd = ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={LOG4J2}", "-cp", f"{JARS}/*", main, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    # the JVM's own warnings (log4j status lines) are not the tool's output
    err = "".join(line for line in r.stderr.splitlines(keepends=True) if not line.startswith("[") and "WARN" not in line)
    return Run(r.returncode, r.stdout, err)


def wait_until(predicate, what: str, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.2)
