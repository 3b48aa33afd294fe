"""SaslHandshake (17) v0-1 and SaslAuthenticate (36) v0-2 outside authentication.

While a SASL listener's connection authenticates, kbroker/server/sasl_authenticator.py answers these
itself.  What reaches the registry is what Kafka's KafkaApis gets: the request on a connection
that needs no SASL (PLAINTEXT/SSL) or is already authenticated without re-authentication:
ILLEGAL_SASL_STATE.

Ports (kbroker/server/services.py): none.
"""

from __future__ import annotations

from kbroker.server.registry import REGISTRY
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)


@REGISTRY.register(17, 0, 1)
def handle_sasl_handshake(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)


@REGISTRY.register(36, 0, 2)
def handle_sasl_authenticate(ctx: RequestContext, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                    error_message="SaslAuthenticate request received after successful authentication")
