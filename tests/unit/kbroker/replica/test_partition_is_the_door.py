"""``Partition`` (kbroker/replica/partition.py) is the one door to a partition's ``log.log.Log``: no
other module of kbroker/ reaches the log it holds.

The scan reads every module of kbroker/ but partition.py and refuses, on any receiver:

* ``x._log`` unless ``x`` is ``self`` (a class's own attribute; ``Partition`` keeps its log
  as ``_log``);
* ``x.log`` unless ``x`` is a module-level logger (``log = logging.getLogger(...)``, whose
  ``log.log(level, ...)`` is logging) or the ``logging`` module: ``partition.log``,
  ``p.log``, ``state.partition(t, i).log``, ``self._partition.log`` all count;
* ``getattr(x, "log")`` and ``getattr(x, "_log")``.

What a site needs from the log becomes a method of ``Partition`` instead (Kafka's handlers
and fetchers go through Partition, not UnifiedLog).
"""

from __future__ import annotations

import ast
from pathlib import Path

from kbroker.replica.partition import Partition

KBROKER = Path(__file__).resolve().parents[4] / "kbroker"
LOG_ATTRIBUTES = {"log", "_log"}


def _module_loggers(tree: ast.Module) -> set[str]:
    """Names bound at module level to ``logging.getLogger(...)``."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr == "getLogger":
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def reaches_past_partition(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every place in ``source`` that reaches a log past ``Partition``."""
    tree = ast.parse(source)
    loggers = _module_loggers(tree) | {"logging"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in LOG_ATTRIBUTES:
            receiver = node.value.id if isinstance(node.value, ast.Name) else None
            allowed = receiver == "self" if node.attr == "_log" else receiver in loggers
            if not allowed:
                found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in LOG_ATTRIBUTES):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_no_module_of_kbroker_but_partition_reaches_a_partitions_log():
    modules = sorted(p for p in KBROKER.rglob("*.py") if p != KBROKER / "partition.py")
    assert len(modules) > 50   # the scan found the package
    sites = [f"{path.relative_to(KBROKER.parent)}:{line}: {expr}"
             for path in modules for line, expr in reaches_past_partition(path.read_text())]
    assert sites == [], "add a Partition method instead of reaching its log:\n" + "\n".join(sites)


def test_the_scan_finds_each_way_of_reaching_the_log_and_lets_logging_through():
    source = '''
import logging
log = logging.getLogger(__name__)

def handle(state, partition, p, part):
    partition.log.fetch_offset_by_timestamp(0)
    lg = p.log
    part._log.truncate_to(0)
    state.partition("t", 0).log.topic_id
    getattr(p, "_log")
    log.info("fine")
    log.log(logging.INFO, "fine too")
    logging.log(logging.INFO, "and this")

class Holder:
    def __init__(self, partition):
        self._log = object()   # its own attribute
        self._partition = partition

    def reach(self):
        return self._partition.log
'''
    assert [expr for _, expr in reaches_past_partition(source)] == [
        "partition.log", "p.log", "part._log", "state.partition('t', 0).log", "getattr(p, '_log')",
        "self._partition.log"]


def test_a_partition_has_no_public_log_attribute():
    assert "log" not in Partition.__slots__ and not hasattr(Partition, "log")
