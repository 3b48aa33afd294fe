"""A parked JoinGroup/SyncGroup answer that another member, or a timer, completes later.

The coordinator hands the adapter a :class:`Pending` for every JoinGroup and SyncGroup.
It may already be done when handed over (the request completed the phase itself).  When
some later call (another member's request, or ``GroupCoordinator.poll``) completes it, the
callbacks registered with :meth:`Pending.add_done_callback` run synchronously inside that
call, before it returns, in registration order.  The records of that later call must be in
``__consumer_offsets`` before the response leaves; an asyncio adapter gets that for free by
resolving a future in the callback and appending the records before it next awaits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Pending"]


class Pending:
    """One parked response.  ``response`` is None until :meth:`done`."""

    __slots__ = ("api", "version", "_normalize", "_response", "_callbacks")

    def __init__(
        self, api: str, version: int, normalize: Callable[[Any, int], Any] | None = None
    ) -> None:
        self.api = api
        self.version = version
        self._normalize = normalize
        self._response: Any = None
        self._callbacks: list[Callable[[Any], None]] = []

    def done(self) -> bool:
        return self._response is not None

    @property
    def response(self) -> Any:
        return self._response

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        """Call ``fn(response)`` on completion; at once if already done."""
        if self._response is not None:
            fn(self._response)
        else:
            self._callbacks.append(fn)

    def complete(self, response: Any) -> bool:
        """Resolve with ``response`` (coordinator only).  False if it was already done."""
        if self._response is not None:
            return False
        if self._normalize is not None:
            response = self._normalize(response, self.version)
        self._response = response
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(response)
        return True

    def __repr__(self) -> str:
        state = "done" if self.done() else "waiting"
        return f"<Pending {self.api} {state}>"
