"""TLS produce/consume throughput, kbroker beside Apache Kafka, with the same certificates.

Each broker gets an SSL listener (server authentication, PEM keystore made by
tests/support/security_certs.py with openssl) next to its PLAINTEXT one; the same client
(confluent-kafka, i.e. librdkafka) produces ``N`` records of ``SIZE`` bytes to a one-partition
topic over TLS (acks=all, linger.ms=5), then a consumer in a fresh group reads them all back
over TLS.  Times are the client's wall clock from the first send to the last delivery report,
and from subscribe to the last record.  Brokers run one at a time, alternating, ``REPEATS``
rounds; the medians go to bench/results/tls.md and .json.

    .venv/bin/python -m bench.suites.tls [N] [SIZE] [REPEATS]      (make kafka-jars first)

On TLS kbroker cannot sendfile (NOT_IMPLEMENTED.md): its Fetch copies the record bytes into
the response and the transport encrypts them; Kafka's SslTransportLayer copies too.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

from bench.harness import history, machine
from bench.harness.common import RESULTS
from bench.harness.kafka_dist import KafkaProcess, java_version, kafka_version
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.security_certs import make_certs


def ssl_props(certs: str) -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": f"{certs}/broker.pem",
            "ssl.truststore.type": "PEM", "ssl.truststore.location": f"{certs}/ca.crt"}


def start_kbroker(root: Path, certs: str) -> tuple[BrokerProcess, int]:
    b = BrokerProcess(root / "kbroker")
    port = free_port()
    b.overrides.update({"listeners": f"PLAINTEXT://127.0.0.1:{b.port},SSL://127.0.0.1:{port}",
                        **ssl_props(certs)})
    return b.start(), port


def start_kafka(root: Path, certs: str) -> tuple[KafkaProcess, int]:
    port = free_port()
    k = KafkaProcess(root / "kafka")
    k.props.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{k.port},SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{k.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{k.port},SSL://127.0.0.1:{port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
        **ssl_props(certs),
    })
    return k.start(), port


def run_once(port: int, certs: str, n: int, size: int) -> dict[str, float]:
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
            "ssl.ca.location": f"{certs}/ca.crt"}
    topic = f"tls-{time.monotonic_ns()}"
    value = b"x" * size
    p = Producer({**conf, "acks": "all", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    p.produce(topic, b"warm-up")   # topic created and connection up before timing
    p.flush(60)
    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(600) != 0:
        raise RuntimeError("produce did not finish")
    produce_s = time.perf_counter() - t0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                  "fetch.max.bytes": 52428800})
    t0 = time.perf_counter()
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 600
    while got < n + 1 and time.monotonic() < deadline:
        for m in c.consume(10_000, 1.0):
            if m.error() is None:
                got += 1
    consume_s = time.perf_counter() - t0
    c.close()
    if got < n + 1:
        raise RuntimeError(f"consumed {got} of {n + 1}")
    mb = n * size / 1e6
    return {"produce_mb_s": mb / produce_s, "consume_mb_s": mb / consume_s}


def main(n: int = 200_000, size: int = 1000, repeats: int = 3) -> dict[str, Any]:
    certs = make_certs(tempfile.mkdtemp(prefix="tls-bench-certs-"))
    runs: dict[str, list[dict[str, float]]] = {"kbroker": [], "kafka": []}
    for _ in range(repeats):
        for name, start in (("kbroker", start_kbroker), ("kafka", start_kafka)):
            with tempfile.TemporaryDirectory(prefix=f"tls-bench-{name}-") as root:
                broker, port = start(Path(root), certs)
                try:
                    runs[name].append(run_once(port, certs, n, size))
                finally:
                    broker.stop()
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    results = {"records": n, "record_bytes": size, "repeats": repeats, "kafka_version": kafka_version(),
               "java": java_version(), "runs": runs, "median": med,
               "machine": machine.facts(Path("/tmp"), kafka_version(), java_version()),
               "finished": time.strftime("%Y-%m-%d %H:%M %Z")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "tls.json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    history.write_report(RESULTS / "tls.md", text, history_row(results))
    print(text)
    return results


def markdown(results: dict[str, Any]) -> str:
    med, n, size, repeats = results["median"], results["records"], results["record_bytes"], results["repeats"]
    lines = [f"# TLS produce/consume, kbroker vs Apache Kafka {results['kafka_version']}", "",
             f"{n} records of {size} B, one partition, SSL listener (server auth, same PEM certificates), "
             f"confluent-kafka client, acks=all, linger.ms=5; median of {repeats} alternating runs "
             "(bench/suites/tls.py).", "",
             "| broker | produce MB/s | consume MB/s |", "|---|---|---|"]
    for name in ("kbroker", "kafka"):
        lines.append(f"| {name} | {med[name]['produce_mb_s']:.1f} | {med[name]['consume_mb_s']:.1f} |")
    lines += ["", "Each run starts a fresh broker and moves ~100 MB: Kafka's JVM is not warmed up (its JIT "
              "compiles while it serves), and the consume time includes the group's join. Read it as "
              "a smoke comparison of the TLS paths on this shared 2-core machine, not as steady-state "
              f"throughput. Java: {results['java']}."]
    return "\n".join(lines) + "\n"


def history_row(results: dict[str, Any]) -> dict[str, str]:
    """This run's row of the history table: kbroker/Kafka of the median MB/s."""
    med = results["median"]
    return {"finished": results.get("finished", ""), "kbroker": history.commit_of(results.get("machine", {})),
            "runs": str(results["repeats"]), "records": f"{results['records']:,} x {results['record_bytes']} B",
            "produce MB/s": history.ratio_cell(med["kbroker"]["produce_mb_s"] / med["kafka"]["produce_mb_s"]),
            "consume MB/s": history.ratio_cell(med["kbroker"]["consume_mb_s"] / med["kafka"]["consume_mb_s"])}


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*args)
