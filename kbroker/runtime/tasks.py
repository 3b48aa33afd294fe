"""Ending asyncio tasks at shutdown, so that none is left pending when the loop closes.

A task still pending when its event loop closes is destroyed with asyncio's ``Task was
destroyed but it is pending!`` (an ERROR line), and whatever it held (a connection, a
future someone awaits) is never released.  Every component that starts tasks ends them in
its ``stop``/``aclose`` with :func:`cancel_and_wait`, which does not return before each
task has really finished:

* Python 3.11's ``asyncio.wait_for`` can swallow a cancellation that arrives while its inner
  future completes (gh-86296, fixed in 3.12): the task goes on, e.g. back to an
  ``await queue.get()`` that never returns.  So the tasks are cancelled again, every
  ``RECANCEL_S``, until they end (or ``timeout_s`` passes: they are returned, for the caller
  to name in its log).
* An exception a task ended with is retrieved here (asyncio would log "Task exception was
  never retrieved" when the task is collected) and logged at DEBUG: a task cancelled at
  shutdown may fail on the connection its cancellation closed.

:func:`finish_loop` is the last step of a loop that kbroker owns (``kbroker serve``,
``Broker.start``'s thread): whatever task a component forgot is named in a WARNING and
ended, and the default executor is shut down (its threads joined) before the loop closes,
so that no executor job completes into a closed loop (``RuntimeError: Event loop is
closed`` from concurrent.futures' callback).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable
from typing import Any

__all__ = ["TaskSet", "cancel_and_wait", "finish_loop", "new_event_loop", "task_name"]

log = logging.getLogger("kbroker.tasks")

RECANCEL_S = 0.5   # a task that ignored a cancellation (see above) is cancelled again after this
STOP_TIMEOUT_S = 10.0


def task_name(task: asyncio.Future[Any]) -> str:
    """The coroutine's qualified name (``BrokerLink._run``), for log lines."""
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    return getattr(coro, "__qualname__", None) or repr(task)


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]],
                          timeout_s: float = STOP_TIMEOUT_S) -> set[asyncio.Future[Any]]:
    """Cancel ``tasks`` and wait until every one has ended; the ones still running after
    ``timeout_s`` are returned (the caller logs them).  The calling task itself is skipped."""
    me = asyncio.current_task()
    pending = {t for t in tasks if t is not me and not t.done()}
    done_before = {t for t in tasks if t is not me and t.done()}
    _retrieve(done_before)
    if not pending:
        return set()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while pending:
        for t in pending:
            t.cancel()
        left = deadline - loop.time()
        if left <= 0:
            break
        done, pending = await asyncio.wait(pending, timeout=min(left, RECANCEL_S))
        _retrieve(done)
    return pending


def _retrieve(done: Iterable[asyncio.Future[Any]]) -> None:
    for t in done:
        if not t.cancelled() and t.exception() is not None:
            log.debug("%s ended with %r while stopping", task_name(t), t.exception())


class TaskSet:
    """Tasks a component starts on the side (retries, answers, re-registrations): kept
    referenced while they run (asyncio holds only weak references) and ended by
    :meth:`aclose`."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
        """Start ``coro`` as a task; None (the coroutine closed unstarted) once closed."""
        if self.closed:
            coro.close()
            return None
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def close(self) -> None:
        """No task starts any more; the running ones are cancelled, not waited for
        (:meth:`aclose` waits)."""
        self.closed = True
        for t in list(self._tasks):
            t.cancel()

    async def aclose(self, timeout_s: float = STOP_TIMEOUT_S) -> set[asyncio.Future[Any]]:
        """No task starts any more; the running ones are cancelled and waited for (the
        ones still running after ``timeout_s`` are returned)."""
        self.closed = True
        return await cancel_and_wait(list(self._tasks), timeout_s)


async def finish_loop(timeout_s: float = STOP_TIMEOUT_S) -> None:
    """The end of a loop kbroker owns, after the broker stopped: every task left is named
    (WARNING: a component did not end it) and ended; then the default executor's threads
    are joined, so that nothing completes into the closed loop."""
    me = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    if left:
        log.warning("%d task(s) still running after the shutdown; cancelling them: %s",
                    len(left), ", ".join(sorted(task_name(t) for t in left)))
        stuck = await cancel_and_wait(left, timeout_s)
        if stuck:
            log.warning("%d task(s) did not end when cancelled: %s", len(stuck),
                        ", ".join(sorted(task_name(t) for t in stuck)))
    await asyncio.get_running_loop().shutdown_default_executor()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when available (it is a dependency), else asyncio's own loop.  Here, beside
    :func:`finish_loop`, so that the console's stand-alone command makes its loop without
    importing the broker."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
