"""Hooks for every pytest run in this repository (tests/, spark_it/, examples/).

The failure recap: CI keeps only the tail of `make test`'s output, and a failed test's clients
(kept alive by sys.last_traceback until the interpreter exits) can print pages of connection
errors after pytest's own summary.  So the failed tests are also written, one line each, to
.test-failures.txt, which the Makefile prints after pytest has exited: the last lines CI shows.
Under pytest-xdist (``make test`` runs workers side by side) the controller sees every
worker's reports and writes the file; the workers write nothing.

Running side by side (``make test``: ``-n 4 --dist loadfile --no-loadscope-reorder``): a test
module is one unit of work, so its module-scoped brokers, clusters and ZooKeepers start once
on one worker; the Spark modules are one unit together (``_ONE_UNIT``), so one worker starts
the session's SparkSession (a JVM) rather than each worker.  Units go to the workers in
collection order, which ``pytest_collection_modifyitems`` changes for a worker so that the
longest units start first (``_LONGEST``, then whole directories by ``_SLOW_DIRS``) and the
short unit-test modules fill in at the end, instead of one long module starting last.
"""

import os
import sys

import pytest

_RECAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".test-failures.txt")
_failures: list[str] = []


def pytest_runtest_logreport(report):  # type: ignore[no-untyped-def]
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)
        first_line = message.splitlines()[0] if message else ""
        _failures.append(f"{report.when.upper():8} {report.nodeid}  {first_line[:300]}")


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    if not hasattr(session.config, "workerinput"):   # not an xdist worker: the whole run's recap
        with open(_RECAP, "w") as out:
            out.write("".join(line + "\n" for line in _failures))
    # release the last failed test's frames (and the clients in them) now, not at exit
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)


# Units that take longest, longest first, as measured (a full run's JUnit XML); a module missing
# here or gone only runs later: this is an order, not a list of what runs.
_LONGEST = (
    "tests/tools/test_tools_vs_kafka.py",            # ~5 min on a worker beside 3 others
    "tests/cluster/test_replication_faults.py",      # ~5 min
    "tests/properties/wire/test_codec_roundtrip.py",
    "tests/compat/test_security_sasl.py",
    "tests/spark/",
    "tests/compat/test_security_ssl.py",
    "tests/compat/test_acls_sasl.py",
    "tests/tools/test_tools_acls.py",
    "tests/properties/wire/test_kafka_python_crosscheck.py",
    "tests/compat/test_compaction.py",
    "tests/compat/test_quotas_confluent.py",
    "tests/compat/test_kafka_python.py",
    "tests/cluster/test_quotas_zookeeper.py",
    "tests/soak/test_soak_short.py",
)
# then the rest by directory: processes first, then the property suites and the in-process
# brokers, the unit tests last
_SLOW_DIRS = ("tests/soak/", "tests/tools/", "tests/cluster/", "tests/compat/", "tests/console/",
              "tests/support/", "tests/properties/", "tests/broker/", "tests/unit/")
# directories whose modules are one unit of work for the xdist scheduler (one worker runs them
# all): the Spark tests share one session-scoped SparkSession, a JVM worth starting once
_ONE_UNIT = ("tests/spark/",)


def _rank(path: str) -> tuple[int, int]:
    for i, prefix in enumerate(_LONGEST):
        if path.startswith(prefix):
            return 0, i
    for i, prefix in enumerate(_SLOW_DIRS):
        if path.startswith(prefix):
            return 1, i
    return 2, 0


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):  # type: ignore[no-untyped-def]
    if hasattr(config, "workerinput"):   # an xdist worker: every worker sorts alike (a stable sort)
        items.sort(key=lambda item: _rank(item.nodeid.split("::", 1)[0]))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):  # type: ignore[no-untyped-def]
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        """--dist loadfile, with each directory of ``_ONE_UNIT`` one unit."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((d for d in _ONE_UNIT if path.startswith(d)), path)

    return Units(config, log)
