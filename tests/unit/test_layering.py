"""The layers of docs/ARCHITECTURE.md, checked: who may import whom, and who may import Spark.

Importing pyspark is only allowed in the Spark engine (``qbeast.spark``) and the dbt adapter; the
format core, the log, the indexing logic, the table API and the CLI must stay importable (and
usable) without it — at import time, which is what a subprocess that imports each of them shows.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "qbeast"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(*, spark: bool) -> list[str]:
    names = sorted(_module_name(p) for p in PACKAGE.rglob("*.py"))
    return [n for n in names if n.startswith("qbeast.spark") == spark]


def test_every_module_outside_the_spark_layer_imports_without_pyspark():
    modules = _modules(spark=False)
    assert "qbeast.index.estimation" in modules and "qbeast.table" in modules
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))\n"
        "    if loaded:\n"
        "        print(name, loaded[:3]); break\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "", f"imports pyspark at import time: {run.stdout}"


def _imports(path: Path) -> set[str]:
    """Every ``qbeast`` module a file imports, at module level or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "qbeast" or name.startswith("qbeast.")}


#: layer package -> the qbeast modules it may import (prefixes); everything else is a violation.
ALLOWED = {
    "core": ("qbeast.core", "qbeast.errors"),
    "delta": ("qbeast.delta", "qbeast.errors", "qbeast"),  # ``qbeast``: the version for commitInfo
    "index": ("qbeast.index", "qbeast.core", "qbeast.errors"),
}


def test_lower_layers_import_only_the_layers_above_them():
    bad = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for name in _imports(path):
                if not any(name == a or name.startswith(a + ".") for a in allowed):
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_the_dbt_adapter_uses_only_the_engines_public_api():
    import qbeast

    bad = []
    for path in sorted((ROOT / "dbt" / "adapters" / "qbeast").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        engine = any(isinstance(n, ast.Import) and any(a.name == "qbeast" and a.asname is None
                                                       for a in n.names) for n in ast.walk(tree))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "qbeast":
                bad += [f"{path.name}: qbeast.{a.name}" for a in node.names
                        if a.name not in qbeast.__all__]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("qbeast."):
                bad.append(f"{path.name}: {node.module}")
            elif isinstance(node, ast.Import):
                bad += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("qbeast.")]
            elif (engine and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id == "qbeast" and node.attr not in qbeast.__all__):
                bad.append(f"{path.name}: qbeast.{node.attr}")
    assert bad == []


def test_modules_every_spark_process_imports_stay_light():
    """Spark imports the data source module in every Python worker and planner process of a SQL
    read, and dbt imports the session helper on every invocation: pulling the log layer or
    pyarrow into them cost each read about 0.3 s (measured by benchmarks/bench_sql.py)."""
    probe = (
        "import sys, qbeast.spark.read.datasource, qbeast.spark.session\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyarrow' "
        "or m.startswith(('qbeast.delta', 'qbeast.index', 'qbeast.snapshot'))))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
