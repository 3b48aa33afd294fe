"""A real Apache Kafka broker (single-node KRaft) and Kafka's Java perf tools, run from the
jars `make kafka-jars` fetches into bench/kafka/jars/ (bench/kafka/pom.xml says which).

The broker is started exactly as bin/kafka-server-start.sh starts it (``kafka.Kafka
server.properties`` with that script's heap and JVM options); its storage is formatted
first with ``kafka.tools.StorageTool format --standalone`` (what a fresh KRaft install
does once).  Its server.properties holds only what a single-node, loopback-only install
has to say (roles, node id, listeners, log.dirs, replication factors of 1) plus
``group.initial.rebalance.delay.ms=0``, which kbroker is given too; everything else is
Kafka's default.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

from tests.support.broker_process import BrokerProcess, free_port
from wire.uuids import random_uuid, uuid_to_string

KAFKA_DIR = Path(__file__).resolve().parents[1] / "kafka"
JARS = KAFKA_DIR / "jars"
LOG4J2 = KAFKA_DIR / "log4j2.properties"

# bin/kafka-server-start.sh: KAFKA_HEAP_OPTS when unset.
SERVER_HEAP = ["-Xmx1G", "-Xms1G"]
# bin/kafka-producer-perf-test.sh / kafka-consumer-perf-test.sh: KAFKA_HEAP_OPTS when unset.
TOOL_HEAP = ["-Xmx512M"]
# bin/kafka-run-class.sh: KAFKA_JVM_PERFORMANCE_OPTS and KAFKA_JMX_OPTS when unset.
JVM_PERFORMANCE = ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                   "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                   "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
JMX = ["-Dcom.sun.management.jmxremote", "-Dcom.sun.management.jmxremote.authenticate=false",
       "-Dcom.sun.management.jmxremote.ssl=false"]

_STARTED = re.compile(r"Kafka Server started")


def kafka_version() -> str:
    """The version of the fetched kafka_2.13 jar (e.g. 4.3.1)."""
    for jar in JARS.glob("kafka_2.13-*.jar"):
        return jar.name[len("kafka_2.13-"):-len(".jar")]
    raise SystemExit(f"no Apache Kafka jars in {JARS}: run `make kafka-jars`")


def java_version() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return out.splitlines()[0] if out else "unknown"


def _java(main: str, args: list[str], heap: list[str]) -> list[str]:
    return ["java", *heap, *JVM_PERFORMANCE, f"-Dlog4j2.configurationFile={LOG4J2}",
            "-cp", f"{JARS}/*", main, *args]


def _cluster_id() -> str:
    # What `kafka-storage.sh random-uuid` prints: a random UUID, URL-safe base64, unpadded,
    # never starting with '-' (1 in 64 did, and `format -t -...` then failed as an option)
    return uuid_to_string(random_uuid())


class KafkaProcess(BrokerProcess):
    """One Apache Kafka broker+controller process on two free loopback ports.

    A BrokerProcess (tests/support/broker_process.py) that runs Kafka instead of kbroker:
    the same ``start``/``stop``/``bootstrap``/``proc``, so the benchmark drives both alike."""

    ready_line = _STARTED

    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None,
                 heap: list[str] | None = None):
        """``heap``: the JVM heap options (default kafka-server-start.sh's, SERVER_HEAP)."""
        super().__init__(data_dir)
        self.heap = list(heap or SERVER_HEAP)
        self.controller_port = free_port()
        self.props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            # single node: the internal topics cannot have 3 replicas (the distribution's
            # config/server.properties sets the same)
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **(overrides or {}),
        }
        self._formatted = False

    @property
    def properties_file(self) -> Path:
        return self.data_dir / "server.properties"

    def format(self) -> None:
        """kafka-storage.sh format --standalone: a one-time install step, not part of start-up."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        r = subprocess.run(_java("kafka.tools.StorageTool",
                                 ["format", "--standalone", "-t", _cluster_id(), "-c", str(self.properties_file)],
                                 SERVER_HEAP),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{r.stdout}\n{r.stderr}")
        self._formatted = True

    def command(self) -> list[str]:
        gc_log = self.data_dir / "kafkaServer-gc.log"
        # kafka-server-start.sh's -loggc and kafka-run-class.sh's JMX options, as they are by default
        extra = [f"-Xlog:gc*:file={gc_log}:time,tags:filecount=10,filesize=100M", *JMX]
        return _java("kafka.Kafka", [str(self.properties_file)], [*self.heap, *extra])

    def start(self, timeout_s: float = 120.0) -> KafkaProcess:
        if not self._formatted:
            self.format()
        super().start(timeout_s)
        return self


# ---------------------------------------------------------------- Kafka's Java perf tools

_PRODUCER_SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)")


def producer_performance(bootstrap: str, topic: str, n: int, record_bytes: int,
                         props: dict[str, str], timeout_s: float = 600) -> float:
    """org.apache.kafka.tools.ProducerPerformance (kafka-producer-perf-test.sh), unthrottled.
    Returns the records/s it reports (it times itself, so JVM start-up is not counted)."""
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(n),
            "--record-size", str(record_bytes), "--throughput", "-1",
            "--command-property", *(f"{k}={v}" for k, v in props.items())]
    out = _run_tool("org.apache.kafka.tools.ProducerPerformance", args, timeout_s)
    matches = [m for m in _PRODUCER_SUMMARY.finditer(out) if int(m.group(1)) == n]
    if not matches:
        raise RuntimeError(f"ProducerPerformance gave no summary for {n} records:\n{out[-3000:]}")
    return float(matches[-1].group(2))


def consumer_performance(bootstrap: str, topic: str, n: int, timeout_s: float = 600) -> tuple[float, float]:
    """org.apache.kafka.tools.ConsumerPerformance (kafka-consumer-perf-test.sh): a subscribed
    consumer in a fresh group reading ``n`` records from the beginning.  Returns
    (fetch MB/s, fetch records/s): its figures after the group's first assignment, so the
    join/sync round trips are not in them (its MB is 2^20 bytes; converted to 10^6 here)."""
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(n),
            "--group", f"perf-{uuid.uuid4().hex[:8]}", "--hide-header", "--timeout", "60000"]
    out = _run_tool("org.apache.kafka.tools.ConsumerPerformance", args, timeout_s)
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    for line in reversed(out.splitlines()):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 10 and fields[4].isdigit():
            if int(fields[4]) < n:
                raise RuntimeError(f"ConsumerPerformance read {fields[4]} of {n} records:\n{out[-3000:]}")
            return float(fields[8]) * 1.048576, float(fields[9])
    raise RuntimeError(f"ConsumerPerformance gave no summary:\n{out[-3000:]}")


def _run_tool(main: str, args: list[str], timeout_s: float) -> str:
    r = subprocess.run(_java(main, args, TOOL_HEAP), capture_output=True, text=True, timeout=timeout_s)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        raise RuntimeError(f"{main} exited {r.returncode}:\n{out[-3000:]}")
    return out

