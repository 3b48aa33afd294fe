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

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

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
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"{end}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
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
