"""Start-up checks of the log dirs: refuse to start on storage that was lost or is not ours.

Kafka refuses to start (or marks the dir offline) rather than format over data it cannot
vouch for.  kbroker has no offline dirs, so every failure here stops start-up with a
``LogDirError`` whose message names the dir, says what is wrong and what to do; ``kbroker
serve`` prints it as one line and exits 1.

Checks, in order, for each dir of ``log.dirs`` (``check_log_dirs``):

1. it exists or can be created (Kafka: ``Failed to create data directory <dir>``), is a
   readable directory (``<dir> is not a readable log directory.``) and can be written (a
   probe file is created, fsynced and removed);
2. its ``meta.properties`` (``MetaPropertiesEnsemble.verify``): another node's dir gives
   Kafka's ``Stored node id N doesn't match previous node id M in <dir>/meta.properties. ...``,
   another cluster's ``Invalid cluster.id in: <dir>/meta.properties. Expected A, but read B``
   (the dirs must agree among themselves); a dir with no ``meta.properties`` is formatted
   (kbroker has no ``kafka-storage format`` step) only if it is empty, else refused as
   Kafka's ``No `meta.properties` found in <dir>``.

``missing_partition_dirs`` (called by ``LogManager.load_logs``) finds partitions that the
dir's ``recovery-point-offset-checkpoint`` lists but whose directory is gone (and not renamed
``-delete`` by a deletion in progress): Kafka would recreate them empty only as a replica
to refill from a leader; a single node would silently serve an empty log instead.
"""

from __future__ import annotations

import os

from log.checkpoint import META_PROPERTIES_FILE, MetaProperties
from log.files import DELETE_DIR_SUFFIX, log_dir_name, parse_topic_partition_name

__all__ = ["LogDirError", "check_log_dirs", "missing_partition_dirs", "missing_partition_message"]

# entries that do not make a log dir "in use" (created by the OS or by an earlier start that
# failed before formatting)
_IGNORED_ENTRIES = frozenset({"lost+found", ".lock"})
_WRITE_PROBE = ".kbroker-write-check"


class LogDirError(RuntimeError):
    """A log dir the broker must not start on; the message says which and what to do."""


def check_log_dirs(log_dirs: list[str], node_id: int) -> str | None:
    """Run checks 1 and 2 on every dir; returns the cluster id they record (None when every
    dir is new and empty).  Writes nothing but the probe file."""
    found: dict[str, MetaProperties] = {}
    for d in log_dirs:
        _check_usable(d)
        meta = _read_meta(d)
        if meta is not None:
            found[d] = meta
        elif _in_use(d):
            raise LogDirError(
                f"No `meta.properties` found in {d}, which is not empty: it holds data this broker "
                f"did not format (or its meta.properties was lost). Restore {d}/{META_PROPERTIES_FILE}, "
                f"or move the data away so that kbroker formats an empty directory.")
    cluster_id = None
    for d, meta in found.items():
        path = os.path.join(d, META_PROPERTIES_FILE)
        if meta.node_id != node_id:
            raise LogDirError(
                f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in {path}. "
                "If you moved your data, make sure your configured node id matches. If you intend to "
                "create a new node, you should remove all data in your data directories.")
        if cluster_id is None:
            cluster_id = meta.cluster_id
        elif meta.cluster_id != cluster_id:
            raise LogDirError(f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {meta.cluster_id}")
    return cluster_id


def missing_partition_dirs(log_dir: str, checkpointed: set[tuple[str, int]]) -> list[tuple[str, int]]:
    """Partitions listed in ``log_dir``'s recovery-point checkpoint whose directory is gone
    and not waiting for removal as ``<topic>-<partition>.<id>-delete``."""
    present = set()
    for name in os.listdir(log_dir):
        if name.endswith(DELETE_DIR_SUFFIX):
            try:
                present.add(parse_topic_partition_name(name))
            except ValueError:
                pass
        elif os.path.isdir(os.path.join(log_dir, name)):
            present.add(name)
    return sorted(tp for tp in checkpointed if tp not in present and log_dir_name(*tp) not in present)


def missing_partition_message(log_dir: str, missing: list[tuple[str, int]], checkpoint_file: str) -> str:
    names = ", ".join(log_dir_name(*tp) for tp in missing)
    return (f"Partition directories missing from log dir {log_dir}: {names} "
            f"(listed in {os.path.join(log_dir, checkpoint_file)}, so they existed). Their data is lost or "
            f"was moved: restore the directories, or, to accept the loss and start them empty, remove "
            f"their lines from {checkpoint_file} in {log_dir}.")


def _check_usable(d: str) -> None:
    if not os.path.exists(d):
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            raise LogDirError(f"Failed to create data directory {d}: {e.strerror or e}. "
                              "Create it, or fix log.dirs.") from None
    if not os.path.isdir(d) or not os.access(d, os.R_OK | os.X_OK):
        raise LogDirError(f"{d} is not a readable log directory. Fix log.dirs or the directory's permissions.")
    probe = os.path.join(d, _WRITE_PROBE)
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"x")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise LogDirError(f"Log dir {d} cannot be written: {e.strerror or e}. "
                          "Make it writable by this user, or remove it from log.dirs.") from None


def _read_meta(d: str) -> MetaProperties | None:
    try:
        return MetaProperties.read(d)
    except (OSError, ValueError) as e:
        raise LogDirError(f"Cannot read {os.path.join(d, META_PROPERTIES_FILE)}: {e}. "
                          "Restore it from a copy, or move the dir's data away.") from None


def _in_use(d: str) -> bool:
    return any(name not in _IGNORED_ENTRIES for name in os.listdir(d))
