"""Fuzzing the request decoder and the framer: hostile bytes raise only the codec's own errors.

The bulk uses a seeded ``random.Random`` (not hypothesis) so that >= 100,000 frames fit in
well under a minute and every failure is reproducible from its index.  Seeds are real
request frames of every request API at many versions (values drawn field by field by a
small random generator, record fields carrying real magic-2 batches), mutated by bit
flips, truncation, lying length fields (huge, negative, off by a few), lying varints,
byte insertion/deletion, splicing two frames, decoding a body at another version, and
plain garbage.  Each frame goes through ``decode_request_header`` and, for a known API,
``decode(REQUESTS[key].cls, body, version)``.  Anything but a ``WireError`` (IndexError,
struct.error, MemoryError, RecursionError, ...) fails the test; so does a run that takes
too long (a hang is caught by an interval timer).
"""

from __future__ import annotations

import random
import signal
import struct
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from wire.codec import decode
from wire.errors import WireError
from wire.framing import FrameDecoder, FrameError
from wire.headers import decode_request_header, encode_request
from wire.primitives import INT_RANGES
from wire.record_batch import build_batch
from wire.schema import REQUESTS, FieldSpec, MessageSpec, StructSpec

FRAMES = 1_000_000
SEED = 20240611
TIME_LIMIT_S = 150  # CPU seconds (~17 on this machine): a hang trips this long before pytest would notice


# ------------------------------------------------------------------ seed messages


def _scalar(elem: str, rng: random.Random) -> Any:
    if elem in INT_RANGES:
        lo, hi = INT_RANGES[elem]
        return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi), rng.randint(0, 100)])
    if elem == "bool":
        return rng.random() < 0.5
    if elem == "float64":
        return rng.uniform(-1e9, 1e9)
    if elem == "string":
        return "".join(rng.choice("abcxyz-_.é") for _ in range(rng.randint(0, 12)))
    if elem == "bytes":
        return rng.randbytes(rng.randint(0, 20))
    if elem == "records":
        n = rng.randint(1, 3)
        return build_batch(
            [(rng.randbytes(rng.randint(0, 5)), rng.randbytes(rng.randint(0, 30)),
              [("h", b"v")] if rng.random() < 0.5 else None, 1_700_000_000_000 + i)
             for i in range(n)],
        )
    if elem == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(elem)


def random_struct(spec: StructSpec, v: int, flex: bool, rng: random.Random, depth: int = 0) -> Any:
    kw = {}
    for f in spec.fields:
        if f.present(v):
            kw[f.py] = _random_field(f, v, flex, rng, depth)
    return spec.cls(**kw)


def _random_field(f: FieldSpec, v: int, flex: bool, rng: random.Random, depth: int) -> Any:
    if flex and f.is_tagged(v) and rng.random() < 0.3:
        return f.make_default()
    if f.is_nullable(v) and rng.random() < 0.15:
        return None

    def one() -> Any:
        if f.struct is not None:
            return random_struct(f.struct, v, flex, rng, depth + 1)
        return _scalar(f.elem, rng)

    if f.is_array:
        return [one() for _ in range(rng.randint(0, 3 if depth < 2 else 1))]
    return one()


def seed_frames(rng: random.Random) -> list[bytes]:
    """Real encoded requests (without the size prefix) of every request API, many versions."""
    out = []
    for spec in REQUESTS.values():
        for v in spec.versions():
            for _ in range(2):
                msg = random_struct(spec, v, spec.is_flexible(v), rng)
                client_id = rng.choice([None, "", "fuzz-client"])
                out.append(encode_request(msg, v, rng.randint(0, 1 << 20), client_id)[4:])
    return out


# ------------------------------------------------------------------ mutations

_LENGTHS = [0x7FFFFFFF, -1, -2, 0x40000000, 0x7FFF, 0xFFFF, 0x10000, 1 << 24, 0, 1, 2, 255]


def _flip_bits(f: bytearray, rng: random.Random) -> None:
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(f))
        f[i] ^= 1 << rng.randrange(8)


def _truncate(f: bytearray, rng: random.Random) -> None:
    del f[rng.randrange(len(f)):]


def _lying_length(f: bytearray, rng: random.Random) -> None:
    i = rng.randrange(len(f))
    width = rng.choice([1, 2, 4])
    value = rng.choice(_LENGTHS) & ((1 << (8 * width)) - 1)
    f[i : i + width] = value.to_bytes(width, "big")


def _nudge_int(f: bytearray, rng: random.Random) -> None:
    """Add a small delta to an int16/int32 somewhere: a length off by a few."""
    i = rng.randrange(max(1, len(f) - 4))
    fmt = rng.choice([">h", ">i"])
    if i + struct.calcsize(fmt) <= len(f):
        (x,) = struct.unpack_from(fmt, f, i)
        lim = 1 << (8 * struct.calcsize(fmt) - 1)
        struct.pack_into(fmt, f, i, max(-lim, min(lim - 1, x + rng.randint(-3, 3))))


def _lying_varint(f: bytearray, rng: random.Random) -> None:
    i = rng.randrange(len(f))
    f[i:i] = rng.choice([b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff", b"\x80" * 12,
                         b"\xfe\xff\xff\xff\x07", b"\x00", b"\x01"])


def _insert_delete(f: bytearray, rng: random.Random) -> None:
    i = rng.randrange(len(f))
    if rng.random() < 0.5:
        del f[i : i + rng.randint(1, 8)]
    else:
        f[i:i] = rng.randbytes(rng.randint(1, 8))


def _garbage_tail(f: bytearray, rng: random.Random) -> None:
    i = rng.randrange(len(f))
    f[i:] = rng.randbytes(rng.randint(0, 64))


MUTATIONS = [_flip_bits, _truncate, _lying_length, _nudge_int, _lying_varint, _insert_delete,
             _garbage_tail]


def _other_version(seed: bytes, rng: random.Random) -> bytearray:
    """The body of one version presented as another version of the same API."""
    f = bytearray(seed)
    api_key = struct.unpack_from(">h", f, 0)[0]
    spec = REQUESTS[api_key]
    struct.pack_into(">h", f, 2, rng.choice(spec.versions()))
    return f


def _random_garbage(rng: random.Random) -> bytearray:
    """A plausible header for a random API/version, then random bytes."""
    spec = rng.choice(list(REQUESTS.values()))
    head = struct.pack(">hhi", spec.api_key, rng.choice(spec.versions()), rng.getrandbits(31))
    client = rng.choice([b"\xff\xff", b"\x00\x00", b"\x00\x03abc", b"\x7f\xff"])
    return bytearray(head + client + rng.choice([b"", b"\x00"]) + rng.randbytes(rng.randint(0, 96)))


def fuzz_frames(n: int, seed: int) -> Iterator[bytes]:
    rng = random.Random(seed)
    seeds = seed_frames(rng)
    for i in range(n):
        kind = i % 20
        if kind == 0:
            f = bytearray(rng.randbytes(rng.randint(0, 64)))
        elif kind == 1:
            f = _random_garbage(rng)
        elif kind == 2:
            f = _other_version(rng.choice(seeds), rng)
        elif kind == 3:
            a, b = rng.choice(seeds), rng.choice(seeds)
            f = bytearray(a[: rng.randrange(len(a))] + b[rng.randrange(len(b)):])
        else:
            f = bytearray(rng.choice(seeds))
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                if not f:
                    break
                rng.choice(MUTATIONS)(f, rng)
        yield bytes(f)


def decode_request(frame: bytes) -> str:
    """What a broker does with a frame; returns 'ok', 'header' or 'unknown'."""
    head, body_at = decode_request_header(frame)
    spec: MessageSpec | None = REQUESTS.get(head.request_api_key)
    if spec is None:
        return "unknown"
    decode(spec.cls, memoryview(frame)[body_at:], head.request_api_version)
    return "ok"


# ------------------------------------------------------------------ the tests


class _Hang(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hang()


def run_fuzz(n: int, seed: int, decoder: Any = decode_request,
             ) -> tuple[Counter[str], list[tuple[int, str, str]], set[int]]:
    """Feed n fuzzed frames to ``decoder``; returns (outcomes, non-wire failures, api keys)."""
    outcomes: Counter[str] = Counter()
    bad: list[tuple[int, str, str]] = []
    apis: set[int] = set()
    # CPU time of this process, not wall time: a busy machine (parallel test workers) slows
    # the run down without making it a hang
    old = signal.signal(signal.SIGPROF, _on_alarm)
    signal.setitimer(signal.ITIMER_PROF, TIME_LIMIT_S)
    try:
        for i, frame in enumerate(fuzz_frames(n, seed)):
            try:
                outcomes[decoder(frame)] += 1
                apis.add(int.from_bytes(frame[:2], "big", signed=True))
            except WireError as e:
                outcomes[type(e).__name__] += 1
            except _Hang:
                raise AssertionError(f"frame {i} hung: {frame[:64].hex()}") from None
            except Exception as e:  # noqa: BLE001 - that is the point of the test
                if len(bad) < 10:
                    bad.append((i, f"{type(e).__name__}: {e}", frame[:80].hex()))
                outcomes["BAD"] += 1
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    return outcomes, bad, apis


def test_a_million_hostile_request_frames_raise_only_wire_errors():
    started = time.perf_counter()
    outcomes, bad, apis = run_fuzz(FRAMES, SEED)
    elapsed = time.perf_counter() - started
    assert bad == [], f"non-wire exceptions ({outcomes['BAD']}): {bad}"
    assert sum(outcomes.values()) == FRAMES
    # The fuzz reaches deep: plenty of frames still decode, plenty fail in the body.
    assert outcomes["ok"] > FRAMES // 20, outcomes
    assert outcomes["DecodeError"] > FRAMES // 4, outcomes
    assert set(REQUESTS) <= apis
    print(f"\n{FRAMES} frames in {elapsed:.1f}s: {dict(outcomes)}")


def test_the_fuzz_reaches_the_paths_where_raw_struct_and_index_errors_arise(monkeypatch):
    """With the codec's translation of low-level errors switched off, raw errors escape:
    proof that the fuzz exercises them and that the harness reports them."""
    import wire.codec

    monkeypatch.setattr(wire.codec, "_DECODE_FAILURES", (RecursionError,))
    outcomes, bad, _ = run_fuzz(20_000, SEED + 1)
    kinds = {why.split(":")[0] for _, why, _ in bad}
    assert outcomes["BAD"] > 100 and kinds & {"error", "IndexError"}, (outcomes, kinds)


def test_every_seed_frame_decodes_back_to_a_request():
    rng = random.Random(SEED)
    seeds = seed_frames(rng)
    assert len(seeds) > 500
    assert all(decode_request(f) == "ok" for f in seeds)


def test_every_truncation_of_real_requests_raises_only_wire_errors():
    seeds = seed_frames(random.Random(SEED))
    rng = random.Random(3)
    for frame in rng.sample(seeds, 60):
        for cut in range(len(frame)):
            try:
                decode_request(frame[:cut])
            except WireError:
                pass


# ------------------------------------------------------------------ framing


def _stream(frames: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def test_any_chunking_of_a_stream_yields_the_same_frames_in_order():
    rng = random.Random(7)
    frames = [rng.randbytes(rng.choice([0, 1, 3, 4, 5, 100, 5000])) for _ in range(60)]
    stream = _stream(frames)
    for trial in range(300):
        dec = FrameDecoder(max_frame_bytes=10_000)
        got: list[bytes] = []
        i = 0
        while i < len(stream):
            step = rng.choice([1, 1, 2, 3, 4, 5, 7, rng.randint(1, 9000)]) if trial else 1
            dec.feed(memoryview(stream)[i : i + step])
            i += step
            while (f := dec.next_frame()) is not None:
                got.append(bytes(f))
        assert got == frames
        assert dec.buffered_bytes == 0 and dec.next_frame() is None


def test_a_frame_split_anywhere_inside_its_size_prefix_or_body_is_held_until_complete():
    frame = b"\x00\x12\x00\x03" + b"x" * 20
    stream = _stream([frame])
    for cut in range(len(stream)):
        dec = FrameDecoder()
        dec.feed(stream[:cut])
        assert dec.next_frame() is None
        assert dec.buffered_bytes == (cut if cut < 4 else cut - 4)  # the prefix is parsed
        dec.feed(stream[cut:])
        assert dec.next_frame() == frame


def test_each_frame_is_its_own_writable_buffer():
    dec = FrameDecoder()
    dec.feed(_stream([b"abc", b"defg"]))
    a, b = dec.next_frame(), dec.next_frame()
    assert isinstance(a, bytearray) and isinstance(b, bytearray)
    a[0] = ord("z")
    assert (a, b) == (bytearray(b"zbc"), bytearray(b"defg"))


@pytest.mark.parametrize("size", [-1, -2, -(1 << 31), -0x1000])
def test_a_negative_size_prefix_is_a_frame_error(size):
    dec = FrameDecoder()
    with pytest.raises(FrameError):
        dec.feed(struct.pack(">i", size) + b"xxxx")


@pytest.mark.parametrize("size", [1025, 0x7FFFFFFF, 1 << 24])
def test_a_size_above_the_limit_is_a_frame_error_before_anything_is_allocated(size):
    dec = FrameDecoder(max_frame_bytes=1024)
    head = struct.pack(">i", size)
    dec.feed(head[:2])  # a split prefix changes nothing
    with pytest.raises(FrameError):
        dec.feed(head[2:])
    assert dec.buffered_bytes == 0


def test_a_size_exactly_at_the_limit_is_accepted_and_a_zero_size_frame_is_empty():
    dec = FrameDecoder(max_frame_bytes=16)
    dec.feed(_stream([b"", b"y" * 16]))
    assert dec.next_frame() == b""
    assert dec.next_frame() == b"y" * 16


def test_frame_errors_are_wire_errors():
    assert issubclass(FrameError, WireError)


def test_random_streams_of_garbage_frame_or_fail_with_frame_error_only():
    rng = random.Random(11)
    for _ in range(2000):
        dec = FrameDecoder(max_frame_bytes=4096)
        data = rng.randbytes(rng.randint(0, 200))
        try:
            for i in range(0, len(data), 13):
                dec.feed(data[i : i + 13])
                while dec.next_frame() is not None:
                    pass
        except FrameError:
            pass
