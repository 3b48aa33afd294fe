"""kbroker.client: the one Kafka protocol client of the project (tools, console, inter-broker
links, benches and tests all use it).

Theory of operation
-------------------
* A connection is one socket to one broker, in two flavours with the same rules:
  :class:`Connection` (blocking) and :class:`AsyncConnection` (asyncio streams).  Bytes are
  ``wire``'s: requests are written by ``wire.headers.encode_request`` (size prefix, header at
  the API's version, body) and answers cut out of the stream by ``wire.framing.FrameDecoder``
  and read by ``wire.headers.decode_response``.  Nothing else is imported from the project:
  a client of the broker knows only the protocol (an import-linter contract in
  pyproject.toml keeps it so).
* Opening a connection: TCP (optionally TLS with an ``ssl.SSLContext``), then ApiVersions
  (``negotiate``, on by default), then SASL PLAIN or SCRAM-SHA-256/512 when credentials are
  given.  The ApiVersions and SASL rounds are sans-I/O step generators (``versions.py``,
  ``sasl.py``) that both flavours drive.
* Versions: ``call(request)`` sends at the highest version the broker offers, the codec
  knows and the caller's ``caps`` allow (api key -> highest version the caller's code was
  written for); ``call(request, version)`` sends at that version.  No common version raises
  ``UnsupportedVersion``.
* One request is in flight at a time per connection (async callers queue on a lock);
  correlation ids count up per connection and every answer's id is checked.  A Produce with
  acks=0 gets no answer (Kafka's rule) and ``call`` returns None.
* Failures: transport problems are OSErrors (``ConnectionClosed``, ``CorrelationMismatch``,
  ``SaslAuthenticationFailed``) or ``RequestTimeout`` (a TimeoutError); they close the
  connection.  Error codes inside an answer are left to the caller; ``error_name(code)``
  names them as Kafka does.  Retrying and reconnecting are the owner's policy.
* Tests that need pipelined requests, chosen correlation ids or malformed bytes use the
  blocking connection's ``send`` / ``send_raw`` / ``receive`` / ``read_frame``.
"""

from kbroker.client.aio import AsyncConnection
from kbroker.client.errors import (
    ClientError,
    ConnectionClosed,
    CorrelationMismatch,
    KafkaError,
    RequestTimeout,
    SaslAuthenticationFailed,
    UnsupportedVersion,
    error_name,
)
from kbroker.client.exchange import DEFAULT_TIMEOUT_S, response_class
from kbroker.client.sasl import SaslCredentials
from kbroker.client.sync import Connection
from kbroker.client.versions import VersionTable

__all__ = [
    "Connection", "AsyncConnection", "SaslCredentials", "VersionTable", "response_class",
    "DEFAULT_TIMEOUT_S", "ClientError", "KafkaError", "UnsupportedVersion", "ConnectionClosed",
    "CorrelationMismatch", "RequestTimeout", "SaslAuthenticationFailed", "error_name",
]
