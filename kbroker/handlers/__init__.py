"""Request handlers, one module per API family; importing this package registers them all
in kbroker.registry.REGISTRY (from which ApiVersions answers)."""

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
# and inter-broker APIs wrap their handlers (kbroker/admin_authz.py; a no-op per request
# without an authorizer).
# isort: split
from kbroker.admin_authz import install as _install_authorization  # noqa: E402

_install_authorization()
