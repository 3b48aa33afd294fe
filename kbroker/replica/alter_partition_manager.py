"""``AlterPartitionManager``: a leader's ISR changes, sent to the controller (Kafka's
``DefaultAlterPartitionManager``, AlterPartitionManager.scala, 3.x; KIP-497).

A partition leader that wants to shrink or expand its ISR calls :meth:`submit` with the
leader epoch and partition epoch it holds and awaits what the controller committed
(:class:`CommittedIsr`) or the error it answered (an :class:`ErrorCode`).  As in Kafka:

* one pending item per partition: a second submit for a partition whose item is not
  answered yet gets OPERATION_NOT_ATTEMPTED at once (Kafka's ``putIfAbsent`` failing);
* one request in flight at a time, carrying every pending item (batching what queued up
  while the previous one was out); an item leaves the pending set only when an answer for
  its partition arrives, so an item the controller left out of its answer is sent again;
* a top-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH, ...) or a failed connection
  retries every pending item after a backoff (Kafka: 50 ms; here 50 ms doubling to 1 s
  while failures repeat, so that a cluster without a controller is not polled in a tight
  loop); the request never times out on its own (Kafka's ``requestThreadRetryTimeoutMs =
  Long.MaxValue``): the leader's state moves on when a LeaderAndIsr supersedes it.

Versions: v3 (``NewIsrWithEpochs``, KIP-903) when the broker epoch of every new ISR member
is known, else v2 (which the controller reads as epochs -1: unchecked, what a Kafka 3.9
ZooKeeper-mode broker sends); v1 (topic names) if a topic has no id.  Where the broker
epochs come from is the runtime's business (``epoch_of``): this broker's own, the
controller context's when this broker is the controller; a ZooKeeper-mode UpdateMetadata
carries none.

The transport (``send``) is injected: the runtime sends to the active controller over the
inter-broker listener, or hands the request to its own controller runner when it is the
controller; it raises ``OSError``/``TimeoutError``/``ConnectionError`` when it cannot
reach one.  At shutdown (:meth:`close`, or :meth:`aclose` which also waits until the send
and retry tasks have ended) every unanswered submit gets OPERATION_NOT_ATTEMPTED, and no
task starts after it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kbroker.runtime.tasks import cancel_and_wait, task_name
from wire.error_codes import ErrorCode
from wire.messages import AlterPartitionRequest, AlterPartitionResponse

__all__ = ["CommittedIsr", "AlterPartitionManager"]

log = logging.getLogger("kbroker.alter_partition")

_Topic = AlterPartitionRequest.TopicData  # type: ignore[attr-defined]
_Partition = AlterPartitionRequest.PartitionData  # type: ignore[attr-defined]
_BrokerState = AlterPartitionRequest.BrokerState  # type: ignore[attr-defined]

RETRY_BACKOFF_MIN_S = 0.05  # Kafka's 50 ms "send-alter-partition" reschedule
RETRY_BACKOFF_MAX_S = 1.0

Send = Callable[[AlterPartitionRequest, int], Awaitable[AlterPartitionResponse]]


@dataclass(frozen=True)
class CommittedIsr:  # what the controller wrote
    leader: int
    leader_epoch: int
    isr: list[int]
    partition_epoch: int


@dataclass(slots=True)
class _Item:
    topic: str
    partition: int
    leader_epoch: int
    isr: list[int]
    partition_epoch: int
    leader_recovery_state: int
    future: asyncio.Future[CommittedIsr | ErrorCode]


class AlterPartitionManager:
    def __init__(self, broker_id: int, broker_epoch: Callable[[], int], send: Send,
                 topic_id: Callable[[str], uuid.UUID | None],
                 epoch_of: Callable[[int], int] = lambda broker_id: -1) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._send = send
        self._topic_id = topic_id
        self._epoch_of = epoch_of
        self._unsent: dict[tuple[str, int], _Item] = {}
        self._inflight = False
        self._backoff_s = RETRY_BACKOFF_MIN_S
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self.requests_sent = 0  # for tests and logs

    async def submit(self, topic: str, partition: int, leader_epoch: int,
                     new_isr: list[int], partition_epoch: int,
                     leader_recovery_state: int = 0) -> CommittedIsr | ErrorCode:
        """Ask the controller to make ``new_isr`` the ISR; ``leader_recovery_state`` 0 =
        RECOVERED, 1 = RECOVERING (KIP-704)."""
        key = (topic, partition)
        if self._closed or key in self._unsent:
            return ErrorCode.OPERATION_NOT_ATTEMPTED
        fut: asyncio.Future[CommittedIsr | ErrorCode] = asyncio.get_running_loop().create_future()
        self._unsent[key] = _Item(topic, partition, leader_epoch, list(new_isr), partition_epoch,
                                  leader_recovery_state, fut)
        self._maybe_propagate()
        # The caller giving up (cancelled) does not withdraw the item: it may be in flight.
        return await asyncio.shield(fut)

    def pending(self) -> list[tuple[str, int]]:
        return sorted(self._unsent)

    def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        for item in self._unsent.values():
            if not item.future.done():
                item.future.set_result(ErrorCode.OPERATION_NOT_ATTEMPTED)
        self._unsent.clear()

    async def aclose(self) -> None:
        """:meth:`close`, then wait until the send or retry under way has ended."""
        self.close()
        for task in await cancel_and_wait(list(self._tasks)):
            log.warning("AlterPartition task did not stop: %s", task_name(task))

    # -- sending -------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self._closed:   # e.g. the retry of a send that ended as the manager closed
            coro.close()
            return
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _maybe_propagate(self) -> None:
        if self._closed or self._inflight or not self._unsent:
            return
        self._inflight = True
        self._spawn(self._send_pending(list(self._unsent.values())))

    async def _send_pending(self, items: list[_Item]) -> None:
        error: int
        try:
            req, version = self._build(items)
            self.requests_sent += 1
            resp = await self._send(req, version)
        except (OSError, TimeoutError, ConnectionError, asyncio.IncompleteReadError) as e:
            log.info("AlterPartition for %d partition(s) could not reach the controller (%r); "
                     "retrying", len(items), e)
            error = ErrorCode.NETWORK_EXCEPTION
        except asyncio.CancelledError:
            self._inflight = False
            raise
        except Exception:  # keep the manager alive whatever the transport raised
            log.exception("AlterPartition send failed")
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        else:
            error = self._handle(resp, version, items)
        self._inflight = False
        if error == ErrorCode.NONE:
            self._backoff_s = RETRY_BACKOFF_MIN_S
            self._maybe_propagate()
        else:
            delay, self._backoff_s = self._backoff_s, min(self._backoff_s * 2, RETRY_BACKOFF_MAX_S)
            self._spawn(self._retry_after(delay))

    async def _retry_after(self, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        self._maybe_propagate()

    def _build(self, items: list[_Item]) -> tuple[AlterPartitionRequest, int]:
        by_topic: dict[str, list[_Item]] = {}
        for item in items:
            by_topic.setdefault(item.topic, []).append(item)
        ids = {t: self._topic_id(t) for t in by_topic}
        if any(tid is None for tid in ids.values()):
            version = 1
        else:
            known = all(self._epoch_of(b) >= 0 for item in items for b in item.isr)
            version = 3 if known else 2
        topics = []
        for topic, its in by_topic.items():
            parts = []
            for item in its:
                p = _Partition(partition_index=item.partition, leader_epoch=item.leader_epoch,
                               leader_recovery_state=item.leader_recovery_state,
                               partition_epoch=item.partition_epoch)
                if version >= 3:
                    p.new_isr_with_epochs = [_BrokerState(broker_id=b, broker_epoch=self._epoch_of(b))
                                             for b in item.isr]
                else:
                    p.new_isr = list(item.isr)
                parts.append(p)
            tid = ids[topic]
            topics.append(_Topic(topic_name=topic if version < 2 else "",
                                 topic_id=tid if version >= 2 and tid is not None else uuid.UUID(int=0),
                                 partitions=parts))
        return AlterPartitionRequest(broker_id=self.broker_id, broker_epoch=self._broker_epoch(),
                                     topics=topics), version

    def _handle(self, resp: AlterPartitionResponse, version: int, items: list[_Item]) -> int:
        """``handleAlterPartitionResponse``: complete what was answered; the top-level error."""
        if resp.error_code != ErrorCode.NONE:
            log.warning("controller answered AlterPartition with %s; retrying",
                        _name(resp.error_code))
            return resp.error_code
        names = {self._topic_id(item.topic): item.topic for item in items} if version >= 2 else {}
        answers: dict[tuple[str, int], CommittedIsr | ErrorCode] = {}
        for t in resp.topics:
            topic = names.get(t.topic_id) if version >= 2 else t.topic_name
            if not topic:
                log.error("unexpected topic %s in an AlterPartition answer; ignored",
                          t.topic_id if version >= 2 else t.topic_name)
                continue
            for p in t.partitions:
                if p.error_code == ErrorCode.NONE:
                    answers[(topic, p.partition_index)] = CommittedIsr(
                        p.leader_id, p.leader_epoch, list(p.isr), p.partition_epoch)
                else:
                    answers[(topic, p.partition_index)] = _code(p.error_code)
        for item in items:
            key = (item.topic, item.partition)
            answer = answers.get(key)
            if answer is None:
                log.warning("partition %s-%d was sent in AlterPartition but not answered; resending",
                            *key)
                continue
            if self._unsent.get(key) is item:
                del self._unsent[key]
            if not item.future.done():
                item.future.set_result(answer)
        return ErrorCode.NONE


def _code(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def _name(code: int) -> str:
    return _code(code).name
