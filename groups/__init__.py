"""groups: the classic consumer-group coordinator (issue 5).  Pure logic, no I/O.

Theory of operation
-------------------
A port of Kafka's classic group coordinator (``GroupMetadataManager`` classic parts,
``ClassicGroup``, ``OffsetMetadataManager``).  One :class:`GroupCoordinator` owns every
group of the broker.  Each API method takes the *decoded* request and its API version and
returns a :class:`Result` (``result.py``):

* ``writes``: ``[Write(group_id, records, on_appended)]``, each to append as one batch to
  ``__consumer_offsets`` partition ``coordinator.partition_for(group_id)`` (records as
  Kafka writes them, ``records.py``), then ``result.appended(errors)`` with each append's
  outcome (``ErrorCode.NONE`` or the log's error).  That runs the continuations (store,
  then propagate: offsets become visible, a SyncGroup assignment reaches the members, or
  the mapped error is answered, ``append_errors.py``) and releases the parked answers the
  call completed; it returns a follow-up Result (e.g. the rebalance after a failed
  SyncGroup store) to treat the same way.  A Result without writes is settled already.
* ``response``: the answer (Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
  OffsetDelete, DescribeGroups, ListGroups, DeleteGroups), final once settled, or
* ``pending``: JoinGroup and SyncGroup always return a :class:`Pending`.  It may already be
  ``done()`` once settled (answer with ``pending.response``); otherwise register
  ``pending.add_done_callback(fn)``: ``fn(response)`` runs when a later call (another
  member's request or ``poll``) that completed it has had its writes appended.  In
  asyncio: resolve a future in ``fn``.

Time and timers are injected: the coordinator reads ``clock.milliseconds()`` and keeps its
deadlines in ``timers.Timers`` (member sessions, KIP-394 pending member ids, join phase /
initial delay, sync phase, offsets expiry every ``offsets.retention.check.interval.ms``).
The adapter sleeps until ``next_deadline_ms()`` (re-checking after every call, since calls
move deadlines) and then calls ``poll()``, whose Result carries the records of whatever
fired (session expiry -> rebalance, an Empty group, offset tombstones).

Transactions: ``txn_offset_commit`` writes a transactional batch (``Write.producer_id``);
its offsets stay pending until the adapter reports the transaction's marker in that
``__consumer_offsets`` partition with ``complete_txn`` (``txn_offsets``).

Restart = replay: call ``begin_load()``, ``replay(key, value, offset, producer_id)`` for
every record of the owned ``__consumer_offsets`` partitions in offset order and
``replay_end_txn`` for every control record, then ``complete_load()``; group
requests answer COORDINATOR_LOAD_IN_PROGRESS in between.  Loaded groups with members are
Stable and their sessions start at load time (as in Kafka).

Rules
-----
* Kafka is the spec: method and state names follow its source (see each module).
* Membership state changes in place (Kafka writes classic-group records without replaying
  them); offset state changes only by replaying the records the call produced, so a live
  coordinator and one rebuilt from the log agree.
* Store, then propagate: no member or client sees a state whose record is not appended.
  Deletions (DeleteGroups, OffsetDelete) take effect at once and are put back, with the
  mapped error, if their tombstones are not stored.  Kafka's exceptions are kept: moves
  whose failed store Kafka only logs (a new Empty group, a member leaving, offset expiry)
  change state first, as there.
* The adapter owns: request headers/versions -> shape of FindCoordinator (v8 OffsetFetch
  is shaped here); appending the writes and reporting their outcomes, in order per
  partition; the ``__consumer_offsets`` partition count (``offsets_topic_partitions``).
* No asyncio, sockets or threads here (import-linter enforces it).

Modules: ``coordinator`` (facade, per-version shaping, timers, replay), ``group_manager``
(Join/Sync/Heartbeat/Leave), ``classic_group`` / ``member`` / ``group_state`` (the state
machine), ``offsets``, ``txn_offsets``, ``records``, ``result`` (Result, Write), ``append_errors``,
``timers``, ``pending``, ``config`` (the group -> partition formula: wire/java_hash.py).
"""

from groups.classic_group import ClassicGroup
from groups.config import GroupConfig
from groups.coordinator import GroupCoordinator
from groups.group_state import GroupState
from groups.pending import Pending
from groups.records import Record
from groups.result import Result, Write
from wire.java_hash import java_string_hash, partition_for

__all__ = [
    "GroupCoordinator", "GroupConfig", "GroupState", "ClassicGroup", "Pending", "Result",
    "Record", "Write", "partition_for", "java_string_hash",
]
