"""Code builds the generated message classes by keyword.

Kafka inserts fields into existing structs when it adds a version (Kafka 4.4 put TopicId
between Name and Partitions of TxnOffsetCommit's topics), so a positional construction
silently shifts its arguments into the wrong fields after a regeneration.  Only the
compiled codec (wire/compiler.py, generated from the same table) calls them positionally.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_MODULES = ("wire.messages", "wire._generated.messages")


def _positional_constructions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module in _MODULES or node.module == "wire"):
            roots |= {a.asname or a.name for a in node.names}

    def rooted(e: ast.expr) -> bool:
        while isinstance(e, ast.Attribute):
            e = e.value
        return isinstance(e, ast.Name) and e.id in roots

    grew = True
    while grew:  # aliases: P = ListOffsetsResponse.ListOffsetsPartitionResponse
        grew = False
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id not in roots
                    and rooted(node.value)):
                roots.add(node.targets[0].id)
                grew = True
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and rooted(node.func):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name[:1].isupper() and not any(isinstance(a, ast.Starred) for a in node.args):
                rel = path.relative_to(ROOT) if ROOT in path.parents else path
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_no_code_outside_the_codec_builds_a_message_with_positional_arguments():
    found = []
    for folder in ("kbroker", "groups", "txn", "log", "cluster", "wire", "tests", "bench", "spark_it"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "_generated" not in path.parts:
                found += _positional_constructions(path)
    assert found == []


def test_the_check_sees_a_positional_construction(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from wire.messages import TxnOffsetCommitRequest\n"
                      "T = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic\n"
                      "x = T('t', [])\n")
    assert len(_positional_constructions(sample)) == 1
