"""Tests that need a tool this machine may lack (iptables and ip, Apache Kafka's and
ZooKeeper's jars, Chromium and chromedriver, kcat, openssl, Java) skip without it on a
developer's machine; under ``CI=true`` they fail with the same reason instead, because
`make test` installs every one of those tools there, so a CI run that lost one must not
look green by skipping the tests that need it.

Only for a missing *tool*: a skip about something else (a platform feature that is
legitimately absent, a parametrisation that repeats another) stays a plain ``pytest.skip``.

- ``missing_tool(reason)`` inside a test or fixture, where the check happens at run time;
- ``@needs_tool(present, reason)`` on a test, or in a module's ``pytestmark``, in place of
  ``pytest.mark.skipif(not present, reason=...)``; tests/conftest.py applies it at setup.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

MARK = "needs_tool"


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def missing_tool(reason: str) -> NoReturn:
    """Skip the current test because a tool it needs is missing; fail it under CI=true."""
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def needs_tool(present: bool, reason: str) -> pytest.MarkDecorator:
    """A mark that makes the test's setup call ``missing_tool(reason)`` unless ``present``."""
    return getattr(pytest.mark, MARK)(present=present, reason=reason)


def check_marks(item: pytest.Item) -> None:
    """Called by tests/conftest.py before each test is set up."""
    for mark in item.iter_markers(MARK):
        if not mark.kwargs["present"]:
            missing_tool(mark.kwargs["reason"])
