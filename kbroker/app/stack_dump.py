"""``kill -USR1 <pid>``: log where every asyncio task and every thread is, like ``jstack``.

A broker that does not answer, or does not finish shutting down, says why without a
debugger: each task's coroutine stack (``Task.print_stack``) and each thread's frames
(``sys._current_frames``) are written to the ``kbroker.stacks`` logger at WARNING, in one
message.  Reading stacks is cheap and changes nothing, so the signal is safe at any time.
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal
import sys
import threading
import traceback

__all__ = ["install"]

log = logging.getLogger("kbroker.stacks")


def dump(loop: asyncio.AbstractEventLoop) -> str:
    out = io.StringIO()
    tasks = asyncio.all_tasks(loop)
    out.write(f"{len(tasks)} asyncio task(s):\n")
    for task in tasks:
        out.write(f"--- {task!r}\n")
        task.print_stack(file=out)
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        out.write(f"--- thread {names.get(ident, ident)}\n")
        out.write("".join(traceback.format_stack(frame)))
    return out.getvalue()


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Log :func:`dump` on SIGUSR1 (on the loop, so the task list is consistent)."""
    loop.add_signal_handler(signal.SIGUSR1, lambda: log.warning("stacks on SIGUSR1\n%s", dump(loop)))
