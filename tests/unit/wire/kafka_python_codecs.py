"""Give kafka-python 3's record builders/readers working snappy, lz4 and zstd codecs.

kafka-python needs python-snappy, lz4 and zstandard for those codecs; none is a project
dependency.  aiokafka (a test dependency) ships its own implementations of the same wire
formats (xerial-framed snappy, LZ4 frame with independent blocks, zstd) on top of cramjam,
so we plug those into kafka-python.  The batch framing, record encoding and CRCs are still
kafka-python's own code; the xerial framing is aiokafka's, not ours.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import aiokafka.codec as aio
import kafka.codec
import kafka.record.default_records as kp_default
import kafka.record.legacy_records as kp_legacy


@contextlib.contextmanager
def kafka_python_codecs() -> Iterator[None]:
    """Patch kafka-python's codec hooks for the duration of the block."""
    patches = [
        (kafka.codec, "has_snappy", lambda: True),
        (kafka.codec, "has_lz4", lambda: True),
        (kafka.codec, "has_zstd", lambda: True),
        (kp_default, "snappy_encode", aio.snappy_encode),
        (kp_default, "snappy_decode", aio.snappy_decode),
        (kp_default, "lz4_encode", aio.lz4_encode),
        (kp_default, "lz4_decode", aio.lz4_decode),
        (kp_default, "zstd_encode", aio.zstd_encode),
        (kp_default, "zstd_decode", aio.zstd_decode),
        (kp_legacy, "snappy_encode", aio.snappy_encode),
        (kp_legacy, "snappy_decode", aio.snappy_decode),
        (kp_legacy, "lz4_encode", aio.lz4_encode),
        (kp_legacy, "lz4_decode", aio.lz4_decode),
    ]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
    try:
        for mod, name, value in patches:
            setattr(mod, name, value)
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)
