"""Producer id allocation that never repeats an id, also across restarts.

Kafka's controller hands out blocks of 1000 ids recorded in its metadata log.  Here a
small file in the first log dir records the end of the block in use
(``producer-id-block``: one line, the first id *not* yet reserved); it is written and
fsynced before any id of a new block is handed out, so after a crash the next start
begins past every id that may have been given away.
"""

from __future__ import annotations

import os

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdManager:
    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, FILE_NAME)
        self._next = self._block_end = self._read()

    def _read(self) -> int:
        try:
            with open(self.path, encoding="ascii") as f:
                return max(0, int(f.read().strip() or 0))
        except (OSError, ValueError):
            return 0

    def _reserve(self) -> None:
        end = self._next + BLOCK_SIZE
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"{end}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._block_end = end

    def generate(self) -> int:
        if self._next >= self._block_end:
            self._reserve()
        pid = self._next
        self._next += 1
        return pid
