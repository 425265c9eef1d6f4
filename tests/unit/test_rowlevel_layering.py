"""The row-level split, checked from the source: orchestration above, Spark jobs in the wing.

``qbeast.operations.rowlevel`` checks arguments, runs the phases and commits; it imports neither
pyspark nor py4j anywhere (not even inside a function). The row-level wing
(``qbeast.spark.changes``) holds the Spark jobs and imports nothing above it.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported(path: Path) -> set[str]:
    """Every module a file imports, at module level or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_row_level_orchestration_imports_no_spark():
    names = _imported(ROOT / "qbeast" / "operations" / "rowlevel.py")
    assert sorted(n for n in names if n.split(".")[0] in ("pyspark", "py4j")) == []
    assert "qbeast.spark.changes" in names or any(n.startswith("qbeast.spark.changes.")
                                                  for n in names)


def test_the_row_level_wing_imports_nothing_above_it():
    bad = []
    for path in sorted((ROOT / "qbeast" / "spark" / "changes").glob("*.py")):
        for name in _imported(path):
            if name in ("qbeast.table", "qbeast.operations") or name.startswith("qbeast.operations."):
                bad.append(f"{path.name} imports {name}")
    assert bad == []
