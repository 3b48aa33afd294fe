"""Kafka's ``org.apache.kafka.common.Uuid`` as Python ``uuid.UUID`` values: the string form
and the random ids Kafka hands out (topic ids, KIP-516).

* String form (``Uuid.toString`` / ``fromString``): the 16 bytes, URL-safe base64, no
  ``=`` padding: 22 characters, e.g. ``"vR2nX6VnSw2xOzq2Gq3B7Q"``.
* ``random_uuid`` is ``Uuid.randomUuid``: a version-4 UUID that is never ``ZERO_UUID`` (no id),
  never ``METADATA_TOPIC_ID`` (reserved for KRaft's ``__cluster_metadata``) and whose
  string does not start with ``-`` (it would read as a command-line option).
"""

from __future__ import annotations

import base64
import uuid

from wire.schema import ZERO_UUID

__all__ = ["METADATA_TOPIC_ID", "ZERO_UUID", "random_uuid", "uuid_from_string", "uuid_to_string"]

# Uuid.METADATA_TOPIC_ID: Uuid(0, 1), the id of KRaft's metadata topic
METADATA_TOPIC_ID = uuid.UUID(int=1)


def uuid_to_string(u: uuid.UUID) -> str:
    """``Uuid.toString``: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def uuid_from_string(s: str) -> uuid.UUID:
    """``Uuid.fromString``; ValueError when ``s`` is not 16 bytes of URL-safe base64."""
    if len(s) > 24:
        raise ValueError(f"Input string with prefix `{s[:24]}` is too long to be decoded as a base64 UUID")
    try:
        raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except (ValueError, TypeError) as e:
        raise ValueError(f"not a base64 UUID: {s!r}") from e
    if len(raw) != 16:
        raise ValueError(f"Unexpected length of base64 UUID `{s}`: {len(raw)} bytes, expected 16")
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    """``Uuid.randomUuid``: uuid4, retried while it is a reserved id or prints with a leading '-'."""
    while True:
        u = uuid.uuid4()
        if u not in (ZERO_UUID, METADATA_TOPIC_ID) and not uuid_to_string(u).startswith("-"):
            return u
