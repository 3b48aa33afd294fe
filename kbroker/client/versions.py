"""Which version of each API a connection speaks: ApiVersions (KIP-35/KIP-511), sans I/O.

The version of an API is the highest one that the broker offers, the codec knows
(``wire.schema.REQUESTS``: Kafka 4.4's validVersions plus the older ones kbroker keeps) and
the caller's code was written for (``caps``, api key -> highest version; a caller moves a cap
up when its code reads and writes the newer layout).  The lowest usable version is the
higher of the broker's and the codec's minima; no version in between raises
``UnsupportedVersion``.

The exchange itself is :func:`negotiation`, a generator of (request, version) steps that
both connections drive (kbroker/client/exchange.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from kbroker.client.errors import KafkaError, UnsupportedVersion
from kbroker.client.exchange import Steps
from wire.error_codes import ErrorCode
from wire.messages import ApiVersionsRequest
from wire.schema import REQUESTS

__all__ = ["API_VERSIONS_KEY", "API_VERSIONS_VERSION", "VersionTable", "api_name", "negotiation"]

API_VERSIONS_KEY = 18
# v3 carries the client's software name and version (KIP-511); every broker since Kafka 2.4
# takes it, and an older one answers UNSUPPORTED_VERSION with its own range (retried below).
API_VERSIONS_VERSION = 3


def api_name(api_key: int) -> str:
    """``Metadata`` for 3; ``api key N`` for a key the codec does not know."""
    spec = REQUESTS.get(api_key)
    return spec.name.removesuffix("Request") if spec is not None else f"api key {api_key}"


class VersionTable:
    """The broker's version ranges (api key -> (min, max)), and the caller's caps."""

    def __init__(self, ranges: Mapping[int, tuple[int, int]], caps: Mapping[int, int] | None = None) -> None:
        self.ranges = dict(ranges)
        self.caps = dict(caps or {})

    def supports(self, api_key: int) -> bool:
        """The broker offers the API (at some version)."""
        return api_key in self.ranges

    def pick(self, api_key: int, cap: int | None = None) -> int:
        """The version to send ``api_key`` at; ``cap`` lowers the table's cap for one call
        (a request whose newer layout this call does not fill in)."""
        theirs = self.ranges.get(api_key)
        spec = REQUESTS.get(api_key)
        if theirs is None or spec is None:
            raise UnsupportedVersion(api_key, f"the broker does not support {api_name(api_key)}")
        codec_lo, codec_hi = spec.valid
        hi = min(theirs[1], codec_hi if codec_hi is not None else codec_lo, self.caps.get(api_key, theirs[1]))
        if cap is not None:
            hi = min(hi, cap)
        if hi < max(theirs[0], codec_lo):
            raise UnsupportedVersion(api_key, f"no common version of {api_name(api_key)}")
        return hi


def negotiation(software_name: str, software_version: str) -> Steps:
    """ApiVersions as a step generator; returns the broker's ranges (api key -> (min, max)).

    A broker that does not know our ApiVersions version answers UNSUPPORTED_VERSION in the
    v0 layout with its own range for ApiVersions (KIP-511); the request is sent once more at
    the highest version both know.  Any other error raises ``KafkaError``."""
    request = ApiVersionsRequest(client_software_name=software_name, client_software_version=software_version)
    resp = yield request, API_VERSIONS_VERSION
    if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
        theirs = {k.api_key: k.max_version for k in resp.api_keys}.get(API_VERSIONS_KEY, 0)
        resp = yield request, max(0, min(theirs, API_VERSIONS_VERSION))
    if resp.error_code:
        raise KafkaError(resp.error_code, what="ApiVersions")
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
