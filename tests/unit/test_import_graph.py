"""The repository's packages import one another without a cycle.

The graph is read from the source with ``ast``, not by importing anything, and it counts every
import statement wherever it stands: at module level, under ``if TYPE_CHECKING:`` and inside a
function (a lazy import).  A cycle that exists only through annotations is still a cycle of the
object graph (one side holds the other and is typed by it), so it counts the same.

An edge goes to the most specific module an import names: ``from log.types import X`` -> log.types,
``from log import types`` -> log.types (a module), ``from groups import ClassicGroup`` -> groups
(its ``__init__``).  Importing a submodule also runs its parents' ``__init__``; that is not counted,
as import-linter does not count it either, because a package ``__init__`` re-exporting its own
submodules would otherwise make every package a knot.  Imports of anything outside the roots
(stdlib, third party) are dropped.  Dynamic imports (``importlib.import_module``) are not seen.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The packages that must import one another without any cycle: all of them, kbroker/ included
# (its last knot, through the broker-state hub, was cut on 2026-11-28).
ACYCLIC_ROOTS: tuple[str, ...] = ("wire", "log", "groups", "txn", "cluster", "kbroker")

Graph = dict[str, set[str]]


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterable[str]:
    """The dotted name each import statement anywhere in ``tree`` names: ``import X`` -> X,
    ``from X import name`` -> X.name."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:   # relative: resolved against the importing module's package
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(anchor + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:   # X.name resolves to X when name is not a module
                yield f"{source}.{alias.name}"


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of the dotted ``name`` that is a module of the graph, if any."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_graph(roots: Iterable[str], base: Path = REPO) -> Graph:
    """module -> modules it imports, for every ``.py`` file of the packages ``roots`` under
    ``base``; edges only between those modules, no self edges."""
    files = {_module_name(path, base): path
             for root in roots for path in sorted((base / root).rglob("*.py"))}
    modules = set(files)
    graph: Graph = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = {_resolve(name, modules)
                   for name in _imported_names(tree, module, path.name == "__init__.py")}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def strongly_connected_components(graph: Graph) -> list[set[str]]:
    """Tarjan's algorithm, iterative (kbroker/'s import chains are deeper than is comfortable
    for Python's recursion limit under pytest)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def cycles(graph: Graph) -> list[set[str]]:
    """The strongly connected components of more than one module, largest first."""
    return sorted((c for c in strongly_connected_components(graph) if len(c) > 1),
                  key=lambda c: (-len(c), sorted(c)))


def _describe(knots: list[set[str]]) -> str:
    return "\n".join(f"{len(k)} modules: {', '.join(sorted(k))}" for k in knots)


def test_no_package_of_the_repository_imports_itself_back_through_a_cycle() -> None:
    knots = cycles(import_graph(ACYCLIC_ROOTS))
    assert not knots, "import cycles (TYPE_CHECKING and lazy imports count):\n" + _describe(knots)


def test_a_back_edge_from_a_kbroker_room_to_the_one_above_is_reported_as_a_cycle(tmp_path: Path) -> None:
    # kbroker's own graph with one TYPE_CHECKING import added where the rooms forbid it
    # (the ports module naming the partition store, which the composition root builds the
    # ports from): the check must see the cycle it closes
    shutil.copytree(REPO / "kbroker", tmp_path / "kbroker", ignore=shutil.ignore_patterns("__pycache__", "static"))
    services = tmp_path / "kbroker" / "server" / "services.py"
    services.write_text(services.read_text() + "\nif TYPE_CHECKING:\n    from kbroker.app.broker import Broker\n")
    knots = cycles(import_graph(["kbroker"], base=tmp_path))
    assert knots and any("kbroker.server.services" in k and "kbroker.app.broker" in k for k in knots)


def _write(base: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_an_import_under_type_checking_closes_a_cycle(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import B\n",
        "pkg/b.py": ("from typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from pkg.a import A\n"),
    })
    assert cycles(import_graph(["pkg"], base=tmp_path)) == [{"pkg.a", "pkg.b"}]


def test_an_import_inside_a_function_closes_a_cycle(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "import pkg.b\n",
        "pkg/sub/__init__.py": "",
        "pkg/b.py": "def f():\n    from pkg import a\n    from .sub import c\n",
        "pkg/sub/c.py": "def g():\n    from ..a import A\n",
    })
    assert cycles(import_graph(["pkg"], base=tmp_path)) == [{"pkg.a", "pkg.b", "pkg.sub.c"}]


def test_a_package_init_reexporting_its_submodules_is_no_cycle(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import A\n",
        "pkg/a.py": "from pkg.b import B\n",
        "pkg/b.py": "import os\n",
    })
    graph = import_graph(["pkg"], base=tmp_path)
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}
    assert cycles(graph) == []
