"""ACLs in ZooKeeper, cluster mode (Kafka's AclAuthorizer with its ZkAclStore and
ZkAclChangeStore; layout and encodings in kbroker/security/acl_store.py).

* Start-up (and a new session): every pattern znode under ``/kafka-acl/<Type>/`` and
  ``/kafka-acl-extended/prefixed/<Type>/`` is read and becomes the authorizer's table; the
  change paths are watched first, so nothing announced meanwhile is missed.
* A change made on this broker (CreateAcls / DeleteAcls) is applied to the table at once and
  then written per pattern as Kafka's ``updateResourceAcls`` does: read the znode with its
  version, add / remove this change's entries, write it back conditionally on the version
  (create when absent, delete when empty), retrying from the read on a version conflict, so
  two brokers changing the same pattern at once both count; then a sequential
  ``acl_changes_`` notification names the pattern.  The answer waits for all of it.  A
  ZooKeeper connection lost meanwhile is waited out and the step done again from its read
  (kbroker/runtime/zk_retry.py, for up to ``zookeeper.connection.timeout.ms``); a notification
  retried after a loss that hid its success is written twice (one more re-read).
* Every broker watches ``/kafka-acl-changes`` and ``/kafka-acl-extended-changes``: a
  notification newer than the last one seen makes it re-read that pattern's znode.  Old
  notifications are left to Kafka's own purge rules (not purged here).
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from cluster.coordination import BadVersionError, CoordinationError, NodeExistsError, NoNodeError
from kbroker.runtime.tasks import cancel_and_wait, task_name
from kbroker.runtime.zk_retry import deadline, until_connected
from kbroker.security.acl_store import (
    CHANGE_PREFIX,
    EXTENDED_CHANGES,
    LITERAL_CHANGES,
    LITERAL_ROOT,
    PREFIXED_ROOT,
    AclTable,
    change_notification,
    decode_acls,
    encode_acls,
    znode_path,
)
from kbroker.zk.config_entities import completion_of
from wire.acl import (
    LITERAL,
    PREFIXED,
    RESOURCE_TYPE_NAMES,
    RESOURCE_TYPES_BY_NAME,
    ResourcePattern,
)

if TYPE_CHECKING:
    from kbroker.security.authorizer import AclAuthorizer, Changes

log = logging.getLogger("kbroker.acls")
RETRY_S = 0.5


def _enum_to_type(name: str) -> int | None:
    """``TOPIC`` / ``TRANSACTIONAL_ID`` (Java enum names) or ``Topic`` -> the type code."""
    squashed = name.replace("_", "").lower()
    for code, type_name in RESOURCE_TYPE_NAMES.items():
        if type_name.lower() == squashed:
            return code
    return RESOURCE_TYPES_BY_NAME.get(name)


def decode_notification(path: str, data: bytes) -> ResourcePattern | None:
    try:
        if path.startswith(LITERAL_CHANGES + "/"):
            type_name, _, name = data.decode().partition(":")
            rtype = _enum_to_type(type_name)
            return ResourcePattern(rtype, name, LITERAL) if rtype is not None and name else None
        doc = json.loads(data)
        rtype = _enum_to_type(doc["resourceType"])
        pattern_type = PREFIXED if doc.get("patternType", "").upper() == "PREFIXED" else LITERAL
        return ResourcePattern(rtype, doc["name"], pattern_type) if rtype is not None else None
    except (ValueError, KeyError, UnicodeDecodeError):
        return None


class AclZkStore:
    """The authorizer's store in cluster mode, and the listener that keeps its table current."""

    def __init__(self, zk: Any, authorizer: AclAuthorizer) -> None:
        self.zk = zk
        self.authorizer = authorizer
        self._last = {LITERAL_CHANGES: -1, EXTENDED_CHANGES: -1}
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    # ------------------------------------------------------------ AclStore
    def load(self) -> AclTable:
        return {}   # the table comes from ZooKeeper in start()

    def store(self, table: AclTable, changes: Changes) -> Future[None]:
        async def write() -> None:
            by = deadline(self.zk)
            for pattern, (added, removed) in changes.items():
                await until_connected(lambda p=pattern, a=added, r=removed: self._update(p, a, r),
                                      by, f"the ACLs of {pattern}")
                path, data = change_notification(pattern)
                await until_connected(
                    lambda path=path, data=data: self.zk.create(path, data, sequential=True,
                                                                make_parents=True),
                    by, f"the ACL change of {pattern}")

        return completion_of(self._spawn(write()))

    def close(self) -> None:
        self._closed = True
        for t in list(self._tasks):
            t.cancel()

    async def aclose(self) -> None:
        """The cluster runtime stops (on the loop, before the session closes): no change
        notification is processed any more, and the writes and passes under way end."""
        self._closed = True
        for task in await cancel_and_wait(list(self._tasks)):
            log.warning("ACL task did not stop: %s", task_name(task))

    async def _update(self, pattern: ResourcePattern, added: set, removed: set) -> None:
        path = znode_path(pattern)
        while True:
            try:
                data, stat = await self.zk.get(path)
                current, version = decode_acls(data), stat.version
            except NoNodeError:
                current, version = frozenset(), None
            new = (current | added) - removed
            try:
                if version is None:
                    if new:
                        await self.zk.create(path, json.dumps(encode_acls(new)).encode(), make_parents=True)
                elif new:
                    await self.zk.set(path, json.dumps(encode_acls(new)).encode(), version)
                else:
                    await self.zk.delete(path, version)
                return
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue   # another broker changed it since the read: again from the read

    # ------------------------------------------------------------ reading
    async def start(self) -> None:
        """Watch the change paths, then read every ACL (start-up and each new session)."""
        while True:
            try:
                for root in (LITERAL_CHANGES, EXTENDED_CHANGES):
                    await self.zk.ensure_path(root)
                    children = await self.zk.children(root, watch=lambda _e, r=root: self._on_change(r))
                    self._last[root] = max([self._last[root], *(_seq(c) for c in children)])
                self.authorizer.replace_all(await self._read_all())
                log.info("ACLs loaded from ZooKeeper: %d resource pattern(s)", self.authorizer.pattern_count())
                return
            except CoordinationError as e:
                log.info("reading ACLs from ZooKeeper failed (%r); retrying", e)
                await asyncio.sleep(RETRY_S)

    async def _read_all(self) -> AclTable:
        table: AclTable = {}
        for root, pattern_type in ((LITERAL_ROOT, LITERAL), (PREFIXED_ROOT, PREFIXED)):
            try:
                type_names = await self.zk.children(root)
            except NoNodeError:
                continue
            for type_name in type_names:
                rtype = RESOURCE_TYPES_BY_NAME.get(type_name)
                if rtype is None:
                    continue
                try:
                    names = await self.zk.children(f"{root}/{type_name}")
                except NoNodeError:
                    continue
                for name in names:
                    pattern = ResourcePattern(rtype, name, pattern_type)
                    entries = await self._read(pattern)
                    if entries:
                        table[pattern] = entries
        return table

    async def _read(self, pattern: ResourcePattern) -> frozenset:
        try:
            data, _ = await self.zk.get(znode_path(pattern))
        except NoNodeError:
            return frozenset()
        return decode_acls(data)

    def _on_change(self, root: str) -> None:
        # none once closed: closing the session fires the watches, and a pass would retry
        # its reads of the closed session for ever
        if not self._closed:
            self._spawn(self._process(root))

    async def _process(self, root: str) -> None:
        async with self._lock:
            while True:
                try:
                    children = await self.zk.children(root, watch=lambda _e: self._on_change(root))
                    for child in sorted(children, key=_seq):
                        if _seq(child) <= self._last[root]:
                            continue
                        try:
                            data, _ = await self.zk.get(f"{root}/{child}")
                        except NoNodeError:
                            data = b""
                        pattern = decode_notification(f"{root}/{child}", data)
                        if pattern is not None:
                            self.authorizer.replace_pattern(pattern, await self._read(pattern))
                            log.info("ACLs of %s now re-read (notification %s)", znode_path(pattern), child)
                        self._last[root] = _seq(child)
                    return
                except CoordinationError as e:
                    log.info("reading ACL change notifications failed (%r); retrying", e)
                    await asyncio.sleep(RETRY_S)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _seq(child: str) -> int:
    try:
        return int(child[len(CHANGE_PREFIX):])
    except ValueError:
        return -1


async def start_in_cluster(authorizer: Any, zk: Any) -> None:
    """Cluster mode with an authorizer (``authorizer`` None: none configured): its ACLs
    move to ZooKeeper (called by the cluster runtime once the session is up; again on a
    new session)."""
    if authorizer is None:
        return
    store = authorizer.store
    if not isinstance(store, AclZkStore):
        store.close()
        store = authorizer.store = AclZkStore(zk, authorizer)
    await store.start()
