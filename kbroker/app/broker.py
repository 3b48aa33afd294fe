"""``Broker``: a whole broker in one object, for the command line and for embedding.

From asyncio::

    async with Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": d}) as b:
        print(b.bootstrap_servers)

From synchronous code (its own event loop in a thread)::

    with Broker.start({"log.dirs": d, "listeners": "PLAINTEXT://127.0.0.1:0"}) as b:
        producer = Producer({"bootstrap.servers": b.bootstrap_servers})

Cluster mode (``zookeeper.connect`` set, kbroker/zk/cluster_runtime.py): ZooKeeper is joined
before the logs load (its ``/cluster/id`` must match the log dirs'), the broker registers
once it listens, and shutdown starts with a controlled shutdown.

Start-up: load the logs (recovery after an unclean shutdown), then listen, start the
background thread (retention, flushes, checkpoints) and the log cleaner (cleaner_processes.py:
a thread per cleaner, each with a worker process), and log
``started (kbroker id=N) listening on HOST:PORT``.  Shutdown: stop accepting, stop the
background and cleaner threads (cleanings under way are cancelled), close connections, then
flush, write checkpoints and the clean-shutdown marker.  The log work runs off the event loop
(kbroker/app/log_shutdown.py): every log is fsynced once while the listeners still answer, then
closed in batches on a few threads after they close; the marker is written last.  Every
task a component started has ended by then (each one's stop waits for its tasks:
kbroker/runtime/tasks.py); a loop this module or ``kbroker serve`` owns is closed only after a last
sweep for forgotten tasks and the default executor's shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

import kbroker.handlers  # noqa: F401  (registers every API in REGISTRY / INTER_BROKER)
from kbroker.app import log_shutdown
from kbroker.app.background import BackgroundWorker
from kbroker.app.cleaner_processes import CleanerProcesses
from kbroker.app.wiring import Node, assemble
from kbroker.configs.config import BrokerConfig
from kbroker.replica.broker_state import BrokerState
from kbroker.runtime.tasks import cancel_and_wait, finish_loop
from kbroker.security.listeners import ListenerSpec, build_listeners
from kbroker.server.connection import KafkaConnection
from kbroker.server.registry import INTER_BROKER, REGISTRY
from kbroker.server.server_state import ServerState
from kbroker.server.services import Services
from kbroker.zk.cluster_runtime import ClusterRuntime

log = logging.getLogger("kbroker")

if os.environ.get("KBROKER_TEST_FAIL_API"):   # a test seam: see kbroker/server/registry.py
    log.warning("KBROKER_TEST_FAIL_API: the handlers of api keys %s will raise",
                REGISTRY.fail_for_tests(os.environ["KBROKER_TEST_FAIL_API"]))

TLS_HANDSHAKE_TIMEOUT_S = 10.0   # a TLS handshake not done by then closes its connection
SCHEDULER_TICK_S = 0.1    # how often the background thread runs log/'s due tasks, and the
                          # event loop's fallback group tick


class Broker:
    def __init__(self, config: BrokerConfig | dict[str, Any] | None = None, **overrides: Any):
        if not isinstance(config, BrokerConfig):
            props = {k: str(v) for k, v in (config or {}).items()}
            props.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
            config = BrokerConfig(props)
        self.config = config
        self.state: BrokerState | None = None
        self._server: asyncio.AbstractServer | None = None   # the first listener's
        self._servers: list[asyncio.AbstractServer] = []
        self._listener_specs: list[ListenerSpec] = []   # set by _listen
        self.listener_ports: dict[str, int] = {}   # listener name -> bound port
        self._ticker: asyncio.Task[None] | None = None
        self._background: BackgroundWorker | None = None
        self._cleaner: CleanerProcesses | None = None
        self.cluster: ClusterRuntime | None = None
        self.services: Services | None = None
        self.node: Node | None = None   # the coordinators and ports (kbroker/app/wiring.py)
        self.server = ServerState(REGISTRY)   # replaced at start-up (cluster mode: inter-broker APIs)
        self.host = ""
        self.port = 0
        self.metrics_server: Any = None   # kbroker/app/metrics_server.py, when kbroker.metrics.port is set
        self.metrics_port: int | None = None
        self.console: Any = None          # kbroker/console/, when kbroker.console.listener is set

    @property
    def cleanings(self) -> int:
        """Cleanings the log cleaner's threads have finished (0 when it is off)."""
        return self._cleaner.cleanings if self._cleaner is not None else 0

    # ------------------------------------------------------------ asyncio API
    async def start_async(self) -> Broker:
        loop = asyncio.get_running_loop()
        specs = build_listeners(self.config)   # a bad listener setting stops start-up first
        cluster_id = None
        if self.config.cluster_mode:
            # Cluster mode: ZooKeeper first (Kafka's initZkClient): its /cluster/id is the
            # one the log dirs must carry.
            self.cluster = ClusterRuntime(self.config)
            try:
                cluster_id = await self.cluster.connect()
            except BaseException:
                await self.cluster.zk.close()
                self.cluster = None
                raise
        # Recovery reads files: keep it off the loop so a parent application stays responsive.
        try:
            self.state = await loop.run_in_executor(None, BrokerState, self.config, cluster_id)
        except BaseException:
            if self.cluster is not None:
                await self.cluster.stop()
                self.cluster = None
            raise
        # the coordinators and the ports every request reaches the broker through, built
        # once (kbroker/app/wiring.py), and what the server shares across connections: the
        # registries (the inter-broker one only in cluster mode) and the open connections
        self.node = assemble(self.state, self.cluster)
        self.services = self.node.services
        self.server = ServerState(REGISTRY, INTER_BROKER if self.cluster is not None else None)
        listener = self.config.listeners[0]
        try:
            await self._listen(loop, specs)
        except BaseException:
            await self.stop_async()
            raise
        self.host = listener.host or "localhost"
        self.port = self.state.bound_ports[listener.name]
        self.state.bound_port = self.port
        if self.cluster is not None:
            try:
                await self.cluster.start()
            except BaseException:
                await self.stop_async()
                raise
        self._background = BackgroundWorker(self.state.run_background_tasks, SCHEDULER_TICK_S).start()
        cleaner = self.state.log_manager.cleaner  # None when log.cleaner.enable=false
        if cleaner is not None:
            self._cleaner = CleanerProcesses(cleaner, cleaner.config.num_threads, cleaner.config.backoff_ms).start()
        self._ticker = asyncio.ensure_future(self._tick())
        self.node.txns.start()  # markers of transactions the load found prepared
        try:
            await self._start_ops_endpoints(listener.bind_host)
        except BaseException:   # e.g. the metrics or console port is taken: stop what started
            await self.stop_async()
            raise
        log.info("started (kbroker id=%d) listening on %s:%d", self.config.node_id, self.host, self.port)
        return self

    async def _listen(self, loop: asyncio.AbstractEventLoop, specs: list[ListenerSpec]) -> None:
        """One server per listener (kbroker/security/listeners.py); SSL listeners do their TLS
        handshake in the transport, bounded by a timeout so a slow or broken one costs only
        its own connection."""
        self._listener_specs = specs
        for spec in specs:
            server = await loop.create_server(
                lambda spec=spec: KafkaConnection(self.server, self.services, spec),  # type: ignore[arg-type]
                host=spec.bind_host, port=spec.port, reuse_address=True, backlog=1024,
                ssl=spec.ssl_context,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if spec.ssl_context is not None else None,
            )
            self._servers.append(server)
            if self._server is None:
                self._server = server
            self.state.bound_ports[spec.name] = server.sockets[0].getsockname()[1]
            self.listener_ports[spec.name] = self.state.bound_ports[spec.name]
            log.info("listener %s (%s%s) bound to %s:%d", spec.name, spec.protocol,
                     f", SASL {','.join(spec.sasl_mechanisms)}" if spec.is_sasl else "",
                     spec.host or "*", self.listener_ports[spec.name])

    async def _start_ops_endpoints(self, host: str | None) -> None:
        """/metrics and the web console, when configured (issue 18; both off by default)."""
        port = self.config["kbroker.metrics.port"]
        if port is not None:
            from kbroker.app.metrics_server import MetricsServer

            self.metrics_server = MetricsServer(self)
            self.metrics_port = await self.metrics_server.start(host, port)
        if self.config["kbroker.console.listener"]:
            from kbroker.console.server import start_console

            # the console is a plain client (no TLS, no SASL): it reads through a PLAINTEXT listener
            plain = [s for s in self._listener_specs if s.protocol == "PLAINTEXT"]
            bootstrap = (f"{plain[0].host or 'localhost'}:{self.listener_ports[plain[0].name]}" if plain
                         else self.bootstrap_servers)
            if not plain:
                log.warning("kbroker.console.listener: no PLAINTEXT listener; the console cannot "
                            "authenticate on %s", bootstrap)
            self.console = await start_console(self.config["kbroker.console.listener"], bootstrap)

    async def stop_async(self) -> None:
        for endpoint in (self.console, self.metrics_server):
            if endpoint is not None:
                await endpoint.stop()
        self.console = self.metrics_server = None
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            if self.config["controlled.shutdown.enable"] and cluster.broker_epoch >= 0:
                await cluster.controlled_shutdown()
            await cluster.stop()   # closes the session: the registration goes at once
        if self._ticker is not None:
            await cancel_and_wait([self._ticker])
            self._ticker = None
        flushed = False
        if self.node is not None:
            await self.node.txns.stop()  # the marker sender's task
            await self.node.groups.stop()   # commits waiting for their replication
        if self.state is not None:
            if self._servers:   # fsync every log while still answering (log_shutdown.py)
                flushed = await log_shutdown.flush_all(self.state)
        for server in self._servers:
            server.close()
            await server.wait_closed()
        self._servers.clear()
        self._server = None
        loop = asyncio.get_running_loop()
        if self.state is not None:   # the background pass ends after its task under way
            self.state.scheduler.shutdown()
        # joins (a pass or a cleaning under way ends first): off the loop
        if self._background is not None:
            await loop.run_in_executor(None, self._background.stop)
            self._background = None
        if self._cleaner is not None:  # before the logs close under them
            await loop.run_in_executor(None, self._cleaner.stop)
            self._cleaner = None
        if self.state is not None:  # no partition opens on an executor thread under the shutdown
            await self.state.creations.stop()
        state, self.state = self.state, None
        if state is not None:
            for conn in list(self.server.connections):
                if conn.transport is not None:
                    conn.transport.abort()
            await log_shutdown.close_all(state, flushed)   # off the loop; the marker last
        node, self.node = self.node, None
        if node is not None:   # the producer-id and transaction stores, after the logs
            await loop.run_in_executor(None, node.close)
        if state is not None:
            log.info("shut down (kbroker id=%d) cleanly", self.config.node_id)

    async def __aenter__(self) -> Broker:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(SCHEDULER_TICK_S)
            if self.node is not None:
                self.node.groups.tick()
                self.node.txns.tick()

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    # ------------------------------------------------------------ synchronous API
    @classmethod
    def start(cls, config: BrokerConfig | dict[str, Any] | None = None, **overrides: Any) -> SyncBroker:
        """Run a broker on its own event loop in a daemon thread; returns once it listens."""
        return SyncBroker(cls(config, **overrides))


class SyncBroker:
    """A Broker running in a background thread; use as a context manager or call stop()."""

    def __init__(self, broker: Broker):
        self.broker = broker
        self._loop = new_event_loop()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kbroker", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.broker.start_async())
        except BaseException as e:  # surfaced to the starting thread
            self._error = e
            self._started.set()
            return
        self._started.set()
        self._loop.run_forever()

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        fut = asyncio.run_coroutine_threadsafe(self._stop_and_finish(), self._loop)
        fut.result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _stop_and_finish(self) -> None:
        # the loop is this object's: every task on it ends before it closes (tasks.py)
        await self.broker.stop_async()
        await finish_loop()

    def __enter__(self) -> SyncBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when available (it is a dependency), else asyncio's own loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
