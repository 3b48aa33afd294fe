"""What a handler knows about the request it answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbroker.server.services import Services


@dataclass(slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    # The ports a handler reaches the broker through (kbroker/server/services.py), and nothing else.
    services: Services
    peer: str = ""
    # Who sent it (Kafka's KafkaPrincipal as "<type>:<name>"): "User:ANONYMOUS" on a
    # PLAINTEXT listener; the SASL user or the TLS certificate's mapped subject once a
    # listener authenticates (set by the connection).  The authorizer reads it.
    principal: str = "User:ANONYMOUS"
    # The listener the request came in on (its name in ``listeners``, e.g. "PLAINTEXT").
    listener_name: str = "PLAINTEXT"
    # Fetch only (set by the connection): a future done once the connection has read a
    # request after this one; a parked Fetch answers then (kbroker/handlers/fetch.py).
    request_after: Callable[[], Any] | None = None
    # Order of effects (kbroker/server/connection.py): a handler that answers later (an awaitable)
    # holds the connection's later requests until it completes, unless it says with
    # ``took_effect()`` that everything it changes is changed and only its answer waits.
    effected: bool = False
    on_effect: Callable[[], None] | None = None   # set by the connection while it holds

    def took_effect(self) -> None:
        """Every effect of this request has happened (appended, committed, changed); only
        its answer is still to come (an acks=all Produce waiting for the ISR, a parked
        Fetch): the connection's later requests may go ahead.  Idempotent."""
        if not self.effected:
            self.effected = True
            release = self.on_effect
            if release is not None:
                self.on_effect = None
                release()
