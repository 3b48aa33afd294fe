"""Inter-broker client connections (Kafka's ``ControllerChannelManager`` /
``RequestSendThread``), on kbroker.client's AsyncConnection (kbroker/interbroker/inter_broker_client.py
opens them with the inter-broker listener's TLS and SASL).

One :class:`BrokerLink` per target broker: a queue of requests sent one at a time, in
order, each awaiting its response before the next goes (Kafka's controller keeps one
request in flight per broker, so a broker applies the controller's requests in the order
they were decided).  A send that fails (connection refused, reset, timeout) reconnects
and resends the same request after ``RETRY_BACKOFF_S``, as the RequestSendThread does,
until the link is closed (the broker left the cluster: its pending futures, the one in
flight included, are cancelled).  A closed link's task ends even if a cancellation is lost
(Python 3.11's ``wait_for``, see kbroker/runtime/tasks.py): it stops at its next turn; the
channel's :meth:`BrokerChannel.aclose` (at the owner's stop) waits until every task of
every link it ever closed has ended, and makes no link after that.

Also :func:`send_once`: one request on a fresh connection, for the broker's own
ControlledShutdown to the controller.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kbroker.client import AsyncConnection
from kbroker.interbroker import inter_broker_client  # TLS / SASL of the inter-broker listener
from kbroker.runtime.tasks import cancel_and_wait, task_name

__all__ = ["BrokerChannel", "BrokerLink", "send_once"]

log = logging.getLogger("kbroker.broker_channel")

RETRY_BACKOFF_S = 0.3
REQUEST_TIMEOUT_S = 30.0


async def send_once(host: str, port: int, message: Any, version: int, client_id: str,
                    timeout_s: float = REQUEST_TIMEOUT_S) -> Any:
    """One request on a new connection; raises OSError (kbroker.client's ConnectionClosed,
    SaslAuthenticationFailed, ...) or TimeoutError."""
    async def go() -> Any:
        conn = await inter_broker_client.open_connection(host, port, client_id)
        try:
            return await conn.call(message, version)
        finally:
            conn.close()
    return await asyncio.wait_for(go(), timeout_s)


class BrokerLink:
    def __init__(self, broker_id: int, host: str, port: int, client_id: str) -> None:
        self.broker_id = broker_id
        self.host, self.port = host, port
        self.client_id = client_id
        self._queue: asyncio.Queue[tuple[Any, int, asyncio.Future[Any]]] = asyncio.Queue()
        self._conn: AsyncConnection | None = None
        self._closed = False
        self._inflight: asyncio.Future[Any] | None = None   # the request being sent
        self.task = asyncio.ensure_future(self._run())

    def send(self, message: Any, version: int) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._closed:   # dropped, as close() drops the queued ones
            fut.cancel()
        else:
            self._queue.put_nowait((message, version, fut))
        return fut

    async def _run(self) -> None:
        # ``_closed`` is checked at every turn: a cancellation that 3.11's wait_for
        # swallowed (the response arrived as the link closed) must not send the task back
        # to ``_queue.get()`` for ever (destroyed pending when the loop closes)
        while not self._closed:
            message, version, fut = await self._queue.get()
            self._inflight = fut
            while not fut.done() and not self._closed:
                try:
                    if self._conn is None:
                        self._conn = await asyncio.wait_for(
                            inter_broker_client.open_connection(self.host, self.port, self.client_id),
                            REQUEST_TIMEOUT_S)
                    response = await asyncio.wait_for(self._conn.call(message, version), REQUEST_TIMEOUT_S)
                    if not fut.done():   # close() may have cancelled it meanwhile
                        fut.set_result(response)
                except OSError as e:   # refused, closed, reset, timed out (TimeoutError), SASL refused
                    if self._closed:
                        break
                    log.info("request %s to broker %d (%s:%d) failed (%r); retrying",
                             type(message).__name__, self.broker_id, self.host, self.port, e)
                    self._drop_connection()
                    await asyncio.sleep(RETRY_BACKOFF_S)
            self._inflight = None
        self._drop_connection()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Stop sending: the task is cancelled (it ends at its next step), the request in
        flight and the queued ones are cancelled.  :meth:`aclose` also waits for the task."""
        self._closed = True
        self.task.cancel()
        self._drop_connection()
        if self._inflight is not None and not self._inflight.done():
            self._inflight.cancel()
        while not self._queue.empty():
            _, _, fut = self._queue.get_nowait()
            fut.cancel()

    async def aclose(self) -> None:
        self.close()
        for task in await cancel_and_wait([self.task]):
            log.warning("the link to broker %d did not stop: %s", self.broker_id, task_name(task))


class BrokerChannel:
    """The controller's links, one per live broker (``addBroker`` / ``removeBroker``)."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.links: dict[int, BrokerLink] = {}
        self._ending: set[asyncio.Task[None]] = set()   # tasks of closed links, until they end
        self.stopped = False   # aclose() ran: no link is made any more

    def update_brokers(self, endpoints: dict[int, tuple[str, int]]) -> None:
        """Keep a link to exactly these brokers; a broker whose address changed is relinked."""
        for broker_id in list(self.links):
            link = self.links[broker_id]
            if endpoints.get(broker_id) != (link.host, link.port):
                self._close_link(link)
                del self.links[broker_id]
        if self.stopped:   # a late update (its owner stopped under it) makes no task
            return
        for broker_id, (host, port) in endpoints.items():
            if broker_id not in self.links:
                self.links[broker_id] = BrokerLink(broker_id, host, port, self.client_id)

    def send(self, broker_id: int, message: Any, version: int) -> asyncio.Future[Any] | None:
        link = self.links.get(broker_id)
        return None if link is None else link.send(message, version)

    def _close_link(self, link: BrokerLink) -> None:
        link.close()
        if not link.task.done():
            self._ending.add(link.task)
            link.task.add_done_callback(self._ending.discard)

    def close(self) -> None:
        """Close every link (the controller resigned; it may link again when re-elected)."""
        for link in self.links.values():
            self._close_link(link)
        self.links.clear()

    async def aclose(self) -> None:
        """The owner stops: every link closed and its task ended, and none made after."""
        self.stopped = True
        self.close()
        for task in await cancel_and_wait(list(self._ending)):
            log.warning("an inter-broker link did not stop: %s", task_name(task))
