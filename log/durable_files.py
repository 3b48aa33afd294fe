"""Durable file operations shared by every small state file of the storage engine.

Two things, each Kafka's (``Utils.flushDir`` and ``Utils.atomicMoveWithFallback``):

* ``fsync_path(path)``: fsync a file or a directory by its path.  A directory's fsync makes its
  entries (creations, renames, deletions) durable; Linux needs it after a rename for the new
  name to survive a crash.
* ``syncfs(path)``: Linux's syncfs(2) on the file system holding ``path``: every dirty page
  and metadata change of that file system is on the disk when it returns (durable_batch.py
  uses it for thousands of small files at once); ``syncfs_file_systems(dirs)`` calls it once
  for each file system among ``dirs``.
* ``replace_file(path, data, sync)``: write ``data`` to ``<path>.tmp``, fsync it, rename it over
  ``path``, fsync the directory.  Readers see the old file or the new one, never a part; a crash
  leaves at most a stray ``.tmp`` (ignored by every reader and overwritten by the next write).
  ``sync=False`` keeps the rename (atomic against readers) but skips both fsyncs: for callers on
  the event loop whose durability comes later from a scheduled durable write.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable

__all__ = ["TMP_SUFFIX", "fsync_path", "replace_file", "syncfs", "syncfs_file_systems"]

TMP_SUFFIX = ".tmp"


def fsync_path(path: str) -> None:
    """fsync the file or directory at ``path`` (opened read-only: fsync needs no write access)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_LIBC = ctypes.CDLL(None, use_errno=True)
_SYNCFS = getattr(_LIBC, "syncfs", None)   # glibc >= 2.14; None elsewhere


def syncfs(path: str) -> None:
    """syncfs(2) the file system holding ``path``; OSError if it fails (ENOSYS: no syncfs
    here).  Since Linux 5.8 it reports writeback errors of that file system."""
    if _SYNCFS is None:
        raise OSError(errno.ENOSYS, "syncfs is not available")
    fd = os.open(path, os.O_RDONLY)
    try:
        if _SYNCFS(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
    finally:
        os.close(fd)


def syncfs_file_systems(dirs: Iterable[str]) -> int:
    """``syncfs`` once per file system holding one of ``dirs`` (a directory that no longer
    exists is skipped: nothing in it is left to sync); OSError from the first that fails.
    Returns the number of syncfs calls."""
    file_systems: dict[int, str] = {}
    for d in dirs:
        try:
            file_systems.setdefault(os.stat(d).st_dev, d)
        except FileNotFoundError:
            pass
    for d in file_systems.values():
        syncfs(d)
    return len(file_systems)


def replace_file(path: str, data: bytes, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; durable (file and rename) when ``sync``."""
    tmp = path + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:  # os.write may write less than asked (signals, large buffers)
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        fsync_path(os.path.dirname(os.path.abspath(path)))
