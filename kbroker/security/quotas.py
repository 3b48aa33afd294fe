"""Client quotas as Kafka's ClientQuotaManager / ClientRequestQuotaManager enforce them.

Quota configs (per entity, Kafka's names): ``producer_byte_rate`` and ``consumer_byte_rate``
(bytes/s), ``request_percentage`` (% of one request-handling thread per second; here the
event loop's time in the handler).  Entities: a user, a client id, or a user + client id,
each name possibly ``<default>`` (stored as the name ``<default>``; None on the wire).

Which quota applies to a request from (user, client id) is Kafka's DefaultQuotaCallback order,
the first entity that defines the quota type:
  users/<user>/clients/<client>, users/<user>/clients/<default>, users/<user>,
  users/<default>/clients/<client>, users/<default>/clients/<default>, users/<default>,
  clients/<client>, clients/<default>.
The usage is tracked per the *matched* level (Kafka's metric tags): a quota on a user counts
all its client ids together, one on a client id (or ``<default>`` client) each client id apart.

Usage is a Kafka ``Rate`` over ``quota.window.num`` (11) samples of
``quota.window.size.seconds`` (1 s): the sum of the live samples divided by the time since the
oldest one started, never less than (samples - 1) windows.  When a recorded value takes the
rate over the bound the request is throttled for ``(rate - bound) / bound * window`` ms
(ClientQuotaManager.throttleTime; a request_percentage throttle is capped at one window, as
ClientRequestQuotaManager bounds it); the response carries it in ``throttle_time_ms`` and the
connection stops reading for that long after sending it (KIP-219; kbroker/server/connection.py).

Storage: single node, ``kbroker-client-quotas.json`` in the first log dir, keyed by Kafka's
entity paths (``users/alice``, ``clients/c1``, ``users/alice/clients/c1``, ``users/<default>``)
with string values as in ZooKeeper's ``/config/<entity path>`` documents.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from kbroker.configs.json_file import JsonFileWriter, read_json

FILE_NAME = "kbroker-client-quotas.json"
DEFAULT = "<default>"
PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
QUOTA_KEYS = (PRODUCE, FETCH, REQUEST, "controller_mutation_rate")
USER, CLIENT_ID, IP = "user", "client-id", "ip"

Entity = tuple[str | None, str | None]   # (user, client id); None = not part of the entity


def entity_path(entity: Entity) -> str:
    user, client = entity
    parts = []
    if user is not None:
        parts.append(f"users/{user}")
    if client is not None:
        parts.append(f"clients/{client}")
    return "/".join(parts)


def parse_entity_path(path: str) -> Entity | None:
    bits = path.split("/")
    if len(bits) == 2 and bits[0] in ("users", "clients"):
        return (bits[1], None) if bits[0] == "users" else (None, bits[1])
    if len(bits) == 4 and bits[0] == "users" and bits[2] == "clients":
        return bits[1], bits[3]
    return None


class Rate:
    """Kafka's Rate over a SampledStat: ``samples`` windows of ``window_ms``."""

    __slots__ = ("samples", "window_ms", "_starts", "_values")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._starts: list[float] = []   # start time (ms) of each live sample, oldest first
        self._values: list[float] = []

    def record(self, value: float, now_ms: float) -> None:
        if not self._starts or now_ms >= self._starts[-1] + self.window_ms:
            self._starts.append(now_ms)
            self._values.append(0.0)
        self._values[-1] += value
        self._purge(now_ms)

    def _purge(self, now_ms: float) -> None:
        expire = self.samples * self.window_ms
        while self._starts and now_ms - self._starts[0] >= expire:
            self._starts.pop(0)
            self._values.pop(0)
        while len(self._starts) > self.samples:
            self._starts.pop(0)
            self._values.pop(0)

    def window_size_ms(self, now_ms: float) -> float:
        """Rate.windowSize: the time since the oldest sample, at least samples - 1 windows."""
        self._purge(now_ms)
        elapsed = now_ms - self._starts[0] if self._starts else 0.0
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def value(self, now_ms: float) -> float:
        """Per second."""
        return sum(self._values) / (self.window_size_ms(now_ms) / 1000.0)


@dataclass(frozen=True, slots=True)
class Match:
    bound: float
    key: tuple[str, str, str]   # (quota type, user tag, client tag): whose usage is tracked


class QuotaManager:
    """The quota configs and the usage of every tracked entity (one per broker)."""

    def __init__(self, log_dir: str, samples: int = 11, window_seconds: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = os.path.join(log_dir, FILE_NAME)
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self._clock = clock
        self._writer = JsonFileWriter(self.path)
        self.configs: dict[Entity, dict[str, float]] = {}
        for path, values in read_json(self.path, {}).items():
            entity = parse_entity_path(path)
            if entity is not None and values:
                self.configs[entity] = {k: float(v) for k, v in values.items()}
        self._rates: dict[tuple[str, str, str], Rate] = {}
        # A request pays for quotas only while some quota is configured.
        self.enabled = bool(self.configs)

    # ------------------------------------------------------------ configs
    def set(self, entity: Entity, values: dict[str, float | None]) -> Future[None]:
        """Set (a float) or remove (None) quota values of an entity; the future is done once
        the file holds them.  Usage tracked under a changed quota starts over."""
        current = dict(self.configs.get(entity, {}))
        for k, v in values.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = float(v)
        if current:
            self.configs[entity] = current
        else:
            self.configs.pop(entity, None)
        self.enabled = bool(self.configs)
        self._rates = {k: r for k, r in self._rates.items() if k[0] not in values}
        return self._writer.write({entity_path(e): {k: _text(v) for k, v in c.items()}
                                   for e, c in self.configs.items()})

    def replace(self, entity: Entity, values: dict[str, float]) -> Future[None] | None:
        """Make ``values`` the entity's whole set (as another broker stored it in ZooKeeper);
        None when nothing changes."""
        current = self.configs.get(entity, {})
        if current == values:
            return None
        return self.set(entity, {**{k: None for k in current}, **values})

    def close(self) -> None:
        self._writer.close()

    def quota(self, quota_type: str, user: str, client_id: str) -> Match | None:
        """The quota that applies (DefaultQuotaCallback's order) and whose usage it counts."""
        c = self.configs
        candidates: list[tuple[Entity, str, str]] = [
            ((user, client_id), user, client_id), ((user, DEFAULT), user, client_id), ((user, None), user, ""),
            ((DEFAULT, client_id), user, client_id), ((DEFAULT, DEFAULT), user, client_id),
            ((DEFAULT, None), user, ""), ((None, client_id), "", client_id), ((None, DEFAULT), "", client_id)]
        for entity, user_tag, client_tag in candidates:
            values = c.get(entity)
            if values is not None and quota_type in values:
                return Match(values[quota_type], (quota_type, user_tag, client_tag))
        return None

    # ------------------------------------------------------------ usage
    def record(self, quota_type: str, user: str, client_id: str, value: float) -> int:
        """Record ``value`` against the applicable quota; the throttle time in ms (0: within)."""
        m = self.quota(quota_type, user, client_id)
        if m is None:
            return 0
        rate = self._rates.get(m.key)
        if rate is None:
            rate = self._rates[m.key] = Rate(self.samples, self.window_ms)
        now = self._clock() * 1000.0
        rate.record(value, now)
        used = rate.value(now)
        if used <= m.bound:
            return 0
        throttle = round((used - m.bound) / m.bound * rate.window_size_ms(now))
        if quota_type == REQUEST:   # ClientRequestQuotaManager: at most one window
            throttle = min(throttle, self.window_ms)
        return throttle


def _text(v: float) -> str:
    """As Kafka stores the value (a whole number without ``.0``)."""
    return str(int(v)) if v == int(v) else repr(v)


def user_of(principal: str) -> str:
    """The user name Kafka's quota entities use: the principal's name (``User:alice`` ->
    ``alice``; ``User:ANONYMOUS`` -> ``ANONYMOUS``)."""
    return principal.split(":", 1)[1] if ":" in principal else principal


# APIs never throttled for request time (Kafka exempts the broker's own and the SASL/version
# handshakes): ApiVersions, SaslHandshake, SaslAuthenticate, and the inter-broker APIs.
_REQUEST_QUOTA_EXEMPT = frozenset((4, 5, 6, 7, 17, 18, 27, 36, 56))


def apply_quotas(ctx: Any, request: Any, response: Any, busy_s: float) -> int:
    """Record one request against its client's quotas (called by the connection, only while
    some quota is configured): Produce counts its record bytes against producer_byte_rate,
    a consumer Fetch its response's record bytes against consumer_byte_rate, every
    non-exempt request (not the brokers' own: inter-broker APIs, follower fetches) the event
    loop's time in its handler (``busy_s``; 0 for one that
    parked) against request_percentage.  Sets ``throttle_time_ms`` in the response (the
    largest of the throttles) and returns it: the connection stops reading for that long."""
    q: QuotaManager = ctx.services.quotas
    user, client = user_of(ctx.principal), ctx.client_id or ""
    key = ctx.api_key
    throttle = 0
    if key == 0:
        size = sum(len(pd.records) for t in request.topic_data for pd in t.partition_data
                   if pd.records is not None)
        throttle = q.record(PRODUCE, user, client, size)
    elif key == 1 and response is not None and getattr(request, "replica_id", -1) < 0:   # consumers only
        size = sum(len(p.records) for t in response.responses for p in t.partitions if p.records is not None)
        throttle = q.record(FETCH, user, client, size)
    follower = key == 1 and getattr(request, "replica_id", -1) >= 0   # replication: exempt
    if busy_s > 0 and key not in _REQUEST_QUOTA_EXEMPT and not follower:
        throttle = max(throttle, q.record(REQUEST, user, client, busy_s * 100.0))
    if throttle and response is not None and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms, throttle)
    return throttle
