"""server: the network side of one broker: connections, the API registry, the request
context and the ports handlers see.

Theory of operation: ``connection.KafkaConnection`` (an asyncio protocol per client
connection) reads size-prefixed frames, decodes the request header (wire/), looks the API up
in ``registry`` and calls its handler with a ``request_context.RequestContext``.  A
connection's requests take effect in the order they were sent, and their answers go out in
that order; a handler that raises is answered with UNKNOWN_SERVER_ERROR in its API's
layout (``error_responses``), a malformed frame closes only its own connection.  SASL runs
per connection (``sasl_authenticator``); fetch responses that carry file slices go out with
``sendfile`` (``raw_send``).  ``server_state.ServerState`` is what connections share (the
registries, the open connections).

``services.Services`` is the frozen set of narrow ports (``Protocol``s) on every request
context: handlers reach the broker only through it.  Implementations live in lower rooms
(replica/, coordinators/, zk/, metadata/, security/) and satisfy the protocols
structurally; none of them imports ``services``.
"""
