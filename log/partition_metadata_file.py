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

Coalescing (``MetadataFileFlusher``): a creation of 10,000 partitions gives 10,000 logs
their id; each log hands its flush to its scheduler's one flusher, which queues a single
``flush-metadata-files`` task for everything pending (not one task per file) and writes
them all in one pass on the scheduler's thread.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import uuid
import weakref
from collections.abc import Callable

from log.durable_files import fsync_path, replace_file
from log.log_dir_checks import LogDirError
from wire.uuids import ZERO_UUID, uuid_from_string, uuid_to_string

__all__ = ["PARTITION_METADATA_FILE_NAME", "InconsistentTopicIdError", "MetadataFileFlusher", "PartitionMetadataError",
           "PartitionMetadataFile", "decode_partition_metadata", "encode_partition_metadata", "metadata_file_flusher"]

_log = logging.getLogger(__name__)

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

    def delete(self) -> None:
        with self._lock:
            self._dirty = None
            self._unsynced = False
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass


class MetadataFileFlusher:
    """The pending ``partition.metadata`` writes of one scheduler's logs, written by one
    ``flush-metadata-files`` task per batch (see the module docstring).  ``add`` may be
    called on any thread; a flush added while the task runs is taken by the next task."""

    TASK_NAME = "flush-metadata-files"

    def __init__(self, scheduler) -> None:  # noqa: ANN001 - log.scheduler.Scheduler (no import cycle)
        self.scheduler = scheduler
        self._lock = threading.Lock()
        self._pending: list[Callable[[], None]] = []
        self.tasks_queued = 0   # for tests and benches: tasks, not files

    def add(self, flush: Callable[[], None]) -> None:
        with self._lock:
            self._pending.append(flush)
            if len(self._pending) > 1:
                return   # the task queued for the first one takes this one too
            self.tasks_queued += 1
        self.scheduler.schedule_once(self.TASK_NAME, self.run)

    def run(self) -> int:
        """Write everything pending now; returns how many flushes ran."""
        with self._lock:
            pending, self._pending = self._pending, []
        for flush in pending:
            try:
                flush()
            except Exception:  # noqa: BLE001 - one bad dir must not keep the others' ids unwritten
                _log.exception("Error while writing a partition.metadata file")
        return len(pending)


_FLUSHERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FLUSHERS_LOCK = threading.Lock()


def metadata_file_flusher(scheduler) -> MetadataFileFlusher:  # noqa: ANN001 - a log.scheduler.Scheduler
    """The one flusher of ``scheduler``'s logs."""
    with _FLUSHERS_LOCK:
        flusher = _FLUSHERS.get(scheduler)
        if flusher is None:
            flusher = _FLUSHERS[scheduler] = MetadataFileFlusher(scheduler)
        return flusher
