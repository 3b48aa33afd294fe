# kbroker: the README's two commands are `make run` and `make test`.
# Everything a target needs is installed by the target itself, into .venv.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
SCHEMAS ?= wire/codegen/schemas

.PHONY: run test deps-system spark-jars zookeeper-jars spark-demo lint gen gen-check schemas bench-codec bench-log bench-group \
        bench bench-quick bench-profile bench-cluster kafka-jars clean cluster cluster-stop \
        bench-small-wide bench-curves bench-memory bench-cores bench-txn bench-consumer-protocol soak

$(VENV)/.run-installed: pyproject.toml setup.py log/_record_scan.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml setup.py log/_record_scan.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test]'
	touch $@ $(VENV)/.run-installed

## run: start a broker on localhost:9092 with its data in ./data
run: $(VENV)/.run-installed
	$(PY) -m kbroker serve --override log.dirs=./data

## test: install everything the tests need, then run lint and every test, TEST_WORKERS pytest-xdist
## workers side by side (most of the suite waits on broker, ZooKeeper and JVM processes, so more
## workers than the 2 cores); one test module is one unit of work, longest first (conftest.py)
## The tests start hundreds of Python processes (brokers, tools, clients): with bytecode writing
## allowed (a machine may set PYTHONDONTWRITEBYTECODE) each imports the project's .pyc files
## (__pycache__/, git-ignored) instead of compiling its sources again, about a CPU second each.
TEST_WORKERS ?= 6
test: $(VENV)/.test-installed deps-system spark-jars zookeeper-jars kafka-jars lint
	rm -f .test-failures.txt
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder || { echo "== make test: failed tests (.test-failures.txt) =="; cat .test-failures.txt; exit 1; }
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest examples || { cat .test-failures.txt; exit 1; }  # the example project using the pytest plugin (examples/README.md)

## soak: ZooKeeper and three brokers in cluster mode under idempotent and transactional
## producers and a committing consumer group, while kill -9, SIGSTOP, network partitions,
## ZooKeeper restarts and rolling restarts take turns for SOAK_MINUTES; then checks nothing
## acknowledged was lost, duplicated or went backwards and prints the table (tests/soak/)
SOAK_MINUTES ?= 30
soak: $(VENV)/.test-installed deps-system zookeeper-jars
	$(PY) -m tests.soak --minutes $(SOAK_MINUTES)

## deps-system: system packages the tests run (kcat for the compat tests; ip and iptables, from
## iproute2 and iptables, for the network-partition tests in tests/cluster; chromium and
## chromium-driver for the console's browser tests in tests/console; openssl for the TLS
## tests' certificates and PKCS12 stores), from Debian
SUDO := $(shell [ "$$(id -u)" = 0 ] || ! command -v sudo >/dev/null || echo sudo)
deps-system:
	command -v kcat >/dev/null || ($(SUDO) apt-get install -y kcat || ($(SUDO) apt-get update && $(SUDO) apt-get install -y kcat))
	command -v ip >/dev/null || ($(SUDO) apt-get install -y iproute2 || ($(SUDO) apt-get update && $(SUDO) apt-get install -y iproute2))
	command -v iptables >/dev/null || ($(SUDO) apt-get install -y iptables || ($(SUDO) apt-get update && $(SUDO) apt-get install -y iptables))
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || ($(SUDO) apt-get install -y chromium chromium-driver || ($(SUDO) apt-get update && $(SUDO) apt-get install -y chromium chromium-driver))
	command -v openssl >/dev/null || ($(SUDO) apt-get install -y openssl || ($(SUDO) apt-get update && $(SUDO) apt-get install -y openssl))

## spark-jars: Spark's Kafka connector and its runtime dependencies, fetched by Maven into
## spark_it/jars/ (git-ignored) once; fetched again only when spark_it/pom.xml changes
SPARK_JARS := spark_it/jars
spark-jars: $(SPARK_JARS)/.fetched
$(SPARK_JARS)/.fetched: spark_it/pom.xml
	rm -rf $(SPARK_JARS)
	mvn -q -B -f spark_it/pom.xml dependency:copy-dependencies -DoutputDirectory=jars \
	    -DincludeScope=runtime \
	    -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2
	test $$(ls $(SPARK_JARS)/*.jar | wc -l) = 4
	touch $@

## zookeeper-jars: Apache ZooKeeper (the server and its runtime dependencies) fetched by Maven
## into zookeeper/jars/ (git-ignored) once, for the cluster tests; again when zookeeper/pom.xml changes
ZOOKEEPER_JARS := zookeeper/jars
zookeeper-jars: $(ZOOKEEPER_JARS)/.fetched
$(ZOOKEEPER_JARS)/.fetched: zookeeper/pom.xml
	rm -rf $(ZOOKEEPER_JARS)
	mvn -q -B -f zookeeper/pom.xml dependency:copy-dependencies -DoutputDirectory=jars -DincludeScope=runtime
	ls $(ZOOKEEPER_JARS)/zookeeper-3.*.jar $(ZOOKEEPER_JARS)/metrics-core-*.jar >/dev/null
	touch $@

## spark-demo: the example Spark pipeline (spark_it/demo.py) against `make run`'s broker
spark-demo: $(VENV)/.test-installed spark-jars
	$(PY) -m spark_it.demo --bootstrap localhost:9092

lint: $(VENV)/.test-installed
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .

## gen / schemas: regenerate wire/_generated from Kafka's JSON schemas
gen schemas: $(VENV)/.run-installed
	$(PY) -m wire.codegen --schemas $(SCHEMAS)

## gen-check: fail if the committed table differs from what the schemas give
gen-check: $(VENV)/.run-installed
	$(PY) -m wire.codegen --schemas $(SCHEMAS) --check

$(VENV)/.bench-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test,bench]'
	touch $@ $(VENV)/.test-installed $(VENV)/.run-installed

## kafka-jars: Apache Kafka (broker, its runtime dependencies, log4j2, kafka-tools) fetched by
## Maven into bench/kafka/jars/ (git-ignored) once; again only when bench/kafka/pom.xml changes
KAFKA_JARS := bench/kafka/jars
kafka-jars: $(KAFKA_JARS)/.fetched
$(KAFKA_JARS)/.fetched: bench/kafka/pom.xml
	rm -rf $(KAFKA_JARS)
	mvn -q -B -f bench/kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=jars -DincludeScope=runtime
	ls $(KAFKA_JARS)/kafka_2.13-*.jar $(KAFKA_JARS)/kafka-tools-*.jar $(KAFKA_JARS)/log4j-core-*.jar >/dev/null
	touch $@

## bench: kbroker beside Apache Kafka on this machine, 3 repetitions (~25 min); writes
## bench/results/side_by_side.md, .json and the PNG charts (bench/README.md says how to read them)
bench: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.side_by_side

## bench-quick: the same with small volumes and 1 repetition (~2-4 min); writes bench/results/side_by_side_quick.md
bench-quick: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.side_by_side --quick

## bench-cluster: three kbroker brokers (RF 3, min.insync.replicas=2, with ZooKeeper) against
## three Apache Kafka KRaft brokers, one run (~10 min); writes bench/results/cluster_bench.md/.json
bench-cluster: $(VENV)/.bench-installed kafka-jars zookeeper-jars
	$(PY) -m bench.suites.cluster

## bench-small-wide: small idempotent acks=all produce (linger 0, 64 partitions) and a wide fetch
## (500 partitions), kbroker vs Kafka, 3 repetitions (~6 min); writes bench/results/small_wide.md/.json
bench-small-wide: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.small_wide

## bench-curves: produce/consume MB/s and broker CPU s/GB as partitions (10..10,000) and producer
## connections (1..100) grow, kbroker vs Kafka (~9 min per repetition); writes bench/results/cost_curves.md/.json/.png
bench-curves: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.cost_curves

## bench-memory: peak RSS during the side-by-side produce/consume workloads, kbroker vs Kafka with
## its default 1 GiB heap and with a heap sized to the workload (~8 min); writes bench/results/memory.md
bench-memory: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.memory

## bench-cores: one kbroker vs two kbroker brokers in one cluster on this machine vs one Kafka
## (~10 min); writes bench/results/cores.md/.json
bench-cores: $(VENV)/.bench-installed kafka-jars zookeeper-jars
	$(PY) -m bench.suites.cores

## bench-txn: transactional produce (Java ProducerPerformance --transactional-id, a commit every
## 100 ms) and the same idempotent, kbroker vs Kafka (~8 min); writes bench/results/txn.md/.json
bench-txn: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.txn

## bench-consumer-protocol: the consumer group protocol (KIP-848): join to stable of 10 and 100
## members over 1,000 partitions, and broker CPU per heartbeat of a steady 100-member group,
## kbroker vs Kafka, 3 repetitions (~13 min); writes bench/results/consumer_protocol.md/.json
bench-consumer-protocol: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.consumer_protocol

## bench-profile: kbroker under cProfile during the produce and consume workloads;
## writes bench/results/profile.md
bench-profile: $(VENV)/.bench-installed
	$(PY) -m bench.suites.profile

bench-codec: $(VENV)/.test-installed
	$(PY) -m bench.micro.codec

bench-log: $(VENV)/.test-installed
	$(PY) -m bench.micro.log_storage

bench-group: $(VENV)/.test-installed
	$(PY) -m bench.suites.group

## bench-tls: TLS produce/consume MB/s, kbroker vs Kafka on the same openssl certificates
## (~8 min); writes bench/results/tls.md/.json
bench-tls: $(VENV)/.bench-installed kafka-jars
	$(PY) -m bench.suites.tls 100000 1000 3

## certs: test certificates (CA, broker PEM/PKCS12, client, a client of another CA) in certs/
## with openssl, for trying the SSL/SASL_SSL listeners (README "Security"); tests make their own
certs:
	$(PYTHON) tests/support/security_certs.py certs

clean:
	rm -rf $(VENV) build *.egg-info

## cluster: a local cluster in the background: ZooKeeper (from the Maven jars) on
## localhost:2181 and three brokers (broker.id 1-3) on localhost:9092-9094, everything
## (data, logs, pids) under ./data/cluster/; `make cluster-stop` stops it
CLUSTER_DIR := data/cluster
cluster: $(VENV)/.run-installed zookeeper-jars
	mkdir -p $(CLUSTER_DIR)/zookeeper/data
	printf 'tickTime=500\ndataDir=%s\nclientPort=2181\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,stat\n' \
	    "$(abspath $(CLUSTER_DIR))/zookeeper/data" > $(CLUSTER_DIR)/zookeeper/zoo.cfg
	nohup java -Xmx256m -cp '$(ZOOKEEPER_JARS)/*' org.apache.zookeeper.server.quorum.QuorumPeerMain \
	    $(CLUSTER_DIR)/zookeeper/zoo.cfg > $(CLUSTER_DIR)/zookeeper/zookeeper.log 2>&1 & echo $$! > $(CLUSTER_DIR)/zookeeper.pid
	for i in $$(seq 1 120); do $(PY) -c "import socket;s=socket.create_connection(('127.0.0.1',2181),1);s.sendall(b'srvr');assert b'Mode' in s.recv(999)" 2>/dev/null && break; sleep 0.5; done
	for i in 1 2 3; do \
	    nohup $(PY) -m kbroker serve --override broker.id=$$i --override zookeeper.connect=localhost:2181 \
	        --override listeners=PLAINTEXT://localhost:$$((9091 + i)) --override log.dirs=$(CLUSTER_DIR)/broker-$$i \
	        > $(CLUSTER_DIR)/broker-$$i.log 2>&1 & echo $$! > $(CLUSTER_DIR)/broker-$$i.pid; \
	done
	for i in 1 2 3; do for t in $$(seq 1 120); do grep -q 'started (kbroker' $(CLUSTER_DIR)/broker-$$i.log && break; sleep 0.5; done; done
	@echo "cluster up: bootstrap localhost:9092,localhost:9093,localhost:9094 (logs in $(CLUSTER_DIR)/)"

## cluster-stop: stop the brokers (SIGTERM: controlled shutdown), then ZooKeeper
cluster-stop:
	-for i in 3 2 1; do test -f $(CLUSTER_DIR)/broker-$$i.pid && kill $$(cat $(CLUSTER_DIR)/broker-$$i.pid) 2>/dev/null; \
	    while kill -0 $$(cat $(CLUSTER_DIR)/broker-$$i.pid 2>/dev/null) 2>/dev/null; do sleep 0.2; done; rm -f $(CLUSTER_DIR)/broker-$$i.pid; done
	-test -f $(CLUSTER_DIR)/zookeeper.pid && kill $$(cat $(CLUSTER_DIR)/zookeeper.pid) 2>/dev/null; rm -f $(CLUSTER_DIR)/zookeeper.pid
