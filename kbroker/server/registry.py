"""The API registry: each handler registers the version range it implements.

ApiVersions is built from this registry (kbroker/handlers/api_versions.py), so the
broker never advertises an API or version it cannot answer.  A handler takes the
request context and the decoded request and returns the response message, an
awaitable of it (a parked Fetch), ``NO_RESPONSE`` (acks=0 Produce), or a
``CloseConnection`` (an acks=0 Produce that failed).

Test seam: ``KBROKER_TEST_FAIL_API`` (a comma-separated list of API keys, read once when
a broker is built, kbroker/app/broker.py) makes the handlers of those APIs raise, so that the
compat tests can drive the "handler crashed" path (UNKNOWN_SERVER_ERROR in the API's
layout, connection kept) through a real broker process and stock clients.  Nothing but
tests sets it; unset, the registry is untouched and costs nothing per request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbroker.server.request_context import RequestContext

NO_RESPONSE = object()  # a handler result meaning "send nothing back" (acks=0 Produce)


@dataclass(frozen=True, slots=True)
class CloseConnection:
    """A handler result meaning "send nothing back; close the connection once the responses
    of the requests before this one have left, and read nothing after it" (Kafka's
    ``requestChannel.closeConnection``: an acks=0 Produce that failed has no response to
    carry the error, so the client learns of it from the close and refreshes its metadata)."""

    why: str   # logged with the close

Handler = Callable[["RequestContext", Any], Any]


@dataclass(frozen=True, slots=True)
class ApiEntry:
    api_key: int
    min_version: int      # advertised minimum (may be below what is implemented: Produce 0)
    max_version: int
    handler: Handler


class Registry:
    def __init__(self) -> None:
        self._entries: dict[int, ApiEntry] = {}

    def register(self, api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
        if min_version > max_version:
            raise ValueError("min version above max version")  # aiokafka asserts on this

        def deco(fn: Handler) -> Handler:
            if api_key in self._entries:
                raise ValueError(f"api key {api_key} registered twice")
            self._entries[api_key] = ApiEntry(api_key, min_version, max_version, fn)
            return fn

        return deco

    def replace(self, entry: ApiEntry) -> None:
        """Swap a registered handler for a wrapper of it (kbroker/handlers/admin_authz.py)."""
        if entry.api_key not in self._entries:
            raise ValueError(f"api key {entry.api_key} is not registered")
        self._entries[entry.api_key] = entry

    def get(self, api_key: int) -> ApiEntry | None:
        return self._entries.get(api_key)

    def entries(self) -> list[ApiEntry]:
        return [self._entries[k] for k in sorted(self._entries)]

    def fail_for_tests(self, api_keys: str) -> list[int]:
        """The test seam (see the module docstring): the handlers of ``api_keys`` ("0,32")
        raise ``InjectedHandlerFailure``; returns the keys it applied to."""
        keys = [int(k) for k in api_keys.replace(" ", "").split(",") if k]
        for key in keys:
            entry = self._entries[key]

            def fail(ctx: RequestContext, request: Any, key: int = key) -> Any:
                raise InjectedHandlerFailure(f"KBROKER_TEST_FAIL_API: api key {key}")

            self._entries[key] = ApiEntry(key, entry.min_version, entry.max_version, fail)
        return keys


def unsupported_version_response(registry: Registry) -> Any:
    """KIP-511: the answer to an ApiVersions of a version newer than served, error 35 in the v0
    layout listing every key the registry serves (the connection sends it before decoding)."""
    from wire.error_codes import ErrorCode
    from wire.messages import ApiVersionsResponse

    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_version_entries(registry))


def api_version_entries(registry: Registry) -> list[Any]:
    """ApiVersions' list: every key with the version range its handler serves."""
    from wire.messages import ApiVersionsResponse

    return [ApiVersionsResponse.ApiVersion(api_key=e.api_key, min_version=e.min_version, max_version=e.max_version)
            for e in registry.entries()]


class InjectedHandlerFailure(RuntimeError):
    """Raised by a handler that KBROKER_TEST_FAIL_API made fail."""


REGISTRY = Registry()
# The controller-to-broker APIs (kbroker/handlers/inter_broker.py): served in cluster mode
# only, never listed by ApiVersions.
INTER_BROKER = Registry()
