"""The exception a consumer-group call raises to answer with one of Kafka's error codes."""

from __future__ import annotations

from wire.error_codes import ErrorCode

__all__ = ["GroupApiError"]


class GroupApiError(Exception):
    """Kafka's ApiException: the call answers ``code`` with ``message`` and writes nothing."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
