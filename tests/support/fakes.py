"""Fakes of the ports handlers reach the broker through (kbroker/server/services.py).

``services(**ports)`` builds a ``Services`` whose every port is a null object or an empty
stand-in unless the test names it: a handler test passes only the ports its handler uses,
and a handler that reaches for another one fails loudly (``Missing``) instead of the test
growing a ``SimpleNamespace`` of the whole broker.
"""

from __future__ import annotations

from typing import Any

from kbroker.configs.config import BrokerConfig
from kbroker.replica.local_replicas import LocalReplicas
from kbroker.security.authorizer import ALLOW_ALL
from kbroker.server.request_context import RequestContext
from kbroker.server.services import Services


class Missing:
    """A port the test did not provide: any use of it is a test bug, named."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise AssertionError(f"the handler used services.{self._name}.{attr}, which this test does not fake")


def services(**ports: Any) -> Services:
    fields: dict[str, Any] = {
        "node_id": 1, "cluster_id": "test-cluster", "replicas": LocalReplicas(), "authorizer": ALLOW_ALL,
    }
    if "catalog" in ports and "replicas" not in ports:   # a single node leads what the catalog holds
        fields["replicas"] = LocalReplicas(ports["catalog"].partition)
    for name in Services.__dataclass_fields__:
        fields.setdefault(name, Missing(name))
    fields.update(ports)
    return Services(**fields)


def context(api_key: int, api_version: int, svc: Services, *, principal: str = "User:ANONYMOUS",
            peer: str = "127.0.0.1:5000", listener_name: str = "PLAINTEXT") -> RequestContext:
    """A request's context over ``svc``."""
    return RequestContext(api_key, api_version, 1, "test-client", svc, peer, principal, listener_name)


class FixedConfig:
    """A ``ConfigView`` of one static configuration (no dynamic broker configs): what a
    handler test gives for ``services(config=...)``.  Advertises each listener as configured
    (port 0 stays 0: nothing is bound)."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = self.static_config = config

    def advertised_address(self, listener_name: str | None = None) -> tuple[str, int]:
        listener = next((lst for lst in self.config.listeners if lst.name == listener_name), self.config.listeners[0])
        return listener.host, listener.port


def fixed_config(props: dict[str, str]) -> FixedConfig:
    return FixedConfig(BrokerConfig(props))
