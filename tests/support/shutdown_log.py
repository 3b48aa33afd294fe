"""What the log of a broker stopped by SIGTERM must not contain, and must (issue 28).

A clean shutdown logs no ERROR and no traceback; in particular none of what asyncio prints
when a task outlives the event loop: "Task was destroyed but it is pending!" (logged at
ERROR by asyncio), then "RuntimeError: Event loop is closed" when the destroyed coroutine
is closed and calls into the loop.  kbroker's own last-resort sweep (kbroker/runtime/tasks.py,
``finish_loop``) names any task a component forgot to end in a WARNING ("still running
after the shutdown"), and a component whose task would not end says "did not stop": both
are bugs too.  And the broker says it shut down cleanly.
"""

from __future__ import annotations

import re

_FORBIDDEN = ("Traceback", "Task was destroyed", "Event loop is closed",
              "still running after the shutdown", "did not stop", "exception was never retrieved")
# kbroker's format: "[time] LEVEL message (logger)"; an ERROR or CRITICAL from any logger
_ERROR_LINE = re.compile(r"^\[[^\]]*\] (ERROR|CRITICAL) ")


def shutdown_problems(lines: list[str], broker_id: int) -> list[str]:
    """The offending lines of one broker process's output (its whole run, start to exit),
    plus a note if the "shut down cleanly" line is missing; [] when all is well."""
    bad = [line.rstrip("\n") for line in lines
           if _ERROR_LINE.match(line) or any(s in line for s in _FORBIDDEN)]
    if not any(f"shut down (kbroker id={broker_id}) cleanly" in line for line in lines):
        bad.append(f"(no 'shut down (kbroker id={broker_id}) cleanly' line)")
    return bad
