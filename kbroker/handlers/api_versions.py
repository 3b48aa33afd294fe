"""ApiVersions (key 18), v0-4: the versions this broker serves, built from the registry.

* v3+ requests carry ClientSoftwareName/Version; Kafka answers INVALID_REQUEST (with no
  api keys) when they don't match ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``, and
  librdkafka then retries with v0.
* An unknown (newer) version gets UNSUPPORTED_VERSION in the v0 layout listing every key
  (KIP-511); kbroker/server/connection.py answers it (kbroker/server/registry.py).
* The response header is always v0 (wire/headers.py).
* No features are advertised: advertising e.g. ``transaction.version`` would switch
  Java clients onto KIP-890 paths we do not serve.

Ports (kbroker/server/services.py): none (the registry and the request only).
"""

from __future__ import annotations

import re

from kbroker.server.registry import REGISTRY, api_version_entries
from kbroker.server.request_context import RequestContext
from wire.error_codes import ErrorCode
from wire.messages import ApiVersionsRequest, ApiVersionsResponse

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


@REGISTRY.register(18, 0, 4)
def handle_api_versions(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3 and not (
        _SOFTWARE.match(req.client_software_name or "")
        and _SOFTWARE.match(req.client_software_version or "")
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=api_version_entries(REGISTRY))
