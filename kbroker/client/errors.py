"""What a protocol client raises.

Two families, so that callers can keep catching what they caught before:

* transport failures are ``OSError`` subclasses (``ConnectionClosed``, ``CorrelationMismatch``
  and ``SaslAuthenticationFailed`` are ``ConnectionError``; ``RequestTimeout`` is
  ``TimeoutError``): the connection is unusable, a caller retries on a new one;
* a Kafka error code the client itself had to act on is a ``KafkaError`` (the failed
  ApiVersions exchange, no common version of an API).  Error codes inside an answer are
  the caller's business: the client hands the answer back as it came.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode

__all__ = [
    "ClientError", "KafkaError", "UnsupportedVersion", "ConnectionClosed", "CorrelationMismatch",
    "RequestTimeout", "SaslAuthenticationFailed", "error_name",
]


def error_name(code: int) -> str:
    """Kafka's name for a wire error code (``Errors`` in Kafka's Java), or ``error code N``
    for a code newer than the codec's table."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


class ClientError(Exception):
    """Base class of the client's own (non-transport) errors."""


class KafkaError(ClientError):
    """A Kafka error code.  ``str``: ``[what: ]NAME[: message]``."""

    def __init__(self, code: int, message: str | None = None, what: str = "") -> None:
        self.code = code
        self.name = error_name(code)
        self.message = message
        self.what = what
        super().__init__(self._text())

    def _text(self) -> str:
        text = f"{self.what}: {self.name}" if self.what else self.name
        return f"{text}: {self.message}" if self.message else text


class UnsupportedVersion(KafkaError):
    """The broker does not offer an API, or no version of it is known to both sides (and
    under the caller's cap).  ``message`` says which, in the tools' words."""

    def __init__(self, api_key: int, message: str) -> None:
        self.api_key = api_key
        super().__init__(ErrorCode.UNSUPPORTED_VERSION, message)


class ConnectionClosed(ConnectionError):
    """The broker closed the connection before a whole answer arrived (Kafka closes a
    connection whose request it cannot parse).  ``unread``: bytes of an incomplete frame
    that had arrived, not counting its 4-byte size prefix."""

    def __init__(self, unread: int = 0, message: str | None = None) -> None:
        self.unread = unread
        super().__init__(message or f"the broker closed the connection ({unread} bytes of an answer unread)")


class CorrelationMismatch(ConnectionError):
    """An answer carried another correlation id than the request it should answer: the
    stream is out of step, so the connection is dropped."""

    def __init__(self, got: int, expected: int) -> None:
        self.got, self.expected = got, expected
        super().__init__(f"correlation id {got} answered for {expected}")


class RequestTimeout(TimeoutError):
    """No (whole) answer within the request's timeout."""


class SaslAuthenticationFailed(ConnectionError):
    """The SASL handshake or authentication was refused; the broker closes such a
    connection, so it is a transport failure to the caller (retry paths handle it)."""
