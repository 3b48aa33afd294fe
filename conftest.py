"""Hooks for every pytest run in this repository (tests/, spark_it/, examples/).

The failure recap: CI keeps only the tail of `make test`'s output, and a failed test's clients
(kept alive by sys.last_traceback until the interpreter exits) can print pages of connection
errors after pytest's own summary.  So the failed tests are also written, one line each, to
.test-failures.txt, which the Makefile prints after pytest has exited: the last lines CI shows.
"""

import os
import sys

_RECAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".test-failures.txt")
_failures: list[str] = []


def pytest_runtest_logreport(report):  # type: ignore[no-untyped-def]
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)
        first_line = message.splitlines()[0] if message else ""
        _failures.append(f"{report.when.upper():8} {report.nodeid}  {first_line[:300]}")


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    with open(_RECAP, "w") as out:
        out.write("".join(line + "\n" for line in _failures))
    # release the last failed test's frames (and the clients in them) now, not at exit
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
