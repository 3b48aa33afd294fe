"""Settings for every test: Hypothesis without its timing checks, and the ``needs_tool`` mark
(tests/support/requirements_helper.py: a missing tool skips a test, or fails it under CI=true).

Hypothesis fails an example that runs past ``deadline`` (200 ms by default) and a test whose
data generation is "too slow"; both measure wall time, so on a busy machine (2 cores, several
suites at once) they fail tests that are correct.  The properties are about results, not
speed: this profile turns both off for every @given test (a test's own @settings still
applies on top).
"""

import pytest
from hypothesis import HealthCheck, settings

from tests.support.requirements_helper import check_marks

settings.register_profile("kbroker", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kbroker")


def pytest_configure(config):  # type: ignore[no-untyped-def]
    config.addinivalue_line("markers", "needs_tool(present, reason): skip, or fail under CI=true, "
                                       "when a tool the test runs is missing (tests/support/requirements_helper.py)")


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures start brokers that need the tool
def pytest_runtest_setup(item):  # type: ignore[no-untyped-def]
    check_marks(item)
