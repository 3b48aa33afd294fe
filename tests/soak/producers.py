"""The soak's producers (run by tests/soak/workers.py).

``idempotent``: confluent-kafka with acks=all, enable.idempotence=true and
max.in.flight.requests.per.connection=5, at ``--rate`` records a second.  Record i of
incarnation k goes to partition i % partitions with value ``<name>.<k>-<i:08d>`` (unique, so a
duplicate or a misplaced record shows).  History lines:
``{"t": "ack", "topic", "p", "o", "v"}`` for each acknowledged record (the offset is the
broker's answer), ``{"t": "err", "topic", "p", "v", "err"}`` for each failed one,
``{"t": "client_err", "err", "fatal"}`` from error_cb, ``{"t": "fatal", "err"}`` when the
producer is unusable (it is replaced by incarnation k + 1: a new producer id, new values).

``transactional``: confluent-kafka with a ``transactional.id`` (idempotent, acks=all, 5 in
flight).  Each transaction writes 5-20 records, value ``<name>.<k>-<n>-<i:03d>`` spread over
the partitions, then commits, or, with probability ``--abort-ratio``, waits for every
record's acknowledgement and aborts (so that the aborted records are in the log).  Lines:
``{"t": "begin", "txn", "want"}``, one ``ack``/``err`` per record (with its ``txn``), and
``{"t": "end", "txn", "want", "outcome", "err"}`` where outcome is ``committed`` (commit
returned), ``aborted`` (abort returned: nothing of it may ever be read with
read_committed) or ``unknown`` (the producer failed fatally in between: it may have
committed or not; the next incarnation's init_transactions finishes it either way).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from tests.soak.workers import Out, Stop, common_client_config, now_ms
from tests.support.eos_worker import bounded

TXN_CALL_TIMEOUT_S = 30
END_ATTEMPTS = 10   # a retriable commit/abort error: try the same call again, this many times


def _producer_config(args: argparse.Namespace, out: Out, fatal: list[str]) -> dict[str, Any]:
    def on_error(err: KafkaError) -> None:
        out.write(t="client_err", err=err.name(), fatal=err.fatal(), ms=now_ms())
        if err.fatal():
            fatal.append(err.name())

    return {
        **common_client_config(args.bootstrap),
        "acks": "all",
        "enable.idempotence": True,
        "max.in.flight.requests.per.connection": 5,
        "linger.ms": 5,
        "message.timeout.ms": 60000,
        "request.timeout.ms": 30000,
        "error_cb": on_error,
    }


def _report(out: Out, txn: str | None = None) -> Any:
    def report(err: KafkaError | None, msg: Any) -> None:
        extra = {"txn": txn} if txn is not None else {}
        if err is None:
            out.write(t="ack", topic=msg.topic(), p=msg.partition(), o=msg.offset(), v=msg.value().decode(),
                      ms=now_ms(), **extra)
        else:
            out.write(t="err", topic=msg.topic(), p=msg.partition(), v=msg.value().decode(), err=err.name(),
                      fatal=err.fatal(), ms=now_ms(), **extra)
    return report


def idempotent(args: argparse.Namespace) -> int:
    out, stop = Out(args.out), Stop(args.stop_file)
    topic = args.topics.split(",")[0]
    interval = 1.0 / args.rate if args.rate > 0 else 0.0
    incarnation = 0
    while not stop():
        name = f"{args.name}.{incarnation}"
        fatal: list[str] = []
        producer = Producer(_producer_config(args, out, fatal))
        report = _report(out)
        started, sent = time.monotonic(), 0
        try:
            while not stop() and not fatal:
                value = f"{name}-{sent:08d}"
                try:
                    producer.produce(topic, value=value.encode(), key=value.encode(),
                                     partition=sent % args.partitions, on_delivery=report)
                except BufferError:
                    producer.poll(0.1)
                    continue
                sent += 1
                while True:   # pace to the rate: never ahead of sent / rate seconds since the start
                    ahead = started + sent * interval - time.monotonic()
                    producer.poll(max(0.0, min(ahead, 0.05)))
                    if ahead <= 0.05:
                        break
        except KafkaException as e:   # produce or poll: the producer is in a fatal state
            fatal.append(e.args[0].name())
        if fatal:
            out.write(t="fatal", name=name, err=fatal[0], ms=now_ms())
            producer.purge()   # a fatal producer delivers nothing more: fail what is queued now
        try:
            left = producer.flush(60)
        except KafkaException:
            left = len(producer)
        out.write(t="stopped", name=name, sent=sent, unflushed=left, ms=now_ms())
        incarnation += 1
    out.close()
    return 0


def _end(producer: Producer, want: str) -> tuple[str, str | None, bool]:
    """Commit or abort the open transaction: (outcome, error name, producer still usable)."""
    call = producer.commit_transaction if want == "commit" else producer.abort_transaction
    last: str | None = None
    for _ in range(END_ATTEMPTS):
        try:
            bounded(TXN_CALL_TIMEOUT_S, call)
            return ("committed" if want == "commit" else "aborted"), last, True
        except KafkaException as e:
            err: KafkaError = e.args[0]
            last = err.name()
            if err.fatal():
                return "unknown", last, False
            if err.txn_requires_abort():
                return _abort_after(producer, last)
            if not err.retriable():
                return "unknown", last, False
    return "unknown", last, False


def _abort_after(producer: Producer, why: str) -> tuple[str, str | None, bool]:
    """The transaction cannot commit (an abortable error): abort it.  Only an abort that
    returned makes it ``aborted``."""
    for _ in range(END_ATTEMPTS):
        try:
            bounded(TXN_CALL_TIMEOUT_S, producer.abort_transaction)
            return "aborted", why, True
        except KafkaException as e:
            err: KafkaError = e.args[0]
            if err.fatal() or not err.retriable():
                return "unknown", f"{why}, then {err.name()}", False
    return "unknown", why, False


def _drain(producer: Producer) -> str | None:
    """Serve every delivery report already queued (commit/abort waited for the deliveries);
    the name of the fatal error poll raises once the producer has one, else None."""
    try:
        while producer.poll(0) > 0:
            pass
    except KafkaException as e:
        return e.args[0].name()
    return None


def _transaction(producer: Producer, out: Out, args: argparse.Namespace, rng: random.Random,
                 txn: str) -> tuple[str, str | None, bool]:
    """One transaction, begun, written and ended: (outcome, error name, producer usable)."""
    want = "abort" if rng.random() < args.abort_ratio else "commit"
    topic = args.topics.split(",")[0]
    report = _report(out, txn)
    try:
        producer.begin_transaction()
    except KafkaException as e:
        return "none", e.args[0].name(), False
    out.write(t="begin", txn=txn, want=want, ms=now_ms())
    outcome: tuple[str, str | None, bool] | None = None
    try:
        for i in range(rng.randint(5, 20)):
            value = f"{txn}-{i:03d}".encode()
            try:
                producer.produce(topic, value=value, key=value, partition=i % args.partitions,
                                 on_delivery=report)
            except BufferError:
                producer.poll(0.1)
            producer.poll(0)
        if want == "abort":
            # Abort only once every record is written and acknowledged: then the log holds
            # an aborted transaction that read_committed must skip (aborting at once would
            # mostly purge the records before they are sent, and check nothing).
            producer.flush(TXN_CALL_TIMEOUT_S)
    except KafkaException as e:
        err: KafkaError = e.args[0]
        outcome = _abort_after(producer, err.name()) if err.txn_requires_abort() else ("unknown", err.name(), False)
    if outcome is None:
        outcome = _end(producer, want)
    if (poll_err := _drain(producer)) is not None and outcome[2]:
        outcome = (outcome[0], poll_err, False)   # the end is known; the producer is not usable
    out.write(t="end", txn=txn, want=want, outcome=outcome[0], err=outcome[1], ms=now_ms())
    return outcome


def transactional(args: argparse.Namespace) -> int:
    out, stop = Out(args.out), Stop(args.stop_file)
    rng = random.Random(args.seed)
    incarnation = 0
    while not stop():
        name = f"{args.name}.{incarnation}"
        incarnation += 1
        fatal: list[str] = []
        producer = Producer({**_producer_config(args, out, fatal), "transactional.id": args.txn_id,
                             # a transaction left open by a killed incarnation is aborted soon
                             "transaction.timeout.ms": 20000, "message.timeout.ms": 20000})
        try:
            bounded(TXN_CALL_TIMEOUT_S, producer.init_transactions)
        except KafkaException as e:
            out.write(t="init_err", name=name, err=e.args[0].name(), ms=now_ms())
            time.sleep(0.5)   # a new producer per attempt: do not spin while the cluster heals
            continue
        out.write(t="init", name=name, ms=now_ms())
        n = 0
        while not stop() and not fatal:
            n += 1
            _state, err_name, usable = _transaction(producer, out, args, rng, f"{name}-{n}")
            if not usable:
                fatal.append(err_name or "?")
                break
            try:
                producer.poll(args.pause_s)
            except KafkaException as e:
                fatal.append(e.args[0].name())
        if fatal:
            out.write(t="fatal", name=name, err=fatal[0], ms=now_ms())
        producer.purge()
        with contextlib.suppress(KafkaException):   # a fatal error here changes nothing: it is done
            producer.flush(10)
        _drain(producer)
        out.write(t="stopped", name=name, transactions=n, ms=now_ms())
    out.close()
    return 0


def run(args: argparse.Namespace) -> int:
    return idempotent(args) if args.kind == "idempotent" else transactional(args)
