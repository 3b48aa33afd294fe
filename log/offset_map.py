"""SkimpyOffsetMap: key -> latest offset over a log's dirty section, in bounded memory.

Kafka's cleaner (``SkimpyOffsetMap``) stores, for every key of the dirty section, only a
fixed-size digest of the key and the key's latest offset, in a preallocated open-addressing
table of ``memory / (digest size + 8)`` slots, and stops filling it at ``slots *
load_factor`` entries.  When the map is full the cleaner cleans only up to the last offset it
mapped (``latest_offset``) and the next cleaning continues from there.

Here the table is a dict ``digest -> offset``.  What is kept from Kafka:

* keys are hashed (MD5 by default, the hashlib name is configurable): memory per entry does
  not depend on key length, and two keys collide only if their digests do;
* the capacity: ``slots = memory // BYTES_PER_ENTRY``, where ``BYTES_PER_ENTRY`` is what one
  entry really costs in CPython (measured: a 16-byte ``bytes`` digest ~49 B, an ``int``
  offset ~28 B, the dict slot and its growth headroom ~60-70 B), so that
  ``log.cleaner.dedupe.buffer.size`` bounds the memory actually used.  Kafka's slot is 24 B
  (MD5 + a long), so a Python map of the same buffer holds about 1/6 as many keys; the
  cleaner then simply needs more rounds for a log with many distinct keys;
* ``size`` counts distinct keys put; ``latest_offset`` is the last offset put or the value set
  by ``update_latest_offset``; ``clear`` empties it for the next log.

Who may call: one cleaner at a time (not thread-safe; each cleaner owns its map).
"""

from __future__ import annotations

import functools
import hashlib

__all__ = ["BYTES_PER_ENTRY", "SkimpyOffsetMap"]

BYTES_PER_ENTRY = 150  # CPython cost of one dict entry digest -> offset (see above)


class SkimpyOffsetMap:
    def __init__(self, memory: int, hash_algorithm: str = "md5") -> None:
        hashlib.new(hash_algorithm)  # ValueError now for an unknown name, not mid-clean
        self.hash_algorithm = hash_algorithm
        # key -> hash object; called once per record twice per cleaning, so no extra layer
        self._hash = hashlib.md5 if hash_algorithm == "md5" else functools.partial(hashlib.new, hash_algorithm)
        self.memory = memory
        self.slots = memory // BYTES_PER_ENTRY
        self._map: dict[bytes, int] = {}
        self._latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        """Map ``key`` to ``offset`` (overwriting); ValueError when a new key finds no slot."""
        digest = self._hash(key).digest()
        if digest not in self._map and len(self._map) >= self.slots:
            raise ValueError(f"Attempted to add a new entry to a full offset map, entries: {len(self._map)}, slots: {self.slots}")
        self._map[digest] = offset
        self._latest_offset = offset

    def get(self, key: bytes) -> int:
        """The offset stored for ``key``, or -1."""
        return self._map.get(self._hash(key).digest(), -1)

    def update_latest_offset(self, offset: int) -> None:
        self._latest_offset = offset

    @property
    def latest_offset(self) -> int:
        return self._latest_offset

    @property
    def size(self) -> int:
        return len(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map = {}
        self._latest_offset = -1

    def utilization(self) -> float:
        """Fraction of the slots in use (Kafka's ``OffsetMap.utilization``)."""
        return len(self._map) / self.slots if self.slots else 0.0
