"""The Fetch handler's side of KIP-227 sessions (kbroker/replica/fetch_session.py keeps the cache).

:func:`begin` classifies a Fetch (v7+) and returns what kbroker/handlers/fetch.py reads
with and answers through:

* sessionless (v4-6, (0, -1), or a session emptied by its request): the request as is,
  session_id 0;
* full (epoch 0): the request as is; when the answer goes out, a session is made of its
  partitions with what the answer sent (session_id = the new id, or 0 if the cache is full);
* incremental: the request's partitions update the session, then the session's partitions
  are read and only those that must be sent (CachedPartition.must_respond) are answered;
* a session error: the answer itself (top-level error, no partitions, session_id 0).

What an incremental Fetch costs is the point of sessions: a consumer of 10,000 partitions
names none of them once it has a session, and most have nothing new.  Only candidates are
looked at (IncrementalFetch: named, pending, or notified by FetchWaiters since the session
last looked; all of them once a second), and a candidate
is read only if something may have changed since the answer that last sent it: the
partition object is another (deleted, recreated, moved), its high watermark or log start
offset is not the one last sent, the fetch offset is below the high watermark (the LSO for
read_committed; data to send) or past the log end (an error), or its current_leader_epoch is
not the partition's.  The others are neither read nor encoded; their answer would be "no
records, nothing changed", which must_respond leaves out anyway.  Reading is done in full
(no skipping) for a follower's session (each read updates the follower's fetch state:
Kafka's ISR bookkeeping counts a caught-up follower only while it fetches), for a consumer
of a broker that is not the leader (fetch from follower), when a preferred read replica
may be chosen (rack_id with replica.selector.class), and for a topic the principal may
not read (the error is in the answer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbroker.handlers.authorize import authorize
from kbroker.replica.fetch_session import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSessionCache,
    Full,
    Incremental,
    Key,
    SessionError,
    new_context,
)
from kbroker.server.request_context import RequestContext
from wire.acl import READ, TOPIC
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest, FetchResponse

if TYPE_CHECKING:
    from kbroker.server.services import Services

FetchTopic = FetchRequest.FetchTopic


def _replica_id(ctx: RequestContext, req: FetchRequest) -> int:
    return req.replica_id if ctx.api_version < 15 else req.replica_state.replica_id


class PlainFetch:
    """Sessionless: read what the request names, answer it all with session_id 0."""

    __slots__ = ("req",)

    def __init__(self, req: FetchRequest) -> None:
        self.req = req

    def read_request(self) -> FetchRequest:
        return self.req

    def wait_partitions(self) -> list[tuple[str, int]]:
        return [(t.topic, p.partition) for t in self.req.topics for p in t.partitions]

    @property
    def empty(self) -> bool:
        return not self.req.topics

    def answer(self, resp: FetchResponse) -> FetchResponse:
        return resp


class FullFetch(PlainFetch):
    """Epoch 0: answer everything, then keep a session of it (FullFetchContext)."""

    __slots__ = ("ctx", "cache", "context")

    def __init__(self, ctx: RequestContext, req: FetchRequest, cache: FetchSessionCache, context: Full) -> None:
        super().__init__(req)
        self.ctx = ctx
        self.cache = cache
        self.context = context

    def answer(self, resp: FetchResponse) -> FetchResponse:
        req, services = self.req, self.ctx.services
        partition_of = services.catalog.partition
        by_id = self.context.uses_topic_ids
        size = sum(len(t.partitions) for t in resp.responses)

        def make_parts() -> dict[Key, CachedPartition]:
            parts: dict[Key, CachedPartition] = {}
            for topic, answered in zip(req.topics, resp.responses, strict=True):
                for fp, pd in zip(topic.partitions, answered.partitions, strict=True):
                    cp = CachedPartition(topic.topic, topic.topic_id, fp.partition, fp)
                    cp.must_respond(pd)   # remembers what this answer sends
                    cp.source = partition_of(topic.topic, fp.partition)
                    parts[(topic.topic_id if by_id else topic.topic, fp.partition)] = cp
            return parts
        now = services.clock.milliseconds()
        resp.session_id = self.cache.maybe_create_session(now, self.context.privileged, size, by_id, make_parts)
        session = self.cache.get(resp.session_id)
        if session is not None:
            session.reader = notes = ReadNotes(services.fetch_waiters.seq, now)
            notes.by_tp = {(cp.topic, cp.partition): key for key, cp in session.parts.items()}
            _note_pending(session, [(cp, cp.source) for cp in session.parts.values()], req.isolation_level == 1)
        return resp


class ReadNotes:
    """What the handler remembers per session between its fetches (FetchSession.reader).

    ``seen`` is the FetchWaiters notify number up to which changes were looked at;
    ``pending`` the session partitions whose last read did not leave them "nothing new"
    (data left to send, an error, an offset out of range), read again each time;
    ``by_tp`` maps (topic name, partition) to the session key (id sessions key by topic
    id); ``swept_ms`` when every session partition was last checked."""

    __slots__ = ("seen", "pending", "by_tp", "swept_ms")

    def __init__(self, seen: int, now_ms: int) -> None:
        self.seen = seen
        self.pending: dict[Key, CachedPartition] = {}
        self.by_tp: dict[tuple[str, int], Key] = {}
        self.swept_ms = now_ms


# Every session partition is checked at least this often (ms), not only those a notify
# named: what changes without one (the log start offset moved by retention or
# DeleteRecords, an ACL) reaches the client this much later at most.
SWEEP_MS = 1000


class IncrementalFetch:
    """(id, epoch > 0): read the session's partitions that may have changed; answer the ones
    that must be sent (IncrementalFetchContext).

    Candidates to read: the partitions the request names, those left pending by the last
    fetch, and those FetchWaiters was notified of (appends, HW moves, leadership and topic
    changes) since the session last looked; every session partition once per SWEEP_MS.
    Each candidate is then read only if :func:`_unchanged` cannot rule it out.  Candidates
    are read pending ones first, then the others (Kafka reads in session order: data-rich
    partitions rotate to the end there too)."""

    __slots__ = ("ctx", "req", "context", "_reading", "_skip_ok", "_cands")

    def __init__(self, ctx: RequestContext, req: FetchRequest, context: Incremental) -> None:
        self.ctx = ctx
        self.req = req
        self.context = context
        self._reading: list[tuple[CachedPartition, Any]] = []
        self._cands: dict[Key, CachedPartition] = {}
        services = ctx.services
        # a consumer's unchanged partitions may be skipped, unless the fetch may be sent to a
        # preferred read replica (KIP-392, where partitions have followers): then it is read
        self._skip_ok = _replica_id(ctx, req) < 0 and not (
            ctx.api_version >= 11 and req.rack_id and services.replicas.reads_from_followers
            and services.config.config["replica.selector.class"] is not None)
        session = context.session
        notes = session.reader
        if notes is None:   # made by a FullFetch before the handler kept notes: sweep now
            notes = session.reader = ReadNotes(services.fetch_waiters.seq, -SWEEP_MS)
        by_id = session.uses_topic_ids
        # the partitions this request names (added or updated) are candidates
        for t in req.topics:
            for fp in t.partitions:
                key = (t.topic_id if by_id else t.topic, fp.partition)
                cp = session.parts.get(key)
                if cp is not None:
                    self._cands[key] = cp
                    notes.by_tp[(cp.topic, cp.partition)] = key
        if req.forgotten_topics_data:
            for key in [k for k in notes.pending if k not in session.parts]:
                del notes.pending[key]

    @property
    def empty(self) -> bool:
        return False   # an emptied session is closed by the classifier (a PlainFetch then)

    def wait_partitions(self) -> dict[tuple[str, int], Key]:
        """The session's partitions by (name, index), as FetchWaiters.wait takes a container:
        not registered one by one (a forgotten partition may linger in it until the next
        sweep: a wake-up for nothing, no more)."""
        return self.context.session.reader.by_tp

    def _candidates(self, services: Services) -> dict[Key, CachedPartition]:
        session = self.context.session
        notes: ReadNotes = session.reader
        cands = self._cands
        parts = session.parts
        waiters = services.fetch_waiters
        now = services.clock.milliseconds()
        every = not self._skip_ok   # a follower's session: every partition, every time
        changed = [] if every or waiters.seq == notes.seen else waiters.changed_since(notes.seen)
        if now - notes.swept_ms >= SWEEP_MS or changed is None:
            notes.swept_ms = now
            every = True
            if session.uses_topic_ids:
                for cp in parts.values():
                    if not cp.topic:   # an id unknown when it joined the session: known now?
                        cp.topic = services.metadata.name_for_id(cp.topic_id) or ""
            # rebuilt (forgotten partitions linger in it until now; added ones go in at once)
            notes.by_tp = {(cp.topic, cp.partition): key for key, cp in parts.items()}
        if every:
            notes.seen = waiters.seq
            return dict(parts)
        ordered = dict(notes.pending)
        ordered.update(cands)
        if changed:   # notified partitions of this session
            by_tp = notes.by_tp
            for tp in changed:
                key = by_tp.get(tp)
                if key is not None and key not in ordered:
                    cp = parts.get(key)
                    if cp is not None:
                        ordered[key] = cp
            notes.seen = waiters.seq
        self._cands = ordered
        return ordered

    def read_request(self) -> FetchRequest:
        """A copy of the request naming the session partitions to read now, consecutive
        partitions of a topic under one FetchTopic."""
        ctx, services = self.ctx, self.ctx.services
        read_committed = self.req.isolation_level == 1
        partitions = services.catalog.partitions
        leader_error = services.replicas.leader_error   # a partition led elsewhere is read (its error)
        skip_ok = self._skip_ok
        may_read: dict[str, bool] = {}
        reading: list[tuple[CachedPartition, Any]] = []
        topics: list[FetchTopic] = []
        current: FetchTopic | None = None
        cands = self._candidates(services)
        pending = self.context.session.reader.pending
        skipped = len(self.context.session.parts) - len(cands)
        for key, cp in cands.items():
            name = cp.topic
            p = partitions.get((name, cp.partition))
            if skip_ok and p is not None and p is cp.source and leader_error(name, cp.partition) is None:
                allowed = may_read.get(name)
                if allowed is None:
                    allowed = may_read[name] = authorize(ctx, READ, TOPIC, name)
                if allowed and _unchanged(cp, p, read_committed):
                    skipped += 1
                    if pending:
                        pending.pop(key, None)   # nothing left to send there
                    continue
            reading.append((cp, p))
            if current is None or current.topic != name or current.topic_id != cp.topic_id:
                current = FetchTopic(topic=name, topic_id=cp.topic_id, partitions=[])
                topics.append(current)
            current.partitions.append(cp.fp)
        self._reading = reading
        # what this read found worth reading stays a candidate if the fetch waits and reads
        # again: the answer is built from the last read only
        by_id = self.context.session.uses_topic_ids
        self._cands = {(cp.topic_id if by_id else cp.topic, cp.partition): cp for cp, _ in reading}
        services.fetch_sessions.partitions_skipped += skipped
        req = self.req
        return FetchRequest(replica_id=req.replica_id, replica_state=req.replica_state, max_wait_ms=req.max_wait_ms,
                            min_bytes=req.min_bytes, max_bytes=req.max_bytes, isolation_level=req.isolation_level,
                            session_id=req.session_id, session_epoch=req.session_epoch, topics=topics,
                            rack_id=req.rack_id)

    def answer(self, resp: FetchResponse) -> FetchResponse:
        context = self.context
        session = context.session
        if not context.epoch_still_current():   # another request on this session came first
            return FetchResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                                 session_id=session.id, responses=[])
        parts = session.parts
        by_id = session.uses_topic_ids
        kept_topics = []
        for topic in resp.responses:
            kept = []
            tkey = topic.topic_id if by_id else topic.topic
            for pd in topic.partitions:
                key = (tkey, pd.partition_index)
                cp = parts.get(key)
                if cp is None or not cp.must_respond(pd):
                    continue
                kept.append(pd)
                if pd.records is not None and len(pd.records) > 0:
                    # tried last next time (Kafka rotates partitions that returned data)
                    del parts[key]
                    parts[key] = cp
            if kept:
                topic.partitions = kept
                kept_topics.append(topic)
        _note_pending(session, self._reading, self.req.isolation_level == 1)
        resp.responses = kept_topics
        resp.session_id = session.id
        return resp


def _note_pending(session: Any, reading: list[tuple[CachedPartition, Any]], read_committed: bool) -> None:
    """After an answer: the partitions read that are not "nothing new" stay candidates."""
    notes: ReadNotes = session.reader
    by_id = session.uses_topic_ids
    pending = notes.pending
    for cp, p in reading:
        cp.source = p   # the partition object this answer came from
        key = (cp.topic_id if by_id else cp.topic, cp.partition)
        if p is None or not _unchanged(cp, p, read_committed):
            pending[key] = cp
        else:
            pending.pop(key, None)


def _unchanged(cp: CachedPartition, p: Any, read_committed: bool) -> bool:
    """Would reading this session partition answer "no records, nothing new"? (see the module docstring)"""
    hw = p.high_watermark
    if hw != cp.high_watermark or p.log_start_offset != cp.log_start_offset:
        return False
    fp = cp.fp
    fetch_offset = fp.fetch_offset
    bound = p.last_stable_offset if read_committed else hw
    if fetch_offset < bound or (fetch_offset > bound and fetch_offset > p.log_end_offset):
        return False
    epoch = fp.current_leader_epoch
    return epoch < 0 or epoch == p.leader_epoch


def begin(ctx: RequestContext, req: FetchRequest) -> PlainFetch | IncrementalFetch | FetchResponse:
    """Classify a Fetch whose topics already carry their names (v13+: resolved from ids; ""
    for an unknown id).  A FetchResponse is a session error to send as it is."""
    if ctx.api_version < 7 or (req.session_id == INVALID_SESSION_ID and req.session_epoch == FINAL_EPOCH):
        return PlainFetch(req)
    services = ctx.services
    cache = services.fetch_sessions
    by_id = ctx.api_version >= 13

    def fetch_data() -> list[tuple[Key, str, Any, Any]]:
        return [((t.topic_id if by_id else t.topic, fp.partition), t.topic, t.topic_id, fp)
                for t in req.topics for fp in t.partitions]

    def to_forget() -> list[Key]:
        return [(t.topic_id if by_id else t.topic, index)
                for t in req.forgotten_topics_data for index in t.partitions]

    context = new_context(cache, ctx.api_version, req.session_id, req.session_epoch, _replica_id(ctx, req) >= 0,
                          fetch_data, to_forget, services.clock.milliseconds())
    if isinstance(context, SessionError):
        return FetchResponse(throttle_time_ms=0, error_code=context.error, session_id=0, responses=[])
    if isinstance(context, Full):
        return FullFetch(ctx, req, cache, context)
    if isinstance(context, Incremental):
        return IncrementalFetch(ctx, req, context)
    return PlainFetch(req)
