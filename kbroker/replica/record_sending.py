"""How a Fetch response carries stored batches: copied bytes or a ``sendfile``-able handle.

A slice of at least ``SENDFILE_MIN_BYTES`` goes into the response as a
:class:`log.file_records.PinnedSlice` (its own ``dup`` of the segment's descriptor, so the
bytes stay readable if retention or the cleaner deletes the segment before they are sent);
the connection sends it with ``os.sendfile`` from the page cache (kbroker/server/connection.py).
A smaller slice is read with one ``pread`` and travels in the connection's ``writelines``
with the rest of the response: below the threshold the extra syscalls of the sendfile path
(dup, close, a send of its own instead of one writev) cost more than the copy saves.

Threshold, measured on this machine (bench/micro/sendfile.py, figures in
bench/results/zero_copy.md: loopback, a reader draining): pread+send vs sendfile per slice, 4 KiB 9.2 vs 8.2 us, 16 KiB 20 vs 13 us,
32 KiB 32 vs 20 us, 64 KiB 58 vs 29 us, 1 MiB 619 vs 335 us.  The sendfile path in the
connection adds a dup and a close (~1 us together) and a send of its own where a copied
slice shares the response's one writev (a syscall, a few us), so the break-even sits near
16 KiB; 32 KiB keeps the small-record fetches of many partitions on the single-writev path.

Kept out of ``log/``: which handle a response wants is the network's business (TLS, when it
comes, needs the copy).
"""

from __future__ import annotations

import resource
from typing import TYPE_CHECKING

from log.file_records import PinnedSlice

if TYPE_CHECKING:
    from log.log import FetchIsolation, Log

SENDFILE_MIN_BYTES = 32 * 1024
# Each pinned slice holds a descriptor until its response is sent: a fetch names up to
# fetch.max.bytes / 32 KiB slices and a connection holds up to 64 responses, so many slow
# readers could exhaust the process's descriptors (then accept() and segment opens fail).
# Past this many open slices, records are copied as before (memory, bounded per connection).
MAX_PINNED_SLICES = max(64, min(16_384, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4))


def read_for_sending(log: Log, fetch_offset: int, max_bytes: int, isolation: FetchIsolation,
                     min_one_message: bool, aborted_out: list | None = None) -> bytes | PinnedSlice:
    """``Log.read`` as a response's records: bytes below ``SENDFILE_MIN_BYTES``, else a
    pinned slice.  A segment closed between the read and the pin (deleted by retention, or
    swapped by the cleaner, on another thread) is read once more from the current segments.
    ``aborted_out``: receives the read's aborted transactions (read_committed reads)."""
    for _attempt in range(2):
        info = log.read(fetch_offset, max_bytes, isolation, min_one_message)
        records = info.records
        if aborted_out is not None:
            aborted_out[:] = info.aborted_transactions or []
        if len(records) < SENDFILE_MIN_BYTES or PinnedSlice.open_count >= MAX_PINNED_SLICES:
            return records.read()
        pinned = records.pin()
        if pinned is not None:
            return pinned
    return records.read()   # closed twice in a row: the read raises as it did before pinning
