"""groups.consumer: Kafka 4's consumer group protocol (KIP-848).  Pure logic, no I/O.

Theory of operation
-------------------
A second group type beside the classic one, in the same coordinator (Kafka's
``GroupMetadataManager`` holds both): ``groups.coordinator.GroupCoordinator`` owns a
:class:`~groups.consumer.heartbeat.ConsumerGroupHeartbeats`, and a group id names a classic
group or a consumer group, never both.

* The coordinator computes assignments itself.  Each member heartbeats (API 68) with its
  subscription (topic names or a regex) and the partitions it owns; the group epoch moves
  when the membership, a subscription or the subscribed topics' metadata change; the
  assignor (``assignors.py``: ``uniform``, ``range``) then computes the *target* assignment
  at that epoch, and each member is reconciled towards its target one heartbeat at a time
  (``reconcile.py``): partitions to give up are revoked first, new ones given only when no
  other member owns them, so a partition is never owned twice and a rebalance never stops
  the whole group.
* Everything the coordinator knows is in ``__consumer_offsets`` records (``records.py``,
  Kafka's layout, types 3-8 and 16), applied to memory by the same code that replays them
  at load, and answers leave only after the records are appended (store, then propagate).
* Offsets are shared with classic groups (``groups/offsets.py``); a commit from a member of a
  consumer group is checked against its member epoch and the epoch each partition was
  assigned at (``commits.py``).
* Time is the injected clock; timers (session, rebalance) are the coordinator's ``Timers``.

Modules: ``member`` (the member value), ``group`` (the group and its derived views),
``records``, ``topics`` (the metadata image and its hash), ``assignors`` (server-side
assignors), ``reconcile``, ``heartbeat`` (API 68), ``describe`` (API 69, ListGroups entries),
``commits`` (OffsetCommit/OffsetFetch rules), ``errors``.
"""
