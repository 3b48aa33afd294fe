"""``partition.metadata``: the topic id of a partition directory (Kafka's
``PartitionMetadataFile``, KIP-516).

Format (UTF-8, exactly what Kafka writes, no trailing newline)::

    version: 0
    topic_id: <Uuid.toString: 22 characters of URL-safe base64>

Reading follows ``PartitionMetadataReadBuffer``: each line is ``key:`` + whitespace + value
(split on the first ``:\\s+``), the keys in that order; a version below 0, a malformed line
or the zero id is an error (``PartitionMetadataError``, Kafka's KafkaStorageException that
takes the log dir offline).  Kafka reads versions above 0 as version 0's layout; so does this.

Writing follows ``record`` + ``maybe_flush``: ``record`` notes the id in memory (recording a
different id than one still unwritten is ``InconsistentTopicIdError``), ``maybe_flush``
writes ``partition.metadata.tmp``, fsyncs it, renames it over the file and fsyncs the
directory (Kafka's ``Utils.atomicMoveWithFallback`` flushes the parent dir).  The owner
calls it from a scheduled task and at close; before an append it calls
``maybe_flush(durable=False)`` (no fsync: the append may run on the event loop; the task
fsyncs the file and the directory later).  Either costs one attribute check when nothing is
pending.  Thread-safe.

Coalescing: a creation of 10,000 partitions gives 10,000 logs their id; each log hands its
flush to its scheduler's ``DurableWriteBatch`` (durable_batch.py), which writes them all in
one task and, for many files, makes them durable with one ``syncfs`` (then ``synced``).
"""

from __future__ import annotations

import os
import re
import threading
import uuid

from log.durable_files import fsync_path, replace_file
from log.log_dir_checks import LogDirError
from wire.uuids import ZERO_UUID, uuid_from_string, uuid_to_string

__all__ = ["PARTITION_METADATA_FILE_NAME", "InconsistentTopicIdError", "PartitionMetadataError",
           "PartitionMetadataFile", "decode_partition_metadata", "encode_partition_metadata"]


PARTITION_METADATA_FILE_NAME = "partition.metadata"
CURRENT_VERSION = 0
_WHITE_SPACES = re.compile(r":\s+")


class PartitionMetadataError(LogDirError):
    """A partition.metadata file that cannot be read (Kafka: KafkaStorageException, the log
    dir goes offline): the broker does not start on it."""


class InconsistentTopicIdError(Exception):
    """A log asked to take a topic id other than the one it holds (INCONSISTENT_TOPIC_ID)."""


def encode_partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"version: {CURRENT_VERSION}\ntopic_id: {uuid_to_string(topic_id)}".encode()


def _value(line: str | None, key: str, location: str) -> str:
    if line is None:
        raise PartitionMetadataError(f"Malformed line in partition metadata file [{location}]: null")
    parts = _WHITE_SPACES.split(line, maxsplit=1)
    if len(parts) != 2 or parts[0] != key:
        raise PartitionMetadataError(f"Malformed line in partition metadata file [{location}]: {line}")
    return parts[1]


def decode_partition_metadata(text: str, location: str = "partition.metadata") -> uuid.UUID:
    """The topic id in a partition.metadata file's text (see the module docstring)."""
    lines = text.splitlines()
    line = lines[0] if lines else None
    try:
        version = int(_value(line, "version", location))
    except ValueError:
        raise PartitionMetadataError(f"Malformed line in partition metadata file [{location}]: {line}") from None
    if version < CURRENT_VERSION:
        raise PartitionMetadataError(f"Unrecognized version of partition metadata file ({location}): {version}")
    line = lines[1] if len(lines) > 1 else None
    try:
        topic_id = uuid_from_string(_value(line, "topic_id", location))
    except ValueError:
        raise PartitionMetadataError(f"Malformed line in partition metadata file [{location}]: {line}") from None
    if topic_id == ZERO_UUID:
        raise PartitionMetadataError(f"Invalid topic ID in partition metadata file ({location})")
    return topic_id


class PartitionMetadataFile:
    def __init__(self, dir_: str) -> None:
        self.path = os.path.join(dir_, PARTITION_METADATA_FILE_NAME)
        self._lock = threading.Lock()
        self._dirty: uuid.UUID | None = None   # recorded, not yet written
        self._unsynced = False                  # written by maybe_flush(durable=False), not fsynced

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def read(self) -> uuid.UUID:
        with self._lock:
            try:
                with open(self.path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise PartitionMetadataError(f"Error while reading partition metadata file {self.path}: {e}") from e
            return decode_partition_metadata(text, self.path)

    def record(self, topic_id: uuid.UUID) -> None:
        """Note ``topic_id`` for the next ``maybe_flush``."""
        dirty = self._dirty
        if dirty is not None and dirty != topic_id:
            raise InconsistentTopicIdError(f"Tried to record topic ID {uuid_to_string(topic_id)} to file but had "
                                           f"already recorded {uuid_to_string(dirty)}")
        self._dirty = topic_id

    @property
    def dirty(self) -> bool:
        return self._dirty is not None

    def maybe_flush(self, durable: bool = True) -> None:
        """Write the recorded id, if one is pending: temp file, fsync, rename (Kafka's
        maybeFlush).  ``durable=False`` (the append path, which may be the event loop) skips
        the fsync and leaves it to the next durable call (the scheduled task, close): the
        file is in place before any data, and an fsync never waits on the appender."""
        if self._dirty is None and not (durable and self._unsynced):
            return
        with self._lock:
            topic_id = self._dirty
            if topic_id is None:
                if durable and self._unsynced:
                    fsync_path(self.path)
                    fsync_path(os.path.dirname(self.path))   # the rename
                    self._unsynced = False
                return
            replace_file(self.path, encode_partition_metadata(topic_id), durable)
            self._dirty = None
            self._unsynced = not durable

    def synced(self) -> None:
        """What ``maybe_flush(durable=False)`` wrote was made durable another way (a syncfs
        of its file system): the next durable call has nothing to fsync."""
        with self._lock:
            if self._dirty is None:
                self._unsynced = False

    def delete(self) -> None:
        with self._lock:
            self._dirty = None
            self._unsynced = False
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
