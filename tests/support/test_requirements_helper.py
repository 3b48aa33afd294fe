"""tests/support/requirements_helper.py: a missing tool skips a test on a developer's machine and
fails it under CI=true, with the same reason either way."""

from __future__ import annotations

import pytest

from tests.support.requirements_helper import check_marks, missing_tool, needs_tool


class Item:
    """What check_marks reads of a pytest item: its marks by name."""

    def __init__(self, *marks: pytest.MarkDecorator) -> None:
        self.marks = [m.mark for m in marks]

    def iter_markers(self, name: str):
        return (m for m in self.marks if m.name == name)


@pytest.mark.parametrize("ci", [None, "false", "1"])
def test_a_missing_tool_skips_outside_ci(monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="^kcat is not on PATH$"):
        missing_tool("kcat is not on PATH")


def test_a_missing_tool_fails_under_ci_true(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="^kcat is not on PATH$"):
        missing_tool("kcat is not on PATH")


def test_the_mark_fails_a_test_under_ci_true_only_when_the_tool_is_missing(monkeypatch):
    monkeypatch.setenv("CI", "true")
    check_marks(Item(needs_tool(True, "present"), pytest.mark.timeout(5)))
    with pytest.raises(pytest.fail.Exception, match="^no java$"):
        check_marks(Item(needs_tool(True, "present"), needs_tool(False, "no java")))
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="^no java$"):
        check_marks(Item(needs_tool(False, "no java")))
