"""KIP-227 incremental fetch sessions: the session cache and the request classifier.

Pure bookkeeping, as Kafka's FetchSession / FetchSessionCacheShard / FetchManager
(server/src/main/java/org/apache/kafka/server/): no asyncio, no sockets, no partitions;
time is the caller's ``now_ms``.  kbroker/handlers/fetch_session_reads.py joins this to the Fetch
handler (which partitions to read, which to answer).

* A session: a random positive int32 id, ``privileged`` (created by a follower), whether it
  names topics by id (created by a v13+ Fetch), its partitions in order (a dict keyed by
  ``(topic id or name, partition)``: topic id for id sessions, name otherwise), the epoch the
  next incremental request must carry, creation and last-use times (ms).
* Epochs (FetchMetadata): 0 = INITIAL (a full fetch that asks for a session), -1 = FINAL (a
  full fetch without one).  A new session expects epoch 1; each incremental request it
  accepts moves the expectation to the next epoch, Int.MaxValue wrapping to 1.
* The classifier (:func:`new_context`, FetchManager.newContext):
  (0, -1) sessionless; (0, 0) full, creating a session when the answer goes out (id 0 if the
  cache has no room); (id, 0) closes id, then full as (0, 0); (id, -1) closes id,
  sessionless; (id, n > 0) incremental: FETCH_SESSION_ID_NOT_FOUND for an unknown id,
  INVALID_FETCH_SESSION_EPOCH for another epoch, FETCH_SESSION_TOPIC_ID_ERROR when the
  request's version does not match the session's use of topic ids (v13+ = ids); otherwise
  the request's partitions are added / updated, ``forgotten_topics_data`` removed, and a
  session left empty is closed (the request is then sessionless).
* Eviction (FetchSessionCacheShard.maybeCreateSession / tryEvict), when
  ``max.incremental.fetch.session.cache.slots`` sessions exist: the least recently used session
  is evicted if unused for more than ``min.incremental.fetch.session.eviction.ms``; else the
  smallest "evictable" session, ordered by (privileged, size, id), is evicted if the new
  session's key (privileged, size, 0) is not smaller.  A session is evictable by anyone once
  it is older than the eviction time (as of its last use); a follower's new session may also
  evict any consumer (non-privileged) session.
* The answer rule (CachedPartition.maybeUpdateResponseData): an incremental answer carries a
  partition when it has records, an error, a preferred read replica, a diverging epoch, or a
  high watermark / log start offset other than the one last sent; the session then
  remembers the new values (the high watermark as -1 after an error, so the partition is
  sent again once the error is gone).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from wire.error_codes import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1

# A session partition's key: (topic id (uuid.UUID) or topic name, partition index).
Key = tuple[Any, int]


def next_epoch(epoch: int) -> int:
    """FetchMetadata.nextEpoch: FINAL stays FINAL, Int.MaxValue wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


class CachedPartition:
    """One partition of a session: the last request parameters (``fp``, the request's
    FetchPartition object, kept as is: fetch_offset, log_start_offset, partition_max_bytes,
    current_leader_epoch, last_fetched_epoch) and what the last answer sent
    (``high_watermark``, ``log_start_offset``; -1 = nothing sent yet, or an error).
    ``source`` is the reader's note of the partition object it last read (any value; the
    reader uses it to tell a replaced partition)."""

    __slots__ = ("topic", "topic_id", "partition", "fp", "high_watermark", "log_start_offset", "source")

    def __init__(self, topic: str, topic_id: Any, partition: int, fp: Any) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self.fp = fp
        self.high_watermark = -1
        self.log_start_offset = -1
        self.source: Any = None

    def must_respond(self, pd: Any, update: bool = True) -> bool:
        """Kafka's maybeUpdateResponseData: must this answer (a FetchResponse.PartitionData) be
        sent in an incremental response?  With ``update``, remember what it sends."""
        records = pd.records
        respond = records is not None and len(records) > 0
        if self.high_watermark != pd.high_watermark:
            respond = True
            if update:
                self.high_watermark = pd.high_watermark
        if self.log_start_offset != pd.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = pd.log_start_offset
        if pd.preferred_read_replica >= 0:
            respond = True
        if pd.error_code != ErrorCode.NONE:
            if update:
                self.high_watermark = -1
            respond = True
        if pd.diverging_epoch.epoch >= 0:
            respond = True
        return respond


class FetchSession:
    __slots__ = ("id", "privileged", "parts", "uses_topic_ids", "creation_ms", "last_used_ms", "epoch",
                 "cached_size", "by_all", "by_privileged", "reader")

    def __init__(self, session_id: int, privileged: bool, parts: dict[Key, CachedPartition],
                 uses_topic_ids: bool, now_ms: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.parts = parts          # in session order (rotated: a partition with records goes last)
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        # the cache's bookkeeping, set by FetchSessionCache.touch: the size the cache counts
        # (-1: not in the cache) and whether it is evictable by anyone / by a follower
        self.cached_size = -1
        self.by_all = False
        self.by_privileged = False
        self.reader: Any = None   # the Fetch handler's notes (kbroker/handlers/fetch_session_reads.py)

    @property
    def size(self) -> int:
        return len(self.parts)

    def evictable_key(self) -> tuple[bool, int, int]:
        """EvictableKey ordering: non-privileged first, then smaller, then lower id."""
        return (self.privileged, self.cached_size, self.id)

    def update(self, fetch_data: Iterable[tuple[Key, str, Any, Any]],
               to_forget: Iterable[Key]) -> tuple[int, int, int]:
        """FetchSession.update: add or update the request's partitions ((key, topic name,
        topic id, FetchPartition)), then remove the forgotten ones.  Returns the counts
        (added, updated, removed)."""
        added = updated = removed = 0
        parts = self.parts
        for key, topic, topic_id, fp in fetch_data:
            cp = parts.get(key)
            if cp is None:
                parts[key] = CachedPartition(topic, topic_id, key[1], fp)
                added += 1
            else:
                cp.fp = fp
                updated += 1
        for key in to_forget:
            if parts.pop(key, None) is not None:
                removed += 1
        return added, updated, removed


class FetchSessionCache:
    """The broker's sessions (one cache: Kafka shards it per I/O thread, kbroker has one loop).

    Counters for /metrics (Kafka's FetchSessionCache beans): ``num_partitions``
    (NumIncrementalFetchPartitionsCached), ``evictions`` (IncrementalFetchSessionEvictionsPerSec,
    as a total), and kbroker's ``incremental_fetches`` / ``partitions_skipped`` (incremental
    requests served; session partitions left unread because nothing changed)."""

    def __init__(self, max_entries: int, eviction_ms: int, rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self.sessions: dict[int, FetchSession] = {}
        self._lru: OrderedDict[int, FetchSession] = OrderedDict()   # least recently used first
        self.num_partitions = 0
        self.evictions = 0
        self.incremental_fetches = 0
        self.partitions_skipped = 0

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self._lru.pop(session_id, None)
            if session.cached_size >= 0:
                self.num_partitions -= session.cached_size
            session.cached_size = -1
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark the session used now: LRU position, counted size and evictability."""
        self._lru.pop(session.id, None)
        session.last_used_ms = now_ms
        self._lru[session.id] = session
        if session.cached_size >= 0:
            self.num_partitions -= session.cached_size
        session.cached_size = session.size
        old = now_ms - session.creation_ms > self.eviction_ms
        session.by_privileged = (not session.privileged) or old
        session.by_all = old
        self.num_partitions += session.cached_size

    def _new_session_id(self) -> int:
        while True:
            candidate = self._rng.randint(1, INT32_MAX - 1)
            if candidate not in self.sessions:
                return candidate

    def maybe_create_session(self, now_ms: int, privileged: bool, size: int, uses_topic_ids: bool,
                             make_parts: Callable[[], dict[Key, CachedPartition]]) -> int:
        """A new session's id, or INVALID_SESSION_ID (0) when the cache has no room for it."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(privileged, (privileged, size, 0), now_ms):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_session_id(), privileged, make_parts(), uses_topic_ids, now_ms)
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _try_evict(self, privileged: bool, key: tuple[bool, int, int], now_ms: int) -> bool:
        if not self._lru:
            return False
        lru = next(iter(self._lru.values()))
        if now_ms - lru.last_used_ms > self.eviction_ms:   # a stale session goes first
            self.remove(lru.id)
            self.evictions += 1
            return True
        candidates = [s for s in self.sessions.values() if (s.by_privileged if privileged else s.by_all)]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession.evictable_key)
        if key < victim.evictable_key():
            return False
        self.remove(victim.id)
        self.evictions += 1
        return True


# ---- the classifier (FetchManager.newContext) ------------------------------------------

class Sessionless:
    """Answer every requested partition, session_id 0."""
    __slots__ = ()


class Full:
    """Answer every requested partition; try to create a session from the answer."""
    __slots__ = ("uses_topic_ids", "privileged")

    def __init__(self, uses_topic_ids: bool, privileged: bool) -> None:
        self.uses_topic_ids = uses_topic_ids
        self.privileged = privileged


class Incremental:
    """Read the session's partitions; answer those that must be sent (CachedPartition.must_respond)."""
    __slots__ = ("session", "request_epoch")

    def __init__(self, session: FetchSession, request_epoch: int) -> None:
        self.session = session
        self.request_epoch = request_epoch

    def epoch_still_current(self) -> bool:
        """False if another request moved the session on since this one was accepted (Kafka
        answers this one INVALID_FETCH_SESSION_EPOCH then: a duplicate request)."""
        return self.session.epoch == next_epoch(self.request_epoch)


class SessionError:
    """A top-level error (70, 71 or 106), no partitions, session_id 0."""
    __slots__ = ("error",)

    def __init__(self, error: ErrorCode) -> None:
        self.error = error


Context = Sessionless | Full | Incremental | SessionError


def new_context(cache: FetchSessionCache, version: int, session_id: int, epoch: int, is_follower: bool,
                fetch_data: Callable[[], Iterable[tuple[Key, str, Any, Any]]],
                to_forget: Callable[[], Iterable[Key]], now_ms: int) -> Context:
    """Classify a Fetch (v7+) by (session_id, epoch); see the module docstring.
    ``fetch_data`` / ``to_forget`` are only called for an incremental request."""
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):   # a full request: any session it names is closed
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        if epoch == FINAL_EPOCH:
            return Sessionless()
        return Full(version >= 13, is_follower)
    session = cache.get(session_id)
    if session is None:
        return SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        return SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    if session.uses_topic_ids != (version >= 13):
        return SessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    session.update(fetch_data(), to_forget())
    if not session.parts:
        cache.remove(session.id)
        return Sessionless()
    cache.touch(session, now_ms)
    session.epoch = next_epoch(session.epoch)
    cache.incremental_fetches += 1
    return Incremental(session, epoch)
