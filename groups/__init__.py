"""groups: the classic consumer-group coordinator (issue 5).

Theory of operation: pure logic.  Each request handler takes the current group state
and an injected clock, and returns the records to persist in ``__consumer_offsets``
plus a response (or "pending" for JoinGroup/SyncGroup that wait on other members).
State is rebuilt by replaying those records, so recovery is replaying the log.
No asyncio, no sockets: timers and time come from the caller.
"""
