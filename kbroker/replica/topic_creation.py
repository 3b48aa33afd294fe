"""Creating topics and partitions off the event loop (CreateTopics, CreatePartitions,
Metadata auto-create, the single-node internal topics, LeaderAndIsr opening new replicas).

Opening a new partition's log is disk work (a directory, the ``.log`` and its two
preallocated indexes, ``leader-epoch-checkpoint``): ~1 ms a partition on a quiet machine,
10 ms under load, so a 5,000-partition CreateTopics on the event loop stalled every client
for a minute.  Here the logs are opened on an executor thread, ``BATCH`` partitions per call,
and the event loop only registers the finished ``Partition`` objects.

Invariants:

* ``BrokerState.topics`` and ``.partitions`` change on the event loop only, and a topic's
  partitions become visible (Metadata, Produce, Fetch) together, once every one is open.
  ``LogManager.logs`` takes the new logs from the thread as they open (under its lock), so
  the periodic checkpoints may list a partition a moment before requests see it.
* A name is taken from the moment a creation starts (``start_topic``, called on the loop
  right after the request's checks, before any await): a second CreateTopics of it answers
  TOPIC_ALREADY_EXISTS "Topic 'x' already exists." (Kafka: the controller has the topic as
  soon as its records - ZooKeeper mode: its znode - are written, whether or not its
  partitions are open yet); a Metadata that would auto-create it answers
  UNKNOWN_TOPIC_OR_PARTITION (Kafka's AutoTopicCreationManager for a topic in flight).
* Each partition has at most one opener: a second caller (LeaderAndIsr racing a creation)
  waits for the first one's result instead of opening the log again.
* Nothing on the executor thread touches loop-owned state: ``BrokerState.new_partition``
  builds a ``Partition`` from ``LogManager.get_or_create_log`` (thread-safe: its map has a
  lock, ``Scheduler`` queues under a lock) and returns it.

At shutdown (``stop``, before the logs close) the creations under way finish and no new
one starts, so a topic never comes back from a restart with part of its partitions.  A
creation (new topic or CreatePartitions) that fails part-way (a log dir error:
``KafkaStorageError``, KAFKA_STORAGE_ERROR) is all or nothing as well: the partitions it
had opened are never registered and their logs are deleted; a new topic's id and configs
are forgotten.

``before_batch`` is a hook for tests: called on the executor thread before each batch
(e.g. to hold a creation open until the test has seen other requests answered).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from kbroker.metadata.catalog import TopicInfo
from log.errors import KafkaStorageError
from wire.error_codes import ErrorCode
from wire.topic_names import is_internal

if TYPE_CHECKING:
    from kbroker.configs.topic_configs import TopicConfigStore
    from kbroker.replica.partition import Partition
    from kbroker.replica.topic_ids import TopicIds
    from log.log_manager import LogManager

log = logging.getLogger("kbroker.state")

TopicPartition = tuple[str, int]
# Partitions opened per executor call: each call is ~0.1-1 s of disk work, long enough to
# amortise the hand-off, short enough that a failure leaves little half-done.
BATCH = 100


class PartitionStore(Protocol):
    """What a creation reads and changes of the broker's partition store
    (kbroker/replica/broker_state.py ``BrokerState``): the maps on the loop, ``new_partition`` on a
    thread."""

    topics: dict[str, TopicInfo]
    partitions: dict[TopicPartition, Partition]
    topic_configs: TopicConfigStore
    topic_ids: TopicIds
    log_manager: LogManager

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> TopicInfo | None: ...

    def add_partitions(self, name: str, count: int) -> None: ...

    def new_partition(self, topic: str, index: int) -> Partition: ...


class TopicCreations:
    """The creations under way on one broker (``BrokerState.creations``)."""

    def __init__(self, state: PartitionStore) -> None:
        self.state = state
        self._topics: dict[str, asyncio.Future[TopicInfo]] = {}        # new topics in flight
        self._growing: dict[str, tuple[int, asyncio.Future[None]]] = {}  # CreatePartitions: target count
        self._partitions: dict[TopicPartition, asyncio.Future[Partition]] = {}
        self._opening: set[asyncio.Future[None]] = set()   # open_partitions calls under way
        self._stopping = threading.Event()   # shutdown: start nothing more
        self.before_batch: Callable[[list[TopicPartition]], None] | None = None

    # ------------------------------------------------------------ what is in flight
    def creating(self, name: str) -> bool:
        """A creation of topic ``name`` has started and its partitions are not all open."""
        return name in self._topics

    @property
    def stopping(self) -> bool:
        """``stop`` has begun: no new opening starts."""
        return self._stopping.is_set()

    def topics_in_flight(self) -> list[str]:
        return list(self._topics)

    def in_flight(self, name: str) -> asyncio.Future | None:
        """The creation or CreatePartitions of ``name`` under way, if any."""
        growing = self._growing.get(name)
        return self._topics.get(name) or (growing[1] if growing is not None else None)

    def growing_to(self, name: str) -> int | None:
        """The partition count an unfinished CreatePartitions of ``name`` grows it to."""
        growing = self._growing.get(name)
        return growing[0] if growing is not None else None

    # ------------------------------------------------------------ topics
    def start_topic(self, name: str, count: int, configs: dict[str, str] | None = None
                    ) -> asyncio.Future[TopicInfo] | None:
        """Begin creating ``name`` with ``count`` partitions (already checked; on the event
        loop, before any await, so the name is taken at once).  The future ends with the
        topic visible; it is not cancelled by a waiter that gives up (CreateTopics'
        timeout): the creation goes on, as Kafka's does.  Without a running event loop
        (unit tests calling a handler directly) the topic is created synchronously and
        None returned."""
        state = self.state
        if not _loop_running():
            state.create_topic(name, count, configs)
            return None
        if configs:
            state.topic_configs.set(name, configs)
        task = asyncio.ensure_future(self._create(name, count))
        self._topics[name] = task
        task.add_done_callback(lambda t: self._finished(name, t))
        return task

    async def _create(self, name: str, count: int) -> TopicInfo:
        try:
            await self.open_partitions([(name, index) for index in range(count)], undo_on_failure=True)
        except Exception:
            if not self.stopping:   # a failed creation leaves no trace: not its id, not its configs
                self.state.topic_ids.remove(name)
                self.state.topic_configs.remove(name)
            raise
        info = self.state.topics[name] = TopicInfo(name, count, is_internal(name))
        log.info("created topic %s with %d partition(s)", name, count)
        return info

    def _finished(self, name: str, task: asyncio.Future[TopicInfo]) -> None:
        self._topics.pop(name, None)
        failure = None if task.cancelled() else task.exception()
        if failure is not None and self.stopping:
            log.info("creating topic %s stopped by the shutdown", name)
        elif failure is not None:
            log.error("creating topic %s failed", name, exc_info=failure)

    async def ensure_topic(self, name: str, count: int, configs: dict[str, str] | None = None) -> None:
        """The topic exists when this returns: created now if missing, or the creation
        under way awaited (the single-node internal topics)."""
        if name in self.state.topics:
            return
        task = self._topics.get(name) or self.start_topic(name, count, configs)
        if task is not None:
            await asyncio.shield(task)

    def start_partitions(self, name: str, count: int) -> asyncio.Future[None] | None:
        """CreatePartitions (checked already; on the loop): grow ``name`` to ``count``
        (synchronously, returning None, without a running event loop)."""
        if not _loop_running():
            self.state.add_partitions(name, count)
            return None
        current = self.state.topics[name].partitions
        task = asyncio.ensure_future(self._grow(name, current, count))
        self._growing[name] = (count, task)

        def finished(t: asyncio.Future[None]) -> None:
            if self._growing.get(name, (0, None))[1] is t:
                del self._growing[name]
            failure = None if t.cancelled() else t.exception()
            if failure is not None and not self.stopping:
                log.error("adding partitions to %s failed", name, exc_info=failure)
        task.add_done_callback(finished)
        return task

    async def _grow(self, name: str, current: int, count: int) -> None:
        await self.open_partitions([(name, index) for index in range(current, count)], undo_on_failure=True)
        info = self.state.topics.get(name)
        if info is not None:
            info.partitions = max(info.partitions, count)
            log.info("topic %s now has %d partition(s)", name, count)

    # ------------------------------------------------------------ partitions
    async def open_partitions(self, tps: Iterable[TopicPartition], undo_on_failure: bool = False
                              ) -> dict[TopicPartition, Partition]:
        """The partitions ``tps``, their logs opened (created if new) off the event loop;
        registered in ``BrokerState.partitions`` all at once when every one is open.  A
        partition already open is returned as it is; one another caller is opening is
        waited for.  If opening one fails, those opened are registered anyway, or with
        ``undo_on_failure`` (a new topic, new partitions: all or nothing) never registered
        and their logs deleted (off the loop) before the error is raised."""
        if self.stopping:
            raise RuntimeError("the broker is shutting down")
        loop = asyncio.get_running_loop()
        opening = loop.create_future()
        self._opening.add(opening)
        try:
            return await self._open_partitions(loop, tps, undo_on_failure)
        finally:
            self._opening.discard(opening)
            opening.set_result(None)

    async def _open_partitions(self, loop: asyncio.AbstractEventLoop, tps: Iterable[TopicPartition],
                               undo_on_failure: bool = False) -> dict[TopicPartition, Partition]:
        state = self.state
        out: dict[TopicPartition, Partition] = {}
        waits: dict[TopicPartition, asyncio.Future[Partition]] = {}
        mine: list[TopicPartition] = []
        for tp in dict.fromkeys(tps):
            p = state.partitions.get(tp)
            if p is not None:
                out[tp] = p
            elif tp in self._partitions:
                waits[tp] = self._partitions[tp]
            else:
                mine.append(tp)
        futures = {tp: loop.create_future() for tp in mine}
        self._partitions.update(futures)
        opened: dict[TopicPartition, Partition] = {}
        batch: asyncio.Future[None] | None = None
        try:
            for start in range(0, len(mine), BATCH):
                batch = loop.run_in_executor(None, self._open_batch, mine[start:start + BATCH], opened)
                await asyncio.shield(batch)   # a cancelled caller does not stop the thread
        except Exception as e:
            undo = undo_on_failure and not self.stopping
            for tp, fut in futures.items():
                if (undo or tp not in opened) and not fut.done():
                    fut.set_exception(e)
                    fut.exception()  # retrieved: the caller raises it
            if undo:
                await self._unregister(loop, opened)
                opened.clear()
            raise
        finally:
            # what did open is registered (its log is in the LogManager already), unless
            # undone above or a cancelled caller left a thread still filling ``opened`` (shutdown)
            if batch is None or batch.done():
                state.partitions.update(opened)
                for tp, p in opened.items():
                    if not futures[tp].done():
                        futures[tp].set_result(p)
            for fut in futures.values():
                if not fut.done():   # cancelled (shutdown)
                    fut.cancel()
            for tp in mine:
                self._partitions.pop(tp, None)
        out.update(opened)
        for tp, fut in waits.items():
            out[tp] = await asyncio.shield(fut)
        return out

    async def _unregister(self, loop: asyncio.AbstractEventLoop, opened: dict[TopicPartition, Partition]) -> None:
        """A failed creation's partitions that did open: out of the LogManager now (on the
        loop, as a deletion), their logs closed and their directories deleted off it."""
        lm = self.state.log_manager
        removed = [(tp, lg) for tp in opened if (lg := lm.remove_log(tp)) is not None]
        if removed:
            log.info("creation failed: deleting the %d partition(s) it had opened", len(removed))

            def delete() -> None:
                for tp, lg in removed:
                    try:
                        lm.finish_delete(tp, lg)
                    except Exception:  # noqa: BLE001 - the others still go
                        log.exception("deleting %s-%d of a failed creation failed", *tp)
            await asyncio.shield(loop.run_in_executor(None, delete))

    def _open_batch(self, batch: list[TopicPartition], opened: dict[TopicPartition, Partition]) -> None:
        """On an executor thread: open (create) each log into ``opened`` (which the loop
        reads only once this call has returned or raised); nothing loop-owned is touched."""
        if self.before_batch is not None:
            self.before_batch(batch)
        for tp in batch:
            opened[tp] = self.state.new_partition(*tp)

    async def stop(self) -> None:
        """Shutdown, before the logs close: the creations under way finish (a topic cut
        half-way would come back at restart with the partitions that happened to be open;
        Kafka's would come back whole from its metadata), none starts any more."""
        self._stopping.set()
        while pending := [f for f in (*self._opening, *self._topics.values(),
                                      *(task for _, task in self._growing.values())) if not f.done()]:
            await asyncio.wait(pending)


def creation_error_code(exc: BaseException) -> int:
    """The error code a failed creation answers (Kafka's ``ApiError.fromThrowable`` for what a
    creation can raise): a log dir's I/O error (``KafkaStorageError``, LogManager's
    KafkaStorageException) is KAFKA_STORAGE_ERROR, anything else UNKNOWN_SERVER_ERROR."""
    return exc.error if isinstance(exc, KafkaStorageError) else ErrorCode.UNKNOWN_SERVER_ERROR


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
