"""ApiVersions (key 18), v0-4: the versions this broker serves, built from the registry.

* v3+ requests carry ClientSoftwareName/Version; Kafka answers INVALID_REQUEST (with no
  api keys) when they don't match ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``, and
  librdkafka then retries with v0.
* An unknown (newer) version gets UNSUPPORTED_VERSION in the v0 layout listing every key
  (KIP-511); kbroker/server/connection.py answers it (kbroker/server/registry.py).
* The response header is always v0 (wire/headers.py).
* Features (v3+): ``group.version`` only, supported 0-1 and finalized at 1 while
  ``group.coordinator.rebalance.protocols`` includes ``consumer`` (KIP-848, Kafka's
  GroupVersion 1); then ConsumerGroupHeartbeat and ConsumerGroupDescribe are listed,
  otherwise they are not (as Kafka leaves them out when group.version is 0).  Nothing else
  is advertised: e.g. ``transaction.version`` would switch Java clients onto KIP-890 paths
  this broker does not serve.

Ports (kbroker/server/services.py): ``config`` (the rebalance protocols).
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
    keys = api_version_entries(REGISTRY)
    consumer_protocol = consumer_protocol_enabled(ctx)
    if not consumer_protocol:
        keys = [k for k in keys if k.api_key not in CONSUMER_PROTOCOL_APIS]
    resp = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=keys)
    if ctx.api_version >= 3:
        resp.supported_features = [ApiVersionsResponse.SupportedFeatureKey(
            name="group.version", min_version=0, max_version=1)]
        resp.finalized_features_epoch = 0
        resp.finalized_features = [ApiVersionsResponse.FinalizedFeatureKey(
            name="group.version", max_version_level=1, min_version_level=1)] if consumer_protocol else []
    return resp


CONSUMER_PROTOCOL_APIS = (68, 69)   # ConsumerGroupHeartbeat, ConsumerGroupDescribe


def consumer_protocol_enabled(ctx: RequestContext) -> bool:
    """Kafka's ``isConsumerGroupProtocolEnabled``: ``consumer`` is one of the rebalance
    protocols (and then group.version is 1)."""
    return "consumer" in ctx.services.config.config["group.coordinator.rebalance.protocols"]
