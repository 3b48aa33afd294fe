"""A parked JoinGroup/SyncGroup answer that another member, or a timer, completes later.

The coordinator hands the adapter a :class:`Pending` for every JoinGroup and SyncGroup.
Completing one (``complete``) fixes its response; *releasing* it (``release``) runs the
callbacks registered with :meth:`Pending.add_done_callback`, in registration order.  A
Pending made with an ``outbox`` is not released by ``complete``: it is queued there, the
coordinator moves the queue into the call's ``Result.deliveries``, and the Result releases
them once the call's records are appended (store, then propagate).  ``done()`` means
released: only then may the answer leave.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Pending"]


class Pending:
    """One parked response.  ``response`` is None until :meth:`complete`."""

    __slots__ = ("api", "version", "_normalize", "_response", "_callbacks", "_outbox", "_released")

    def __init__(
        self, api: str, version: int, normalize: Callable[[Any, int], Any] | None = None,
        outbox: list[Pending] | None = None,
    ) -> None:
        self.api = api
        self.version = version
        self._normalize = normalize
        self._response: Any = None
        self._callbacks: list[Callable[[Any], None]] = []
        self._outbox = outbox
        self._released = False

    def done(self) -> bool:
        """Completed and released: the response may be sent."""
        return self._released

    def completed(self) -> bool:
        """The response is fixed (it may still wait for its records to be appended)."""
        return self._response is not None

    @property
    def response(self) -> Any:
        return self._response

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        """Call ``fn(response)`` on release; at once if already released."""
        if self._released:
            fn(self._response)
        else:
            self._callbacks.append(fn)

    def complete(self, response: Any) -> bool:
        """Resolve with ``response`` (coordinator only).  False if it was already completed."""
        if self._response is not None:
            return False
        if self._normalize is not None:
            response = self._normalize(response, self.version)
        self._response = response
        if self._outbox is None:
            self.release()
        else:
            self._outbox.append(self)
        return True

    def release(self) -> None:
        """Run the callbacks (the adapter's Result does this after the append)."""
        if self._released or self._response is None:
            return
        self._released = True
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self._response)

    def __repr__(self) -> str:
        state = "done" if self._released else ("completed" if self.completed() else "waiting")
        return f"<Pending {self.api} {state}>"
