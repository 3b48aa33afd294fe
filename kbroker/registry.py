"""The API registry: each handler registers the version range it implements.

ApiVersions is built from this registry (kbroker/handlers/api_versions.py), so the
broker never advertises an API or version it cannot answer.  A handler takes the
request context and the decoded request and returns the response message, an
awaitable of it (a parked Fetch), or ``NO_RESPONSE`` (acks=0 Produce).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbroker.request_context import RequestContext

NO_RESPONSE = object()  # a handler result meaning "send nothing back" (acks=0 Produce)

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

    def get(self, api_key: int) -> ApiEntry | None:
        return self._entries.get(api_key)

    def entries(self) -> list[ApiEntry]:
        return [self._entries[k] for k in sorted(self._entries)]


REGISTRY = Registry()
