"""Per-log-directory text files: Kafka's ``CheckpointFile`` / ``OffsetCheckpointFile``,
``meta.properties`` and the clean-shutdown marker.

Checkpoint format (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``)::

    0                  version line
    2                  number of entries
    my-topic 0 1234    "topic partition offset", whitespace-separated, one per line
    other 3 0

Written to ``<file>.tmp``, fsynced, then atomically renamed over the file (Kafka's
``atomicMoveWithFallback``).  Reading checks the version and the entry count.

Threads: every reader and writer of one checkpoint path takes that path's lock
(``checkpoint_lock``; one lock per absolute path, shared by every ``CheckpointFile`` object
naming it), so two threads never write the same ``.tmp`` at once nor rename a stale one over
a newer file.  A caller that computes the content from live state and must not be overtaken
by an older snapshot holds ``checkpoint_lock(path)`` across computing and writing (it is
re-entrant).

``meta.properties`` (KRaft, version 1): Java properties ``version=1``, ``cluster.id``,
``node.id``, optional ``directory.id``.  The clean-shutdown marker is ``.kafka_cleanshutdown``
holding ``{"version":0,"brokerEpoch":...}`` like Kafka's ``CleanShutdownFileHandler``; only its
existence matters for recovery.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time

from log.durable_files import replace_file

__all__ = [
    "CLEAN_SHUTDOWN_FILE_NAME",
    "LOG_START_OFFSET_CHECKPOINT_FILE",
    "META_PROPERTIES_FILE",
    "RECOVERY_POINT_CHECKPOINT_FILE",
    "REPLICATION_OFFSET_CHECKPOINT_FILE",
    "CheckpointFile",
    "CleanShutdownFile",
    "MetaProperties",
    "OffsetCheckpointFile",
    "checkpoint_lock",
]

RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"
META_PROPERTIES_FILE = "meta.properties"
CLEAN_SHUTDOWN_FILE_NAME = ".kafka_cleanshutdown"

_WS = re.compile(r"\s+")

_locks_guard = threading.Lock()
_locks: dict[str, threading.RLock] = {}


def checkpoint_lock(path: str) -> threading.RLock:
    """The one lock of the checkpoint file at ``path`` (re-entrant; created on first use)."""
    key = os.path.abspath(path)
    with _locks_guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.RLock()
        return lock


def _atomic_write(path: str, text: str, sync: bool = True) -> None:
    replace_file(path, text.encode("utf-8"), sync)


class CheckpointFile:
    """Generic ``version / count / entry lines`` file; subclasses format the entries."""

    def __init__(self, path: str, version: int = 0) -> None:
        self.path = path
        self.version = version
        self.lock = checkpoint_lock(path)
        with self.lock:
            if not os.path.exists(path):
                # Kafka creates the file on construction (a bare open: no Python file object)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666))

    def write_lines(self, lines: list[str], sync: bool = True) -> None:
        with self.lock:
            _atomic_write(self.path, f"{self.version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines), sync)

    def read_lines(self) -> list[str]:
        with self.lock:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        if not lines:
            return []
        try:
            version = int(lines[0])
        except ValueError:
            raise OSError(f"Malformed line in checkpoint file [{self.path}]: {lines[0]}") from None
        if version != self.version:
            raise OSError(f"Unrecognised version:{version}, expected version: {self.version} in checkpoint file at: {self.path}")
        if len(lines) < 2:
            return []
        try:
            expected = int(lines[1])
        except ValueError:
            raise OSError(f"Malformed line in checkpoint file [{self.path}]: {lines[1]}") from None
        entries = lines[2:]
        if len(entries) != expected:
            raise OSError(f"Expected [{expected}] entries in checkpoint file [{self.path}], but found only [{len(entries)}]")
        return entries


class OffsetCheckpointFile(CheckpointFile):
    """``{(topic, partition): offset}`` in Kafka's offset checkpoint format (version 0)."""

    def write(self, offsets: dict[tuple[str, int], int], sync: bool = True) -> None:
        self.write_lines([f"{t} {p} {o}" for (t, p), o in offsets.items()], sync)

    def read(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for line in self.read_lines():
            parts = _WS.split(line.strip())
            if len(parts) != 3:
                raise OSError(f"Malformed line in checkpoint file [{self.path}]: {line}")
            try:
                out[(parts[0], int(parts[1]))] = int(parts[2])
            except ValueError:
                raise OSError(f"Malformed line in checkpoint file [{self.path}]: {line}") from None
        return out


class MetaProperties:
    """``meta.properties`` of a log directory (KRaft version 1)."""

    def __init__(self, node_id: int, cluster_id: str, directory_id: str | None = None, version: int = 1) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.directory_id = directory_id
        self.version = version

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MetaProperties) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"MetaProperties(version={self.version}, node_id={self.node_id}, cluster_id={self.cluster_id!r}, directory_id={self.directory_id!r})"

    def to_properties(self) -> dict[str, str]:
        props = {"cluster.id": self.cluster_id, "node.id": str(self.node_id), "version": str(self.version)}
        if self.directory_id is not None:
            props["directory.id"] = self.directory_id
        return props

    def write(self, log_dir: str) -> None:
        stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y")
        body = f"#\n#{stamp}\n" + "".join(f"{k}={v}\n" for k, v in sorted(self.to_properties().items()))
        _atomic_write(os.path.join(log_dir, META_PROPERTIES_FILE), body)

    @classmethod
    def read(cls, log_dir: str) -> MetaProperties | None:
        path = os.path.join(log_dir, META_PROPERTIES_FILE)
        if not os.path.exists(path):
            return None
        props: dict[str, str] = {}
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.strip()
                if not line or line[0] in "#!":
                    continue
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
        version = int(props.get("version", "0"))
        node = props.get("node.id", props.get("broker.id"))
        if node is None or "cluster.id" not in props:
            raise OSError(f"{path} lacks node.id or cluster.id")
        return cls(int(node), props["cluster.id"], props.get("directory.id"), version)


class CleanShutdownFile:
    """The ``.kafka_cleanshutdown`` marker of one log directory."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE_NAME)

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def write(self, broker_epoch: int = -1) -> None:
        _atomic_write(self.path, json.dumps({"version": "0", "brokerEpoch": str(broker_epoch)}))

    def delete(self) -> None:
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
