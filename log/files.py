"""File and directory naming (Kafka's ``LogFileUtils`` and ``UnifiedLog`` naming helpers).

Segment files are named by base offset, 20 digits zero-padded::

    00000000000000368769.log         record batches, exactly as on the wire (magic 2)
    00000000000000368769.index       offset index, 8-byte entries
    00000000000000368769.timeindex   time index, 12-byte entries
    00000000000000368769.txnindex    aborted transactions whose markers are in it (txn_index.py)
    00000000000000368769.snapshot    producer state at that offset
    00000000000000368769.log.deleted (any of the above + ``.deleted``): waiting for removal

A partition lives in ``<log.dir>/<topic>-<partition>``; a partition being deleted is renamed
``<topic>-<partition>.<uuid hex>-delete`` first.
"""

from __future__ import annotations

import os
import re
import uuid

__all__ = [
    "DELETED_FILE_SUFFIX",
    "DELETE_DIR_SUFFIX",
    "FUTURE_DIR_SUFFIX",
    "INDEX_FILE_SUFFIX",
    "LOG_FILE_SUFFIX",
    "PRODUCER_SNAPSHOT_FILE_SUFFIX",
    "STRAY_DIR_SUFFIX",
    "TIME_INDEX_FILE_SUFFIX",
    "TXN_INDEX_FILE_SUFFIX",
    "filename_prefix_from_offset",
    "log_delete_dir_name",
    "log_dir_name",
    "log_file",
    "offset_from_file_name",
    "offset_index_file",
    "parse_topic_partition_name",
    "producer_snapshot_file",
    "time_index_file",
    "txn_index_file",
]

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"


def filename_prefix_from_offset(offset: int) -> str:
    """``368769`` -> ``"00000000000000368769"`` (Kafka pads with a NumberFormat of 20 digits)."""
    return f"{offset:020d}"


def offset_from_file_name(file_name: str) -> int:
    """The base offset in a segment/index/snapshot file name (the part before the first dot)."""
    return int(os.path.basename(file_name).split(".", 1)[0])


def log_file(dir_: str, offset: int, suffix: str = "") -> str:
    return os.path.join(dir_, filename_prefix_from_offset(offset) + LOG_FILE_SUFFIX + suffix)


def offset_index_file(dir_: str, offset: int, suffix: str = "") -> str:
    return os.path.join(dir_, filename_prefix_from_offset(offset) + INDEX_FILE_SUFFIX + suffix)


def time_index_file(dir_: str, offset: int, suffix: str = "") -> str:
    return os.path.join(dir_, filename_prefix_from_offset(offset) + TIME_INDEX_FILE_SUFFIX + suffix)


def txn_index_file(dir_: str, offset: int, suffix: str = "") -> str:
    return os.path.join(dir_, filename_prefix_from_offset(offset) + TXN_INDEX_FILE_SUFFIX + suffix)


def producer_snapshot_file(dir_: str, offset: int) -> str:
    return os.path.join(dir_, filename_prefix_from_offset(offset) + PRODUCER_SNAPSHOT_FILE_SUFFIX)


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def log_delete_dir_name(topic: str, partition: int) -> str:
    """``topic-0.<uuid hex>-delete`` as Kafka's ``logDeleteDirName`` (uuid without dashes)."""
    return f"{topic}-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


_DELETE_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)" + re.escape(DELETE_DIR_SUFFIX) + "$")
_FUTURE_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)" + re.escape(FUTURE_DIR_SUFFIX) + "$")
_STRAY_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)" + re.escape(STRAY_DIR_SUFFIX) + "$")


def parse_topic_partition_name(dir_name: str) -> tuple[str, int]:
    """``"my-topic-3"`` (or a -delete / -future / -stray name) -> ``("my-topic", 3)``.

    Raises ``ValueError`` for names that are not partition directories, like Kafka's
    ``parseTopicPartitionName`` throws ``KafkaException``."""
    name = os.path.basename(dir_name.rstrip("/"))
    for pattern in (_DELETE_DIR, _FUTURE_DIR, _STRAY_DIR):
        m = pattern.match(name)
        if m:
            name = f"{m.group(1)}-{m.group(2)}"
            break
    idx = name.rfind("-")
    if idx <= 0 or idx == len(name) - 1:
        raise ValueError(f"not a partition directory name: {dir_name!r}")
    topic, part = name[:idx], name[idx + 1 :]
    if not part.isdigit():
        raise ValueError(f"not a partition directory name: {dir_name!r}")
    return topic, int(part)
