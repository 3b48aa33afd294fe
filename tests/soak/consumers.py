"""The soak's consumers (run by tests/soak/workers.py).

``member``: one member of the consumer group ``--group`` (confluent-kafka, classic protocol,
enable.auto.commit=false, isolation.level=read_committed) subscribed to ``--topics``.  Every
``--commit-every`` records it commits its positions asynchronously; every
``--fetch-every-s`` seconds it asks the coordinator for the group's committed offsets
(``consumer.committed()``, an OffsetFetch).  All callbacks and calls run on the one thread
that polls, so the order of the lines is the order in which the member learnt things: a
``commit_ack`` line before a ``fetch`` line means the commit's answer arrived before the
fetch was sent.  Lines:

- ``{"t": "assign"|"revoke"|"lost", "iv", "parts"}``: each rebalance callback starts a new
  *ownership interval* ``iv``; a commit counts only within the interval it was sent in;
- ``{"t": "commit", "seq", "iv", "offsets"}``: an async commit sent (offsets
  ``[[topic, p, offset]]``);
- ``{"t": "commit_ack", "seq", "iv", "ok", "failed", "err"}``: its callback (``seq`` is
  null when no sent commit matches it); ``ok`` are the partitions acknowledged;
- ``{"t": "fetch", "iv", "offsets"}``: committed offsets as fetched (errors left out);
  ``final: true`` for the one taken after the last commit's answer, at the end (then
  ``{"t": "final_done"}``, and the member stays in the group until the runner says every
  member is done, so that no member's leaving rebalances another before its final fetch);
- ``{"t": "read", "topic", "p", "o", "v"}`` for each record of ``--txn-topic`` read (the
  checker looks for aborted transactions' records among them).

``sampler``: every ``--interval-s`` asks each partition's leader for its watermarks
(``get_watermark_offsets(cached=False)``, a ListOffsets; read_uncommitted, so the high
watermark) and writes ``{"t": "hw", "topic", "p", "low", "high", "ms"}``.

``readback``: once every producer has stopped: waits until each partition's last stable
offset equals its high watermark (no transaction open), then reads every topic of
``--topics`` from its log start to its end with read_committed, and ``--txn-topic`` also with
read_uncommitted; ``{"t": "end", "iso", "topic", "p", "low", "high"}`` per partition, then
``{"t": "read", "iso", "topic", "p", "o", "v"}`` per record and ``{"t": "done", "ok"}``.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from tests.soak.workers import Out, Stop, common_client_config, now_ms
from tests.support.eos_worker import bounded

DRAIN_S = 30.0   # at the end, how long a member waits for its in-flight commits' answers
CLOSE_WAIT_S = 120.0   # then how long it waits for the others' final fetches before leaving


def _key(offsets: list[tuple[str, int, int]]) -> tuple[tuple[str, int, int], ...]:
    return tuple(sorted(offsets))


def member(args: argparse.Namespace) -> int:
    out, stop = Out(args.out), Stop(args.stop_file)
    topics = args.topics.split(",")
    state: dict[str, Any] = {"iv": 0, "seq": 0}
    positions: dict[tuple[str, int], int] = {}   # next offset to read, this interval only
    committed_positions: dict[tuple[str, int], int] = {}
    pending: dict[tuple[tuple[str, int, int], ...], deque[tuple[int, int]]] = defaultdict(deque)
    in_flight = [0]

    def new_interval(kind: str, parts: list[TopicPartition]) -> None:
        state["iv"] += 1
        positions.clear()
        committed_positions.clear()
        out.write(t=kind, iv=state["iv"], parts=[[tp.topic, tp.partition] for tp in parts], ms=now_ms())

    def on_commit(err: KafkaError | None, parts: list[TopicPartition]) -> None:
        offsets = [(tp.topic, tp.partition, tp.offset) for tp in parts]
        sent = pending.get(_key(offsets))
        seq, iv = sent.popleft() if sent else (None, None)
        if sent is not None and not sent:
            del pending[_key(offsets)]
        if seq is not None:
            in_flight[0] -= 1
        ok = [[tp.topic, tp.partition, tp.offset] for tp in parts if err is None and tp.error is None]
        failed = [[tp.topic, tp.partition, tp.offset, (tp.error or err).name()]  # type: ignore[union-attr]
                  for tp in parts if err is not None or tp.error is not None]
        out.write(t="commit_ack", seq=seq, iv=iv, now_iv=state["iv"], ok=ok, failed=failed,
                  err=err.name() if err is not None else None, ms=now_ms())

    consumer = Consumer({
        **common_client_config(args.bootstrap),
        "group.id": args.group,
        "client.id": args.name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 1000,
        "on_commit": on_commit,
        "error_cb": lambda e: out.write(t="client_err", err=e.name(), fatal=e.fatal(), ms=now_ms()),
    })
    consumer.subscribe(topics, on_assign=lambda c, parts: new_interval("assign", parts),
                       on_revoke=lambda c, parts: new_interval("revoke", parts),
                       on_lost=lambda c, parts: new_interval("lost", parts))

    def commit() -> None:
        todo = [(t, p, o) for (t, p), o in positions.items() if committed_positions.get((t, p)) != o]
        if not todo:
            return
        state["seq"] += 1
        key = _key(todo)
        pending[key].append((state["seq"], state["iv"]))
        in_flight[0] += 1
        out.write(t="commit", seq=state["seq"], iv=state["iv"], offsets=[list(x) for x in key], ms=now_ms())
        try:
            consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in key], asynchronous=True)
        except KafkaException as e:   # refused before sending (e.g. no coordinator yet)
            pending[key].pop()
            in_flight[0] -= 1
            out.write(t="commit_ack", seq=state["seq"], iv=state["iv"], now_iv=state["iv"], ok=[],
                      failed=[], err=e.args[0].name(), ms=now_ms())
            return
        committed_positions.update(((t, p), o) for t, p, o in key)

    def fetch(final: bool = False) -> None:
        assigned = consumer.assignment()
        if not assigned:
            return
        iv = state["iv"]
        try:
            got = bounded(10, consumer.committed, assigned)
        except KafkaException as e:
            out.write(t="fetch_err", iv=iv, err=e.args[0].name(), ms=now_ms())
            return
        out.write(t="fetch", iv=iv, final=final, ms=now_ms(),
                  offsets=[[tp.topic, tp.partition, tp.offset] for tp in got if tp.error is None])

    since_commit = 0
    next_fetch = time.monotonic() + args.fetch_every_s
    while not stop():
        for m in consumer.consume(100, 0.2):
            if m.error() is not None:
                if m.error().code() != KafkaError._PARTITION_EOF:
                    out.write(t="consume_err", err=m.error().name(), ms=now_ms())
                continue
            positions[(m.topic(), m.partition())] = m.offset() + 1
            since_commit += 1
            if m.topic() == args.txn_topic:
                out.write(t="read", topic=m.topic(), p=m.partition(), o=m.offset(), v=m.value().decode())
        if since_commit >= args.commit_every:
            commit()
            since_commit = 0
        if time.monotonic() >= next_fetch:
            fetch()
            next_fetch = time.monotonic() + args.fetch_every_s
    # the end: no more commits; wait for the answers to those in flight, then one last fetch
    deadline = time.monotonic() + DRAIN_S
    while in_flight[0] > 0 and time.monotonic() < deadline:
        consumer.consume(100, 0.2)   # serves the callbacks; what it reads is not committed
    out.write(t="drained", in_flight=in_flight[0], ms=now_ms())
    fetch(final=True)
    out.write(t="final_done", ms=now_ms())
    # Stay in the group until every member has taken its final fetch (the runner creates
    # ``<stop file>.close``): one member leaving first would rebalance the others before theirs.
    close_file = Path(f"{args.stop_file}.close") if args.stop_file else None
    deadline = time.monotonic() + CLOSE_WAIT_S
    while close_file is not None and not close_file.exists() and time.monotonic() < deadline:
        consumer.consume(100, 0.2)
    consumer.close()
    out.close()
    return 0


def sampler(args: argparse.Namespace) -> int:
    out, stop = Out(args.out), Stop(args.stop_file)
    consumer = Consumer({**common_client_config(args.bootstrap), "group.id": "soak-sampler",
                         "isolation.level": "read_uncommitted", "enable.auto.commit": False})
    tps = [TopicPartition(t, p) for t in args.topics.split(",") for p in range(args.partitions)]
    while not stop():
        started = time.monotonic()
        for tp in tps:
            try:
                low, high = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
            except KafkaException:
                continue   # no leader right now: nothing observed
            out.write(t="hw", topic=tp.topic, p=tp.partition, low=low, high=high, ms=now_ms())
        time.sleep(max(0.0, args.interval_s - (time.monotonic() - started)))
    consumer.close()
    out.close()
    return 0


def _marks(consumer: Consumer, tps: list[TopicPartition], deadline: float) -> dict[tuple[str, int], tuple[int, int]]:
    marks = {}
    for tp in tps:
        while True:
            try:
                marks[(tp.topic, tp.partition)] = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    return marks


def _read(args: argparse.Namespace, out: Out, iso: str, topic: str, deadline: float) -> bool:
    """Read ``topic`` from log start to end with ``iso``; True if every partition got there."""
    consumer = Consumer({**common_client_config(args.bootstrap), "group.id": f"soak-readback-{iso}",
                         "isolation.level": iso, "enable.auto.commit": False,
                         "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    tps = [TopicPartition(topic, p) for p in range(args.partitions)]
    marks = _marks(consumer, tps, deadline)
    for (t, p), (low, high) in sorted(marks.items()):
        out.write(t="end", iso=iso, topic=t, p=p, low=low, high=high)
    todo = {p for (_, p), (low, high) in marks.items() if high > low}
    consumer.assign([TopicPartition(topic, p, marks[(topic, p)][0]) for p in sorted(todo)])
    while todo and time.monotonic() < deadline:
        for m in consumer.consume(500, 0.5):
            p = m.partition()
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= marks[(topic, p)][1]:
                    todo.discard(p)
                continue
            if m.offset() < marks[(topic, p)][1]:
                out.write(t="read", iso=iso, topic=topic, p=p, o=m.offset(), v=m.value().decode())
        for tp in consumer.position([TopicPartition(topic, p) for p in todo]):
            if tp.offset >= marks[(topic, tp.partition)][1]:
                todo.discard(tp.partition)
    consumer.close()
    if todo:
        out.write(t="unfinished", iso=iso, topic=topic, partitions=sorted(todo))
    return not todo


def readback(args: argparse.Namespace) -> int:
    out = Out(args.out)
    deadline = time.monotonic() + args.seconds
    topics = args.topics.split(",")
    # settle: the last stable offset (what read_committed is given as the end) reaches the
    # high watermark once no transaction is open (the coordinator aborts a dead producer's
    # after its transaction.timeout.ms)
    ru = Consumer({**common_client_config(args.bootstrap), "group.id": "soak-settle",
                   "isolation.level": "read_uncommitted"})
    rc = Consumer({**common_client_config(args.bootstrap), "group.id": "soak-settle",
                   "isolation.level": "read_committed"})
    tps = [TopicPartition(t, p) for t in topics for p in range(args.partitions)]
    while True:
        hw, lso = _marks(ru, tps, deadline), _marks(rc, tps, deadline)
        if all(lso[k][1] == hw[k][1] for k in hw):
            out.write(t="settled", marks={f"{t}-{p}": hw[(t, p)] for t, p in hw}, ms=now_ms())
            break
        if time.monotonic() > deadline:
            out.write(t="unsettled", hw={f"{t}-{p}": v[1] for (t, p), v in hw.items()},
                      lso={f"{t}-{p}": v[1] for (t, p), v in lso.items()}, ms=now_ms())
            break
        time.sleep(0.5)
    ru.close()
    rc.close()
    ok = all([_read(args, out, "read_committed", t, deadline) for t in topics])
    if args.txn_topic:
        ok = _read(args, out, "read_uncommitted", args.txn_topic, deadline) and ok
    out.write(t="done", ok=ok, ms=now_ms())
    out.close()
    return 0 if ok else 1


def run(args: argparse.Namespace) -> int:
    return {"member": member, "sampler": sampler, "readback": readback}[args.kind](args)
