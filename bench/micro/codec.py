"""wire/ codec benchmarks: microseconds per encode/decode of common messages.

Run: ``.venv/bin/python -m bench.micro.codec [--repeat 25] [--profile]``.

Figures are the median (and minimum) over ``--repeat`` timeit runs of each operation, each
run long enough (~20 ms) to swamp the timer.  Record bytes are never part of the cost: a
Produce request's records decode to a memoryview into the request buffer and a Fetch
response's records are appended to the output parts as the same object (checked below),
so the figures are codec work per request, independent of the batch size.

* Produce v9 request decode: one topic, one partition, one 1 MiB batch; the body alone
  (``decode``) and with the request header (``decode_request_header`` + ``decode``).
* Fetch v12 response encode: 10 partitions of one topic, each carrying a 64 KiB record
  buffer; the body parts (``encode_parts``) and the framed response with its header
  (``encode_response``, what the broker hands to ``writelines``).
* Metadata v12 response (3 brokers, 10 topics x 4 partitions, 3 replicas each) and
  ApiVersions v3 response (every API key in the table), encode and decode.
* The same through the table-driven reference interpreter, for comparison.

``--profile`` prints a cProfile of the two headline operations.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import timeit
import uuid
from collections.abc import Callable
from typing import Any

from wire import interpreter
from wire import messages as m
from wire.codec import decode, encode, encode_parts
from wire.headers import decode_request_header, encode_request, encode_response
from wire.primitives import Writer
from wire.record_batch import build_batch
from wire.schema import REQUESTS, SPECS, spec_of

MIB = 1024 * 1024
AIM_US = 20.0


# ------------------------------------------------------------------ messages


def produce_request_frame() -> tuple[bytes, int]:
    """A Produce v9 request frame (no size prefix) with one ~1 MiB batch; (frame, body at)."""
    value = bytes(range(256)) * 4
    batch = build_batch([(None, value, None, 1_700_000_000_000)] * (MIB // len(value)))  # just over 1 MiB
    req = m.ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[
        m.ProduceRequest.TopicProduceData(name="bench-topic", partition_data=[
            m.ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    frame = encode_request(req, 9, correlation_id=7, client_id="bench-producer")[4:]
    _, at = decode_request_header(frame)
    return frame, at


def fetch_response(partitions: int = 10, record_bytes: int = 64 * 1024) -> m.FetchResponse:
    buf = memoryview(bytearray(record_bytes * partitions))
    parts = [m.FetchResponse.PartitionData(
        partition_index=i, error_code=0, high_watermark=1_000_000 + i, last_stable_offset=1_000_000 + i,
        log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
        records=buf[i * record_bytes:(i + 1) * record_bytes]) for i in range(partitions)]
    return m.FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        m.FetchResponse.FetchableTopicResponse(topic="bench-topic", partitions=parts)])


def metadata_response(topics: int = 10, partitions: int = 4) -> m.MetadataResponse:
    brokers = [m.MetadataResponse.MetadataResponseBroker(node_id=i, host=f"broker-{i}.local",
                                                         port=9092, rack=None) for i in range(3)]
    ts = [m.MetadataResponse.MetadataResponseTopic(
        error_code=0, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), is_internal=False,
        partitions=[m.MetadataResponse.MetadataResponsePartition(
            error_code=0, partition_index=p, leader_id=p % 3, leader_epoch=5,
            replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2], offline_replicas=[])
            for p in range(partitions)])
        for t in range(topics)]
    return m.MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id="bench-cluster",
                              controller_id=0, topics=ts)


def api_versions_response() -> m.ApiVersionsResponse:
    keys = [m.ApiVersionsResponse.ApiVersion(api_key=k, min_version=s.valid[0],
                                             max_version=s.valid[1] or s.valid[0])
            for k, s in sorted(REQUESTS.items())]
    return m.ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)


# ------------------------------------------------------------------ timing


def per_op_us(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, min) microseconds per call over ``repeat`` timeit runs of ~20 ms each."""
    timer = timeit.Timer(fn)
    number, took = timer.autorange()  # at least 0.2 s: scale down to ~20 ms per run
    number = max(1, int(number * 0.02 / took)) if took > 0.02 else number
    runs = [t / number * 1e6 for t in timer.repeat(repeat=repeat, number=number)]
    return statistics.median(runs), min(runs)


def interp_encode_parts(msg: Any, version: int) -> list[Any]:
    """The interpreter's encoder without the final join (which would copy the records)."""
    spec = spec_of(msg)
    w = Writer()
    interpreter._write_struct(w, spec, msg, version, spec.is_flexible(version))
    return w.parts


def cases() -> list[tuple[str, Callable[[], Any], Callable[[], Any] | None]]:
    frame, at = produce_request_frame()
    body = memoryview(frame)[at:]
    produce = SPECS["ProduceRequest"]
    fetch = fetch_response()
    meta = metadata_response()
    meta_bytes = encode(meta, 12)
    av = api_versions_response()
    av_bytes = encode(av, 3)

    def produce_with_header() -> Any:
        head, p = decode_request_header(frame)
        return decode(m.ProduceRequest, memoryview(frame)[p:], head.request_api_version)

    return [
        ("Produce v9 request decode (1 MiB batch)",
         lambda: decode(m.ProduceRequest, body, 9),
         lambda: interpreter.decode(produce, body, 9)),
        ("  ... with the request header", produce_with_header, None),
        ("Fetch v12 response encode (10 partitions)",
         lambda: encode_parts(fetch, 12),
         lambda: interp_encode_parts(fetch, 12)),
        ("  ... framed, with the response header",
         lambda: encode_response(fetch, 12, 99), None),
        ("Metadata v12 response encode (10 topics x 4)",
         lambda: encode_parts(meta, 12), lambda: interp_encode_parts(meta, 12)),
        ("Metadata v12 response decode (10 topics x 4)",
         lambda: decode(m.MetadataResponse, meta_bytes, 12),
         lambda: interpreter.decode(SPECS["MetadataResponse"], meta_bytes, 12)),
        (f"ApiVersions v3 response encode ({len(av.api_keys)} keys)",
         lambda: encode_parts(av, 3), lambda: interp_encode_parts(av, 3)),
        (f"ApiVersions v3 response decode ({len(av.api_keys)} keys)",
         lambda: decode(m.ApiVersionsResponse, av_bytes, 3),
         lambda: interpreter.decode(SPECS["ApiVersionsResponse"], av_bytes, 3)),
    ]


def check_zero_copy() -> None:
    frame, at = produce_request_frame()
    req = decode(m.ProduceRequest, memoryview(frame)[at:], 9)
    rec = req.topic_data[0].partition_data[0].records
    assert isinstance(rec, memoryview) and rec.obj is frame and len(rec) >= MIB
    fetch = fetch_response()
    parts = encode_parts(fetch, 12)
    originals = {id(p.records) for t in fetch.responses for p in t.partitions}
    assert sum(1 for p in parts if id(p) in originals) == 10


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=25)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    check_zero_copy()
    print("record bytes are referenced, never copied: checked")
    print(f"{'operation':48} {'compiled us':>14} {'interpreter us':>16}   (median / min)")
    for name, compiled_fn, interp_fn in cases():
        med, low = per_op_us(compiled_fn, args.repeat)
        aimed = name.startswith(("Produce v9", "Fetch v12"))
        flag = f"  (aim <= {AIM_US:g} us: {'met' if med <= AIM_US else 'MISSED'})" if aimed else ""
        line = f"{name:48} {med:7.2f} /{low:6.2f}"
        if interp_fn is not None:
            imed, ilow = per_op_us(interp_fn, args.repeat)
            line += f" {imed:8.2f} /{ilow:7.2f}"
        print(line + flag)
    if args.profile:
        c = cases()
        for name, fn, _ in (c[0], c[2]):
            print(f"\n--- cProfile: {name} (20,000 calls)")
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(20_000):
                fn()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(8)


if __name__ == "__main__":
    main()
