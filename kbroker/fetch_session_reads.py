"""The Fetch handler's side of KIP-227 sessions (kbroker/fetch_session.py keeps the cache).

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
names none of them once it has a session, and most have nothing new.  A session partition
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

from typing import Any

from kbroker.acl import READ, TOPIC
from kbroker.authorizer import authorize
from kbroker.fetch_session import (
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
from kbroker.request_context import RequestContext
from kbroker.topic_ids import name_for_id
from wire.error_codes import ErrorCode
from wire.messages import FetchRequest, FetchResponse

FetchTopic = FetchRequest.FetchTopic


def session_cache(state: Any) -> FetchSessionCache:
    """The broker's session cache, made on first use from the broker's configs
    (Kafka's max.incremental.fetch.session.cache.slots / min.incremental.fetch.session.eviction.ms)."""
    cache = getattr(state, "fetch_sessions", None)
    if cache is None:
        config = state.config
        cache = FetchSessionCache(int(config["max.incremental.fetch.session.cache.slots"]),
                                  int(config["min.incremental.fetch.session.eviction.ms"]))
        state.fetch_sessions = cache
    return cache


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
        req, state = self.req, self.ctx.broker
        by_id = self.context.uses_topic_ids
        size = sum(len(t.partitions) for t in resp.responses)

        def make_parts() -> dict[Key, CachedPartition]:
            parts: dict[Key, CachedPartition] = {}
            for topic, answered in zip(req.topics, resp.responses, strict=True):
                for fp, pd in zip(topic.partitions, answered.partitions, strict=True):
                    cp = CachedPartition(topic.topic, topic.topic_id, fp.partition, fp)
                    cp.must_respond(pd)   # remembers what this answer sends
                    cp.source = state.partition(topic.topic, fp.partition)
                    parts[(topic.topic_id if by_id else topic.topic, fp.partition)] = cp
            return parts
        resp.session_id = self.cache.maybe_create_session(
            state.clock.milliseconds(), self.context.privileged, size, by_id, make_parts)
        return resp


class IncrementalFetch:
    """(id, epoch > 0): read the session's partitions that may have changed; answer the ones
    that must be sent (IncrementalFetchContext)."""

    __slots__ = ("ctx", "req", "context", "_reading", "_skip_ok")

    def __init__(self, ctx: RequestContext, req: FetchRequest, context: Incremental) -> None:
        self.ctx = ctx
        self.req = req
        self.context = context
        self._reading: list[tuple[CachedPartition, Any]] = []
        state = ctx.broker
        self._skip_ok = _replica_id(ctx, req) < 0 and not (
            ctx.api_version >= 11 and req.rack_id and getattr(state, "cluster", None) is not None
            and state.config["replica.selector.class"] is not None)

    @property
    def empty(self) -> bool:
        return False   # an emptied session is closed by the classifier (a PlainFetch then)

    def wait_partitions(self) -> list[tuple[str, int]]:
        return [(cp.topic, cp.partition) for cp in self.context.session.parts.values()]

    def read_request(self) -> FetchRequest:
        """A copy of the request naming the session partitions to read now, in session
        order, consecutive partitions of a topic under one FetchTopic."""
        ctx, state = self.ctx, self.ctx.broker
        session = self.context.session
        read_committed = self.req.isolation_level == 1
        partitions = state.partitions
        cluster = getattr(state, "cluster", None)
        leading = cluster.replicas.leading if cluster is not None else None
        by_id = session.uses_topic_ids
        skip_ok = self._skip_ok
        may_read: dict[str, bool] = {}
        reading: list[tuple[CachedPartition, Any]] = []
        topics: list[FetchTopic] = []
        current: FetchTopic | None = None
        skipped = 0
        for cp in session.parts.values():
            if by_id and not cp.topic:   # an id unknown when it joined the session: known now?
                cp.topic = name_for_id(state, cp.topic_id) or ""
            name = cp.topic
            p = partitions.get((name, cp.partition))
            if skip_ok and p is not None and p is cp.source and (leading is None or (name, cp.partition) in leading):
                allowed = may_read.get(name)
                if allowed is None:
                    allowed = may_read[name] = authorize(ctx, READ, TOPIC, name)
                if allowed and _unchanged(cp, p, read_committed):
                    skipped += 1
                    continue
            reading.append((cp, p))
            if current is None or current.topic != name or current.topic_id != cp.topic_id:
                current = FetchTopic(topic=name, topic_id=cp.topic_id, partitions=[])
                topics.append(current)
            current.partitions.append(cp.fp)
        self._reading = reading
        state_cache = getattr(state, "fetch_sessions", None)
        if state_cache is not None:
            state_cache.partitions_skipped += skipped
        read = FetchRequest(replica_id=self.req.replica_id, replica_state=self.req.replica_state,
                            max_wait_ms=self.req.max_wait_ms, min_bytes=self.req.min_bytes,
                            max_bytes=self.req.max_bytes, isolation_level=self.req.isolation_level,
                            session_id=self.req.session_id, session_epoch=self.req.session_epoch,
                            topics=topics, rack_id=self.req.rack_id)
        return read

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
        for cp, p in self._reading:   # the partition objects these answers came from
            cp.source = p
        resp.responses = kept_topics
        resp.session_id = session.id
        return resp


def _unchanged(cp: CachedPartition, p: Any, read_committed: bool) -> bool:
    """Would reading this session partition answer "no records, nothing new"? (see the module docstring)"""
    lg = p.log
    hw = lg.high_watermark
    if hw != cp.high_watermark or lg.log_start_offset != cp.log_start_offset:
        return False
    fp = cp.fp
    fetch_offset = fp.fetch_offset
    bound = lg.last_stable_offset if read_committed else hw
    if fetch_offset < bound or (fetch_offset > bound and fetch_offset > lg.log_end_offset):
        return False
    epoch = fp.current_leader_epoch
    return epoch < 0 or epoch == p.leader_epoch


def begin(ctx: RequestContext, req: FetchRequest) -> PlainFetch | IncrementalFetch | FetchResponse:
    """Classify a Fetch whose topics already carry their names (v13+: resolved from ids; ""
    for an unknown id).  A FetchResponse is a session error to send as it is."""
    if ctx.api_version < 7 or (req.session_id == INVALID_SESSION_ID and req.session_epoch == FINAL_EPOCH):
        return PlainFetch(req)
    state = ctx.broker
    cache = session_cache(state)
    by_id = ctx.api_version >= 13

    def fetch_data() -> list[tuple[Key, str, Any, Any]]:
        return [((t.topic_id if by_id else t.topic, fp.partition), t.topic, t.topic_id, fp)
                for t in req.topics for fp in t.partitions]

    def to_forget() -> list[Key]:
        return [(t.topic_id if by_id else t.topic, index)
                for t in req.forgotten_topics_data for index in t.partitions]

    context = new_context(cache, ctx.api_version, req.session_id, req.session_epoch, _replica_id(ctx, req) >= 0,
                          fetch_data, to_forget, state.clock.milliseconds())
    if isinstance(context, SessionError):
        return FetchResponse(throttle_time_ms=0, error_code=context.error, session_id=0, responses=[])
    if isinstance(context, Full):
        return FullFetch(ctx, req, cache, context)
    if isinstance(context, Incremental):
        return IncrementalFetch(ctx, req, context)
    return PlainFetch(req)
