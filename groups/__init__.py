"""groups: the classic consumer-group coordinator (issue 5).  Pure logic, no I/O.

Theory of operation
-------------------
A port of Kafka's classic group coordinator (``GroupMetadataManager`` classic parts,
``ClassicGroup``, ``OffsetMetadataManager``).  One :class:`GroupCoordinator` owns every
group of the broker.  Each API method takes the *decoded* request and its API version and
returns a :class:`Result`:

* ``records``: ``[Record(key: bytes, value: bytes | None)]`` to append to
  ``__consumer_offsets`` (partition ``coordinator.partition_for(group_id)``) as Kafka
  writes them (``records.py``).  Append them **before** sending any response produced by
  the same call, including parked responses completed by it.
* ``response``: the answer (Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
  OffsetDelete, DescribeGroups, ListGroups, DeleteGroups), or
* ``pending``: JoinGroup and SyncGroup always return a :class:`Pending`.  It may already be
  ``done()`` (answer now with ``pending.response``); otherwise register
  ``pending.add_done_callback(fn)``: ``fn(response)`` runs synchronously inside whichever
  later coordinator call completes it (another member's request or ``poll``), and that
  call's ``Result.records`` must be appended before ``fn``'s response is sent.  In asyncio:
  resolve a future in ``fn``; the handler that made the call appends before awaiting.

Time and timers are injected: the coordinator reads ``clock.milliseconds()`` and keeps its
deadlines in ``timers.Timers`` (member sessions, KIP-394 pending member ids, join phase /
initial delay, sync phase, offsets expiry every ``offsets.retention.check.interval.ms``).
The adapter sleeps until ``next_deadline_ms()`` (re-checking after every call, since calls
move deadlines) and then calls ``poll()``, whose Result carries the records of whatever
fired (session expiry -> rebalance, an Empty group, offset tombstones).

Restart = replay: call ``begin_load()``, ``replay(key, value)`` for every record of the
owned ``__consumer_offsets`` partitions in offset order, then ``complete_load()``; group
requests answer COORDINATOR_LOAD_IN_PROGRESS in between.  Loaded groups with members are
Stable and their sessions start at load time (as in Kafka).

Rules
-----
* Kafka is the spec: method and state names follow its source (see each module).
* Membership state changes in place (Kafka writes classic-group records without replaying
  them); offset state changes only by replaying the records the call produced, so a live
  coordinator and one rebuilt from the log agree.
* The adapter owns: request headers/versions -> shape of FindCoordinator, v8 OffsetFetch
  is shaped here; appending records and failing the call if the append fails (Kafka maps
  append errors to COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR; state here has already
  moved, which the adapter can only repair by reloading the partition).
* No asyncio, sockets or threads here (import-linter enforces it).

Modules: ``coordinator`` (facade, per-version shaping, timers, replay), ``group_manager``
(Join/Sync/Heartbeat/Leave), ``classic_group`` / ``member`` / ``group_state`` (the state
machine), ``offsets``, ``records``, ``timers``, ``pending``, ``java_hash``, ``config``.
"""

from groups.classic_group import ClassicGroup
from groups.config import GroupConfig
from groups.coordinator import GroupCoordinator
from groups.group_state import GroupState
from groups.java_hash import java_string_hash, partition_for
from groups.pending import Pending
from groups.records import Record
from groups.result import Result

__all__ = [
    "GroupCoordinator", "GroupConfig", "GroupState", "ClassicGroup", "Pending", "Result",
    "Record", "partition_for", "java_string_hash",
]
