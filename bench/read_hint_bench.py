"""CPU time of a woken fetch's read with and without the read-position hint (issue 15).

Run: ``.venv/bin/python -m bench.read_hint_bench``.  One partition log (Kafka's default
segment and index settings) holding 100,000 offsets in 20,000 batches of 5 small records;
then, 5,000 times per mode and alternating modes: append one batch, move the HW, and read
from the previous end (what a consumer parked at the log end does when woken).  "no hint"
clears ``LocalLog._read_hint`` before each read, so the read searches the offset index and
scans headers from the index entry as before.  Thread CPU time per read, so the figure does
not count time the machine's other work took the CPU away.
"""

from __future__ import annotations

import statistics
import tempfile
import time

from log.config import LogConfig
from log.log import FetchIsolation
from tests.log.helpers import batch, open_log


def main(rounds: int = 4, reads: int = 5000) -> None:
    log = open_log(tempfile.mkdtemp(prefix="read-hint-"), LogConfig())
    b = batch(5, value_size=100)
    for _ in range(20_000):
        log.append_as_leader(bytearray(b), 0)
    log.update_high_watermark(log.log_end_offset)
    figures: dict[str, list[float]] = {"hint": [], "no hint": []}
    for _ in range(rounds):
        for mode in figures:
            total = 0.0
            for _ in range(reads):
                start = log.log_end_offset
                log.append_as_leader(bytearray(b), 0)
                log.update_high_watermark(log.log_end_offset)
                if mode == "no hint":
                    log.local_log._read_hint = None
                t0 = time.thread_time()
                info = log.read(start, 1 << 20, FetchIsolation.HIGH_WATERMARK, True)
                total += time.thread_time() - t0
                assert len(info.records) == len(b)
            figures[mode].append(total / reads * 1e6)
    for mode, values in figures.items():
        print(f"{mode:8s} median {statistics.median(values):5.1f} us per woken read "
              f"(rounds: {', '.join(f'{v:.1f}' for v in values)})")
    log.close()


if __name__ == "__main__":
    main()
