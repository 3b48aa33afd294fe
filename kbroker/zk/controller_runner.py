"""``ControllerRunner``: the I/O half of the controller (Kafka's ``KafkaController`` event
loop, ``ControllerEventManager`` and ``ControllerChannelManager``) around the pure
``cluster.controller.Controller``.

One asyncio task takes work items from one queue, in order, as Kafka's single controller
thread does; ZooKeeper watches only enqueue an item, and the item re-reads what it needs
(and re-arms its one-shot watch) when its turn comes:

* ``elect`` (start-up, ``/controller`` changed, a new session): if ``/controller`` names
  another broker, remember it and watch the znode; if it is gone, run Kafka's election
  multi (``election_ops``: create the ephemeral ``/controller`` + bump ``/controller_epoch``
  at its version).  Winning: arm the child watches of ``/brokers/ids``, ``/brokers/topics``
  and ``/admin/delete_topics`` and a data watch per topic, read the cluster
  (``zk_io.read_cluster``) and feed ``BecameController``.  If we are active but
  ``/controller`` is gone or another's, we resign first.
* ``brokers`` / ``topics`` / ``topic:<name>`` / ``deletions``: BrokerChange, TopicChange,
  PartitionModifications, TopicDeletion from fresh reads.
* ``preferred``: ``/admin/preferred_replica_election`` created (an exists watch, Kafka's
  ``PreferredReplicaElectionHandler``): its partitions get a ZK-triggered preferred
  election, and the controller deletes the znode.
* ``("reassign", type)``: ``/admin/reassign_partitions`` created or changed (an exists watch,
  Kafka's ``PartitionReassignmentHandler``): content the controller has not seen yet
  becomes ZkPartitionReassignment.
* Before BecameController and each BrokerChange, the topics' ``unclean.leader.election.enable``
  overrides are read from ``/config/topics`` (the controller's config consults them);
  ``config_changes`` (a child watch on ``/config/changes``) re-reads them and a topic that
  turned it on gets TopicUncleanLeaderElectionEnable (Kafka's TopicConfigHandler hook).
* AlterPartition, AlterPartitionReassignments and ListPartitionReassignments (``_ask``:
  answered once the event's writes are done; a failed write answers NOT_CONTROLLER).
* ControlledShutdown and ElectLeaders requests (answered through a future once the
  election's writes are done), StopReplica(delete) results, the auto-rebalance tick.

Each output is executed as the controller's contract says (cluster/controller/commands.py):
writes in order through the port; a write that fails with a connection loss is retried on
the same session (Kafka's ``retryRequestsUntilConnected``); any other failure (the epoch
check failing: a newer controller exists) is fed back, the controller resigns, this
runner deletes ``/controller`` if it is still its own (Kafka's ``maybeResign``) and
campaigns again.  Requests go out only after every write succeeded, through
``BrokerChannel`` (one in-order link per live broker, to its inter-broker listener).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from cluster import znodes
from cluster.controller import (
    AlterPartition,
    ApiPartitionReassignment,
    AutoLeaderRebalance,
    BecameController,
    BrokerChange,
    BrokerRequest,
    ControlledShutdown,
    ControlledShutdownResult,
    Controller,
    ControllerConfig,
    ControllerElection,
    ControllerOutput,
    ElectionOutcome,
    ElectionTrigger,
    ElectionType,
    ListPartitionReassignments,
    PartitionModifications,
    ReplicaLeaderElection,
    Resign,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResult,
    TopicUncleanLeaderElectionEnable,
    ZkDeleteTree,
    ZkPartitionReassignment,
    ZkWrite,
    ZkWriteResult,
    election_ops,
)
from cluster.controller.alter_partition import not_controller_response
from cluster.controller.zk_io import (
    execute,
    read_brokers,
    read_cluster,
    read_reassignment,
    read_topics,
    read_unclean_overrides,
)
from cluster.coordination import (
    ConnectionLossError,
    CoordinationError,
    MultiError,
    NoNodeError,
    WatchEvent,
)
from kbroker.interbroker.broker_channel import BrokerChannel
from kbroker.runtime.tasks import cancel_and_wait, task_name
from wire.error_codes import ErrorCode
from wire.messages import AlterPartitionRequest, AlterPartitionResponse, StopReplicaRequest

__all__ = ["ControllerRunner"]

log = logging.getLogger("kbroker.controller")

RETRY_S = 0.5  # a ZooKeeper read or write lost to a connection loss is retried after this
# How long a ControlledShutdown answer waits for the leaving broker to get its requests.
SHUTDOWN_DELIVERY_WAIT_S = 10.0


def _is_connection_loss(e: BaseException | None) -> bool:
    if isinstance(e, MultiError):
        e = e.cause
    return isinstance(e, ConnectionLossError)


class ControllerRunner:
    def __init__(self, zk: Any, broker_id: int, inter_broker_listener: str,
                 delete_topic_enable: bool = True, unclean_leader_election: bool = False,
                 leader_imbalance_per_broker_percentage: int = 10,
                 auto_rebalance_interval_s: float | None = None) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.listener = inter_broker_listener
        self.controller = Controller(ControllerConfig(
            broker_id=broker_id, inter_broker_listener=inter_broker_listener,
            delete_topic_enable=delete_topic_enable,
            leader_imbalance_per_broker_percentage=leader_imbalance_per_broker_percentage,
            unclean_leader_election_enable=lambda topic: self._unclean.get(topic, unclean_leader_election)))
        # Topics whose /config/topics/<t> sets unclean.leader.election.enable, as read before
        # each failover and broker change (the events that elect offline partitions).
        self._unclean: dict[str, bool] = {}
        self._unclean_default = unclean_leader_election
        self._last_sent: list[tuple[int, asyncio.Future[Any] | None]] = []  # the last output's sends
        self._answers: set[asyncio.Task[None]] = set()
        self.channel = BrokerChannel(client_id=f"broker-{broker_id}-controller")
        self.active_controller_id = -1  # as last read from /controller
        self.epoch = -1  # our epoch while active
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._armed: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._rebalance_task: asyncio.Task[None] | None = None
        self._auto_rebalance_interval_s = auto_rebalance_interval_s
        self.on_change: Callable[[], None] | None = None  # told when active_controller_id changes
        self._ready = asyncio.Event()  # set while the controller is active
        self._stopped = False  # stop() ran: nothing is spawned any more

    @property
    def is_active(self) -> bool:
        return self.controller.is_active

    async def wait_ready(self, timeout_s: float) -> bool:
        """True once this broker is the active controller.  A broker that has won
        ``/controller`` but is still reading the cluster (failover) waits for it, up to
        ``timeout_s``, as Kafka's admin requests wait behind the failover event; a broker
        that is not the controller answers False at once (NOT_CONTROLLER)."""
        if self.is_active:
            return True
        if self.active_controller_id != self.broker_id:
            return False
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            return False
        return self.is_active

    # -- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())
        if self._auto_rebalance_interval_s:
            self._rebalance_task = asyncio.ensure_future(self._rebalance_loop())
        self.enqueue("elect")

    async def stop(self) -> None:
        """End the event task, the rebalance tick, the ControlledShutdown answers waiting
        for deliveries and every broker link, all before returning (none is left for the
        closing event loop to destroy)."""
        self._stopped = True
        tasks = [t for t in (self._task, self._rebalance_task) if t is not None]
        for task in await cancel_and_wait([*tasks, *self._answers]):
            log.warning("controller task did not stop: %s", task_name(task))
        await self.channel.aclose()

    def enqueue(self, item: Any) -> None:
        self._queue.put_nowait(item)

    def session_lost(self) -> None:
        """The ZooKeeper session expired: our ephemerals and watches are gone."""
        self._armed.clear()
        self.enqueue(Resign("session expired"))

    def session_renewed(self) -> None:
        self._armed.clear()
        self.enqueue("elect")

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResult:
        fut: asyncio.Future[ControlledShutdownResult] = asyncio.get_running_loop().create_future()
        self.enqueue(("shutdown", ControlledShutdown(broker_id, broker_epoch), fut))
        return await fut

    async def _ask(self, event: Any) -> tuple[ControllerOutput, bool]:
        """Run ``event`` on the controller's queue: its output and whether every write of it
        was applied (False: the controller resigned instead)."""
        fut: asyncio.Future[tuple[ControllerOutput, bool]] = asyncio.get_running_loop().create_future()
        self.enqueue(("ask", event, fut))
        return await fut

    async def alter_partition(self, request: AlterPartitionRequest, version: int) -> AlterPartitionResponse:
        """AlterPartition (``KafkaController.alterPartitions``): the answer once the state
        znodes are written; NOT_CONTROLLER if this broker is not (or stopped being) the
        controller, so the leader retries with the next one."""
        out, ok = await self._ask(AlterPartition(request, version))
        if ok and out.alter_partition is not None:
            return out.alter_partition
        return not_controller_response()

    async def alter_partition_reassignments(
        self, targets: dict[tuple[str, int], tuple[int, ...] | None]
    ) -> tuple[int, dict[tuple[str, int], tuple[int, str | None]]]:
        """AlterPartitionReassignments: (top-level error, per-partition (error, message))."""
        out, ok = await self._ask(ApiPartitionReassignment(targets))
        if not ok or out.reassignments is None:
            return out.reassignment_error or ErrorCode.NOT_CONTROLLER, {}
        return ErrorCode.NONE, out.reassignments

    async def list_partition_reassignments(
        self, partitions: frozenset[tuple[str, int]] | None
    ) -> tuple[int, dict[tuple[str, int], Any]]:
        out, _ = await self._ask(ListPartitionReassignments(partitions))
        if out.listed is None:
            return out.reassignment_error or ErrorCode.NOT_CONTROLLER, {}
        return ErrorCode.NONE, out.listed

    async def elect_leaders(self, partitions: frozenset[tuple[str, int]], election_type: ElectionType
                            ) -> dict[tuple[str, int], ElectionOutcome]:
        """ElectLeaders (Kafka's ``KafkaController.electLeaders``): the outcome per partition
        once the election's ZooKeeper writes are done; NOT_CONTROLLER for every partition
        when this broker is not the active controller by the time the event runs."""
        fut: asyncio.Future[dict[tuple[str, int], ElectionOutcome]] = \
            asyncio.get_running_loop().create_future()
        self.enqueue(("elect_leaders", ReplicaLeaderElection(
            partitions, election_type, ElectionTrigger.ADMIN), fut))
        return await fut

    async def _rebalance_loop(self) -> None:
        assert self._auto_rebalance_interval_s
        while not self._stopped:
            await asyncio.sleep(self._auto_rebalance_interval_s)
            if self.is_active:
                self.enqueue(AutoLeaderRebalance())

    # -- the event loop ------------------------------------------------------------------

    async def _run(self) -> None:
        # (``_stopped``: a cancellation lost in a 3.11 wait_for still ends the loop, tasks.py)
        while not self._stopped:
            item = await self._queue.get()
            try:
                await self._process(item)
            except asyncio.CancelledError:
                raise
            except CoordinationError as e:
                if _is_connection_loss(e):
                    log.info("controller work %r interrupted by a ZooKeeper connection loss; "
                             "retrying", item if isinstance(item, str) else type(item).__name__)
                    if isinstance(item, str):
                        self._armed.discard(item)  # the failed read did not set its watch
                    await asyncio.sleep(RETRY_S)
                    self.enqueue(item)
                else:
                    log.warning("controller work %r failed: %r", item, e)
            except Exception:
                log.exception("controller work %r failed", item)

    def _watch(self, key: str) -> Callable[[WatchEvent], None] | None:
        """A one-shot watch callback for ``key``, or None if one is already armed."""
        if key in self._armed:
            return None
        self._armed.add(key)

        def fire(_: WatchEvent) -> None:
            self._armed.discard(key)
            self.enqueue(key)

        return fire

    async def _process(self, item: Any) -> None:
        if item == "elect":
            await self._elect()
            return
        if isinstance(item, Resign):
            await self._apply(self.controller.handle(item))
            return
        if isinstance(item, tuple) and item[0] == "elect_leaders":
            _, event, fut = item
            out = self.controller.handle(event)
            await self._apply(out)
            if not fut.done():
                fut.set_result(out.elections or {})
            return
        if isinstance(item, tuple) and item[0] == "ask":
            _, event, fut = item
            out = self.controller.handle(event)
            ok = await self._apply(out)
            if not fut.done():
                fut.set_result((out, ok))
            return
        if isinstance(item, tuple) and item[0] == "shutdown":
            _, event, fut = item
            out = self.controller.handle(event)
            await self._apply(out)
            result = out.controlled_shutdown or ControlledShutdownResult(ErrorCode.NOT_CONTROLLER)
            # Answer once the leaving broker has the requests this decided for it (its
            # LeaderAndIsr as a follower: it unloads groups and fails parked acks=all
            # produces before it exits), bounded; Kafka answers at once and races them.
            own = [f for b, f in self._last_sent if b == event.broker_id and f is not None]
            self._spawn_answer(fut, result, own)
            return
        if not self.is_active:
            return  # a watch of an earlier term, or work queued before we resigned
        log.info("controller %d: %s changed", self.broker_id, item if isinstance(item, str)
                 else type(item).__name__)
        if item == "brokers":
            await self.zk.children(znodes.BROKER_IDS_PATH, watch=self._watch("brokers"))
            brokers = await read_brokers(self.zk)
            self._update_links(brokers)
            ctx = self.controller.context
            if ctx is not None:
                self._unclean = await read_unclean_overrides(self.zk, sorted(ctx.all_topics))
            await self._apply(self.controller.handle(BrokerChange(brokers)))
        elif item == "topics":
            await self.zk.children(znodes.TOPICS_PATH, watch=self._watch("topics"))
            topics = await read_topics(self.zk)
            for name in topics:
                await self._arm_topic(name)
            await self._apply(self.controller.handle(TopicChange(topics)))
        elif isinstance(item, str) and item.startswith("topic:"):
            name = item[len("topic:"):]
            try:
                data, _ = await self.zk.get(znodes.topic_path(name), watch=self._watch(item))
            except NoNodeError:
                return
            await self._apply(self.controller.handle(
                PartitionModifications(name, znodes.decode_topic(data))))
        elif item == "preferred":
            await self._preferred_replica_election()
        elif isinstance(item, tuple) and item[0] == "reassign":
            await self._reassign_znode_changed()
        elif item == "config_changes":
            await self._topic_configs_changed()
        elif item == "deletions":
            topics = await self.zk.children(znodes.DELETE_TOPICS_PATH, watch=self._watch("deletions"))
            await self._apply(self.controller.handle(TopicDeletion(frozenset(topics))))
        else:  # events built elsewhere (StopReplica results, the rebalance tick)
            await self._apply(self.controller.handle(item))

    async def _preferred_replica_election(self) -> None:
        """``/admin/preferred_replica_election`` appeared (or changed, or went): re-arm the
        watch, and elect the preferred replicas of the partitions it lists."""
        stat = await self.zk.exists(znodes.PREFERRED_REPLICA_ELECTION_PATH,
                                    watch=self._watch("preferred"))
        if stat is None:
            return
        try:
            data, _ = await self.zk.get(znodes.PREFERRED_REPLICA_ELECTION_PATH)
        except NoNodeError:
            return
        try:
            partitions = frozenset(znodes.decode_partition_list(data))
        except znodes.ZnodeFormatError as e:
            log.warning("ignoring %s: %s", znodes.PREFERRED_REPLICA_ELECTION_PATH, e)
            return
        out = self.controller.handle(ReplicaLeaderElection(
            partitions, ElectionType.PREFERRED, ElectionTrigger.ZK))
        await self._apply(out)
        log.info("preferred replica election for %d partition(s) from %s: %s", len(partitions),
                 znodes.PREFERRED_REPLICA_ELECTION_PATH,
                 {f"{t}-{p}": ErrorCode(o.error_code).name for (t, p), o in (out.elections or {}).items()})

    async def _arm_topic(self, name: str) -> None:
        key = f"topic:{name}"
        watch = self._watch(key)
        if watch is not None:
            try:
                await self.zk.get(znodes.topic_path(name), watch=watch)
            except NoNodeError:
                self._armed.discard(key)

    # -- election ------------------------------------------------------------------------

    async def _elect(self) -> None:
        stat = await self.zk.exists(znodes.CONTROLLER_PATH, watch=self._watch("elect"))
        if stat is not None:
            try:
                data, stat = await self.zk.get(znodes.CONTROLLER_PATH)
                owner = znodes.decode_controller(data)
            except NoNodeError:
                self.enqueue("elect")
                return
            mine = stat.ephemeral_owner == self.zk.session_id
            if self.is_active and mine:
                return  # still ours
            if self.is_active:
                await self._apply(self.controller.handle(Resign("/controller moved")))
                return
            if mine:
                # Ours but not active (we resigned after a failed write): give it up so
                # that an election runs (Kafka's maybeResign deletes it the same way).
                await self._delete_own_controller()
                return
            self._set_active_controller(owner)
            return
        if self.is_active:
            await self._apply(self.controller.handle(Resign("/controller deleted")))
            return
        try:
            data, epoch_stat = await self.zk.get(znodes.CONTROLLER_EPOCH_PATH)
            seen = ControllerElection(znodes.decode_controller_epoch(data), epoch_stat.version)
        except NoNodeError:
            seen = ControllerElection(0, -1)
        try:
            await self.zk.multi(election_ops(self.broker_id, int(time.time() * 1000), seen))
        except MultiError as e:
            if _is_connection_loss(e):
                raise
            log.info("broker %d lost the controller election: %r", self.broker_id, e.cause)
            self.enqueue("elect")  # read the winner (and watch it)
            return
        self.epoch = seen.new_epoch
        self._set_active_controller(self.broker_id)
        log.info("broker %d is the controller now, epoch %d (epoch zk version %d)",
                 self.broker_id, seen.new_epoch, seen.new_epoch_zk_version)
        self._armed -= {"brokers", "topics", "deletions", "preferred", "config_changes"}
        self._armed = {k for k in self._armed if not k.startswith("topic:")}
        await self.zk.children(znodes.BROKER_IDS_PATH, watch=self._watch("brokers"))
        await self.zk.children(znodes.TOPICS_PATH, watch=self._watch("topics"))
        await self.zk.children(znodes.DELETE_TOPICS_PATH, watch=self._watch("deletions"))
        # the znode's creation fires it; a request already there is in BecameController
        await self.zk.exists(znodes.PREFERRED_REPLICA_ELECTION_PATH, watch=self._watch("preferred"))
        await self._arm_reassign()
        await self.zk.children(znodes.CONFIG_CHANGES_PATH, watch=self._watch("config_changes"))
        event: BecameController = await read_cluster(self.zk, seen.new_epoch, seen.new_epoch_zk_version)
        self._unclean = await read_unclean_overrides(self.zk, sorted(event.topics))
        for name in event.topics:
            await self._arm_topic(name)
        self._update_links(event.brokers)
        await self._apply(self.controller.handle(event))
        if self.is_active:
            self._ready.set()

    async def _topic_configs_changed(self) -> None:
        await self.zk.children(znodes.CONFIG_CHANGES_PATH, watch=self._watch("config_changes"))
        ctx = self.controller.context
        if ctx is None:
            return
        before = self._unclean
        self._unclean = await read_unclean_overrides(self.zk, sorted(ctx.all_topics))
        for topic in sorted(self._unclean):
            if self._unclean[topic] and not before.get(topic, self._unclean_default):
                log.info("unclean leader election enabled for topic %s", topic)
                await self._apply(self.controller.handle(TopicUncleanLeaderElectionEnable(topic)))

    # -- /admin/reassign_partitions ------------------------------------------------------

    async def _arm_reassign(self) -> None:
        """An exists watch on ``/admin/reassign_partitions`` (Kafka's
        ``PartitionReassignmentHandler``: only a creation starts reassignments)."""
        if "reassign" in self._armed:
            return
        self._armed.add("reassign")

        def fire(event: WatchEvent) -> None:
            self._armed.discard("reassign")
            self.enqueue(("reassign", event.type))

        try:
            await self.zk.exists(znodes.REASSIGN_PARTITIONS_PATH, watch=fire)
        except CoordinationError:
            self._armed.discard("reassign")
            raise

    async def _reassign_znode_changed(self) -> None:
        """Re-arm; if the znode exists with content the controller has not seen (created by
        a tool, or changed while the connection was down), start what it asks."""
        await self._arm_reassign()
        content = await read_reassignment(self.zk)
        ctx = self.controller.context
        if content is not None and ctx is not None and content != ctx.zk_reassignment:
            await self._apply(self.controller.handle(ZkPartitionReassignment(content)))

    async def _delete_own_controller(self) -> None:
        try:
            await self.zk.delete(znodes.CONTROLLER_PATH)
        except NoNodeError:
            pass
        self.enqueue("elect")

    def _set_active_controller(self, broker_id: int) -> None:
        if broker_id != self.active_controller_id:
            self.active_controller_id = broker_id
            if self.on_change is not None:
                self.on_change()

    # -- executing outputs ---------------------------------------------------------------

    def _update_links(self, brokers: dict) -> None:
        endpoints = {}
        for b in brokers.values():
            e = b.endpoint(self.listener) or (b.endpoints[0] if b.endpoints else None)
            if e is not None:
                endpoints[b.broker_id] = (e.host or "localhost", e.port)
        self.channel.update_brokers(endpoints)

    async def _execute(self, write: ZkWrite | ZkDeleteTree) -> ZkWriteResult:
        while True:
            result = await execute(self.zk, write)
            if not _is_connection_loss(result.error):
                return result
            await asyncio.sleep(RETRY_S)

    async def _apply(self, out: ControllerOutput) -> bool:
        """Execute ``out``; False when a write failed (the controller resigned) or the
        output itself is a resignation."""
        for write in out.writes:
            result = await self._execute(write)
            if result.error is not None:
                log.warning("controller write failed (%r): resigning", result.error)
                self.controller.handle(result)
                await self._resigned()
                return False
        ctx = self.controller.context
        if ctx is not None:
            self._update_links(ctx.brokers)
        self._last_sent = [(req.broker_id, self._send(req)) for req in out.requests]
        if out.resigned:
            await self._resigned()
            return False
        return True

    async def _resigned(self) -> None:
        log.info("broker %d resigned as controller (epoch %d)", self.broker_id, self.epoch)
        self._ready.clear()
        self.channel.close()
        self._armed = {k for k in self._armed if k == "elect"}
        try:
            stat = await self.zk.exists(znodes.CONTROLLER_PATH)
            if stat is not None and stat.ephemeral_owner == self.zk.session_id:
                await self.zk.delete(znodes.CONTROLLER_PATH)
        except CoordinationError:
            pass
        self._set_active_controller(-1)
        self.enqueue("elect")

    def _spawn_answer(self, fut: asyncio.Future[Any], result: Any, after: list[asyncio.Future[Any]]) -> None:
        async def answer() -> None:
            try:
                if after:
                    await asyncio.wait(after, timeout=SHUTDOWN_DELIVERY_WAIT_S)
            finally:   # also when the runner stops meanwhile: answered, not left waiting
                if not fut.done():
                    fut.set_result(result)

        if self._stopped:
            if not fut.done():
                fut.set_result(result)
            return
        task = asyncio.ensure_future(answer())
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)

    def _send(self, req: BrokerRequest) -> asyncio.Future[Any] | None:
        fut = self.channel.send(req.broker_id, req.message, req.api_version)
        if fut is None:
            return None
        msg = req.message
        if isinstance(msg, StopReplicaRequest) and any(
                p.delete_partition for t in msg.topic_states for p in t.partition_states):
            broker_id = req.broker_id

            def done(f: asyncio.Future[Any]) -> None:
                if f.cancelled() or f.exception() is not None:
                    return
                resp = f.result()
                errors = {(e.topic_name, e.partition_index): e.error_code
                          for e in resp.partition_errors}
                self.enqueue(TopicDeletionStopReplicaResult(broker_id, errors, resp.error_code))

            fut.add_done_callback(done)
        return fut
