"""Producer id allocation that never repeats an id, also across restarts.

Kafka's controller hands out blocks of 1000 ids recorded in its metadata log, and a broker
asks for the next block before its current one runs out (RPCProducerIdManager prefetches
at 90 %).  Here a small file in the first log dir records the end of the reserved ids
(``producer-id-block``: one line, the first id *not* yet reserved); it is written and
fsynced before any id of a new block is handed out, so after a crash the next start
begins past every id that may have been given away.

Threads: ``generate`` runs on the event loop (InitProducerId), so the file is never written
there in the normal course: the first block is reserved when the manager is created (with
the broker state, off the loop), and the next one on this file's writer thread once 90 % of
the current block is used.  Only if a whole tenth of a block (100 ids) is handed out before
that write is durable does ``generate`` wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from cluster import znodes
from cluster.coordination import BadVersionError, NodeExistsError, NoNodeError
from kbroker.runtime.tasks import cancel_and_wait, task_name
from log.durable_files import replace_file

log = logging.getLogger("kbroker.producer_ids")

BLOCK_SIZE = 1000
PREFETCH_AT = BLOCK_SIZE * 9 // 10  # ids used in the current block when the next is reserved
FILE_NAME = "producer-id-block"


class ProducerIdManager:
    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, FILE_NAME)
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="producer-id-block")
        start = self._read()
        self._write(start + BLOCK_SIZE)  # the first block, now (the caller is off the loop)
        self._next, self._block_end = start, start + BLOCK_SIZE
        self._prefetched: Future[int] | None = None  # the next block's end, once durable

    def _read(self) -> int:
        try:
            with open(self.path, encoding="ascii") as f:
                return max(0, int(f.read().strip() or 0))
        except (OSError, ValueError):
            return 0

    def _write(self, end: int) -> int:
        replace_file(self.path, f"{end}\n".encode("ascii"))
        return end

    def generate(self) -> int:
        """The next producer id (thread-safe)."""
        with self._lock:
            if self._next >= self._block_end:
                if self._prefetched is None:  # (not reached: the prefetch starts earlier)
                    self._prefetched = self._writer.submit(self._write, self._block_end + BLOCK_SIZE)
                # blocks only if 100 ids went out faster than one small fsynced write
                self._block_end = self._prefetched.result()
                self._prefetched = None
            pid = self._next
            self._next += 1
            if self._prefetched is None and self._block_end - self._next <= BLOCK_SIZE - PREFETCH_AT:
                self._prefetched = self._writer.submit(self._write, self._block_end + BLOCK_SIZE)
            return pid

    def close(self) -> None:
        """Finish a reservation in flight (shutdown)."""
        self._writer.shutdown(wait=True)


class ProducerIdsNotReady(Exception):
    """No producer id is available until the next block arrives (answered
    COORDINATOR_LOAD_IN_PROGRESS, which clients retry, as Kafka's RPCProducerIdManager does)."""


class ZkProducerIdManager:
    """Cluster mode: producer ids unique across the cluster, in blocks of 1000 claimed in
    ZooKeeper's ``/latest_producer_id_block`` (Kafka's ``ZkProducerIdManager``): read the
    last claimed block, claim the next one with a write conditional on the znode's version,
    and on a race (another broker claimed meanwhile) read again.  The znode's JSON is
    Kafka's (``{"version":1,"broker":1,"block_start":"0","block_end":"999"}``, both ends
    inclusive), so a Kafka broker and kbroker never hand out the same id from one cluster.

    ``generate`` runs on the event loop and never waits: the next block is claimed by a task
    once 90 % of the current one is used (RPCProducerIdManager's prefetch); if ids run out
    before it arrives, :class:`ProducerIdsNotReady`.  Call :meth:`start` (on the loop) to
    claim the first block."""

    def __init__(self, zk: Any, broker_id: int) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self._next = self._end = 0  # the current block: [next, end)
        self._ready: tuple[int, int] | None = None  # the next block, claimed
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        self._prefetch()

    def generate(self) -> int:
        if self._next >= self._end:
            if self._ready is None:
                self._prefetch()
                raise ProducerIdsNotReady("Producer ID block is full. Waiting for next block")
            (self._next, self._end), self._ready = self._ready, None
        pid = self._next
        self._next += 1
        if self._end - self._next <= BLOCK_SIZE - PREFETCH_AT and self._ready is None:
            self._prefetch()
        return pid

    def _prefetch(self) -> None:
        # none once closed: an InitProducerId answered during the shutdown's flush would
        # start a claim on the closed session (a warning with its traceback)
        if self._closed:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._claim())

    async def _claim(self) -> None:
        try:
            self._ready = await self.claim_block()
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - ZooKeeper away: the next generate tries again
            log.warning("claiming a producer id block in %s failed", znodes.PRODUCER_ID_BLOCK_PATH,
                        exc_info=True)

    async def claim_block(self) -> tuple[int, int]:
        """Claim the next block: ``(first id, end)``, end exclusive."""
        while True:
            try:
                data, stat = await self.zk.get(znodes.PRODUCER_ID_BLOCK_PATH)
            except NoNodeError:
                data, stat = b"", None
            last = znodes.decode_producer_id_block(data)
            first = 0 if last is None else last.last + 1
            block = znodes.ProducerIdBlock(self.broker_id, first, first + BLOCK_SIZE - 1)
            try:
                if stat is None:
                    await self.zk.create(znodes.PRODUCER_ID_BLOCK_PATH, znodes.encode_producer_id_block(block))
                else:
                    await self.zk.set(znodes.PRODUCER_ID_BLOCK_PATH, znodes.encode_producer_id_block(block),
                                      version=stat.version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker claimed a block meanwhile
            log.info("broker %d claimed producer ids %d-%d", self.broker_id, block.first, block.last)
            return block.first, block.last + 1

    def close(self) -> None:
        self._closed = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def aclose(self) -> None:
        """On the loop, before the session closes: a claim under way ends, none starts."""
        self._closed = True
        if self._task is not None:
            for task in await cancel_and_wait([self._task]):
                log.warning("producer id block claim did not stop: %s", task_name(task))


# where new producer ids come from: a local file (single node) or ZooKeeper blocks (cluster)
ProducerIds = ProducerIdManager | ZkProducerIdManager
