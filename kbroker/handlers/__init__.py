"""handlers: one module per API family; importing this package registers them all in
kbroker.server.registry.REGISTRY (from which ApiVersions answers).

Theory of operation: a handler is a function of a ``RequestContext`` and a decoded request
that returns the response, an awaitable of it, ``NO_RESPONSE`` (acks=0) or
``CloseConnection``.  It reaches the broker only through ``ctx.services``, the narrow
ports of kbroker/server/services.py: never the partition store, the server or ZooKeeper
(pyproject.toml, "Handlers see ports"), so a handler holds no single-node-vs-cluster
branch; each mode is an implementation of the ports.  Per-API policy that is not one API's
own lives here too: authorization (``authorize`` and the ``*_authz`` modules, which wrap
the admin, group and metadata APIs as Kafka's KafkaApis checks them), the answers of a
refused request (``authz_responses``), DescribeConfigs entries (``config_describe``), the
Fetch side of KIP-227 sessions (``fetch_session_reads``), and holding cluster-describing
requests until the metadata is known (``metadata_readiness``).
"""

from kbroker.handlers import (  # noqa: F401
    acls_admin,
    api_versions,
    client_quotas,
    cluster_admin,
    configs_admin,
    describe_producers,
    describe_topic_partitions,
    elect_leaders,
    fetch,
    groups,
    init_producer_id,
    inter_broker,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    partitions_admin,
    produce,
    reassignments,
    sasl,
    scram_admin,
    topics_admin,
    transactions,
    txn_offset_commit,
    write_txn_markers,
)

# Last, once every handler is registered: the authorization checks of the admin, transaction
# and inter-broker APIs wrap their handlers (kbroker/handlers/admin_authz.py; a no-op per request
# without an authorizer).
# isort: split
from kbroker.handlers.admin_authz import install as _install_authorization  # noqa: E402

_install_authorization()
