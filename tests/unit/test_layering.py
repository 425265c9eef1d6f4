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
    "delta": ("qbeast.delta", "qbeast.errors", "qbeast", "qbeast.storage"),  # ``qbeast``: commitInfo's version
    "storage": ("qbeast.storage", "qbeast.errors"),  # bytes at paths: no Delta, no Qbeast format
    "index": ("qbeast.index", "qbeast.core", "qbeast.errors"),
    "approx": ("qbeast.approx", "qbeast.core", "qbeast.errors"),  # pure statistics
}


def test_the_core_log_and_index_layers_import_only_what_they_may():
    bad = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for name in _imports(path):
                if not any(name == a or name.startswith(a + ".") for a in allowed):
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def _storage_rule_breaks(storage_files: list[Path], delta_files: list[Path]) -> list[str]:
    """``file:line imports name`` for every import, at any level (inside functions and under
    ``if TYPE_CHECKING:`` too), that breaks the storage package's rules: its modules import no
    other part of ``qbeast`` than ``qbeast.errors``, and neither pyspark nor dbt; the log's modules
    reach storage only through the package ``qbeast.storage``, never one of its modules or obstore."""
    submodules = {p.stem for p in (PACKAGE / "storage").glob("*.py")} - {"__init__"}
    bad = []
    for path, in_storage in [(p, True) for p in storage_files] + [(p, False) for p in delta_files]:
        for node in _import_nodes(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif node.level:
                continue  # a relative import stays inside its own package
            elif node.module == "qbeast.storage":  # ``from qbeast.storage import object_store``
                names = [f"{node.module}.{a.name}" if a.name in submodules else node.module
                         for a in node.names]
            else:
                names = [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if in_storage:
                    wrong = top in ("pyspark", "py4j", "dbt") or (top == "qbeast" and not any(
                        name == own or name.startswith(own + ".") for own in ("qbeast.storage", "qbeast.errors")))
                else:
                    wrong = top == "obstore" or name.startswith("qbeast.storage.")
                if wrong:
                    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                    bad.append(f"{where}:{node.lineno} imports {name}")
    return bad


def test_storage_knows_nothing_of_the_log_and_the_log_uses_only_its_package(tmp_path: Path):
    """``qbeast.storage`` is bytes at paths (docs/ARCHITECTURE.md): it must not grow a dependency
    on the log, the index or the format core, and the log must not reach past the package's names
    into a backend (whose client library, obstore, is imported on first use only)."""
    storage = sorted((PACKAGE / "storage").rglob("*.py"))
    delta = sorted((PACKAGE / "delta").rglob("*.py"))
    assert len(storage) >= 8 and len(delta) >= 10
    assert _storage_rule_breaks(storage, delta) == []
    # the check checks: each kind of break, at module level and inside a function
    wrong_storage = tmp_path / "wrong_storage.py"
    wrong_storage.write_text("from qbeast.delta.log import DeltaLog\n"
                             "def f():\n    import pyspark\n    from qbeast.core import cube_id\n")
    wrong_delta = tmp_path / "wrong_delta.py"
    wrong_delta.write_text("from qbeast.storage.object_store import ObjectStorage\n"
                           "from qbeast.storage import Storage, object_store\n"
                           "def f():\n    import obstore\n")
    found = [line.split(" imports ")[1] for line in _storage_rule_breaks([wrong_storage], [wrong_delta])]
    assert found == ["qbeast.delta.log", "pyspark", "qbeast.core",
                     "qbeast.storage.object_store", "qbeast.storage.object_store", "obstore"]


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
        "or m.startswith(('qbeast.delta', 'qbeast.storage', 'qbeast.index', 'qbeast.snapshot'))))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def _import_nodes(tree: ast.AST, *, type_checking: bool = True) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, at any level (inside functions and classes too);
    without ``type_checking`` the ones under ``if TYPE_CHECKING:`` are left out (they never run)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if (not type_checking and isinstance(node, ast.If)
                and "TYPE_CHECKING" in {getattr(node.test, "id", None), getattr(node.test, "attr", None)}):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _orchestration_modules() -> list[Path]:
    return [PACKAGE / "table.py", *sorted((PACKAGE / "operations").rglob("*.py"))]


def _spark_imports(paths: list[Path]) -> list[str]:
    """``file:line imports pyspark...`` for every import of pyspark or py4j, at any level."""
    bad = []
    for path in paths:
        for node in _import_nodes(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if node.level == 0 else [])
            bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {name}" for name in names
                    if name.split(".")[0] in ("pyspark", "py4j")]
    return bad


def test_the_table_api_and_the_operations_never_import_pyspark():
    """They orchestrate; every Spark job lives in a wing of ``qbeast.spark`` (docs/ARCHITECTURE.md).

    Checked on the source, imports inside functions included: a lazy import of pyspark is still
    a Spark job in the wrong layer."""
    assert len(_orchestration_modules()) > 5
    assert _spark_imports(_orchestration_modules()) == []


def test_read_planning_and_predicate_parsing_never_import_pyspark():
    """Which files a read opens, and what a filter's text means, are decided without Spark: the
    plan is plain data, and the parser works on JSON schemas (the Spark halves are
    ``read/dataframe.py`` and ``read/predicates.py``)."""
    read = PACKAGE / "spark" / "read"
    pure = [read / f"{name}.py" for name in ("planner", "literals", "typed_predicates", "sql_parser")]
    assert _spark_imports(pure) == []


def _import_graph() -> dict[str, set[str]]:
    """``qbeast`` module -> the ``qbeast`` modules it imports (any level, not type-only ones).

    ``from package import name`` counts as importing ``package.name`` when that is a module."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _import_nodes(ast.parse(path.read_text(), str(path)), type_checking=False):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in paths)
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in paths:
                    edges.add(f"{base}.{alias.name}")
                elif base in paths:
                    edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


#: module prefix -> the ``qbeast`` modules it never imports, at any level (prefixes): the Spark
#: engine sits below the table API, the operations and the server; the operations below the
#: table API (and the lazily loaded public names of ``qbeast``, which lead to it), the server and
#: the command line.
NEVER_UPWARD = {
    "qbeast.spark": ("qbeast.table", "qbeast.operations", "qbeast.serve", "qbeast.cli"),
    "qbeast.operations": ("qbeast.table", "qbeast.serve", "qbeast.cli", "qbeast"),
}


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``module imports target`` for every import of a layer above the module's (``NEVER_UPWARD``;
    ``qbeast`` itself counts only as the exact name, its submodules are checked one by one)."""
    bad = []
    for name, targets in sorted(graph.items()):
        for layer, above in NEVER_UPWARD.items():
            if name == layer or name.startswith(layer + "."):
                bad += [f"{name} imports {target}" for target in sorted(targets)
                        if any(target == a or (a != "qbeast" and target.startswith(a + "."))
                               for a in above)]
    return bad


def test_the_import_graph_has_no_circles_and_nothing_runs_upward():
    """Each layer imports only the layers below it, so the package's imports form a DAG.

    The Delta log's type-only circle is the one exception (its ``if TYPE_CHECKING:`` imports
    are not edges here; what is left inside ``qbeast.delta`` is tolerated). The Spark engine
    never imports the table API, the operations that orchestrate it or the server; the
    operations never import the table API, the server or the command line."""
    graph = _import_graph()
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]  # the check checks
    circles = [c for c in _cycles(graph) if not all(m.startswith("qbeast.delta.") for m in c)]
    assert circles == []
    assert _upward_imports({  # the check checks: each kind of upward import is found
        "qbeast.spark.read.x": {"qbeast.table", "qbeast.serve.server", "qbeast.core.sql"},
        "qbeast.spark.session": {"qbeast.operations.optimize"},
        "qbeast.operations.y": {"qbeast", "qbeast.table", "qbeast.cli", "qbeast.checks"},
        "qbeast.serve.server": {"qbeast.table"},
    }) == ["qbeast.operations.y imports qbeast", "qbeast.operations.y imports qbeast.cli",
           "qbeast.operations.y imports qbeast.table",
           "qbeast.spark.read.x imports qbeast.serve.server", "qbeast.spark.read.x imports qbeast.table",
           "qbeast.spark.session imports qbeast.operations.optimize"]
    assert any(n.startswith("qbeast.operations.") for n in graph) and "qbeast.serve.server" in graph
    assert _upward_imports(graph) == []
    # inside the Spark layer: the wings sit below the session builder and the catalog helpers,
    # which register and read through them
    wings = tuple(f"qbeast.spark.{wing}." for wing in WING_IMPORTS)
    above = [f"{name} imports {target}" for name, targets in sorted(graph.items())
             if name.startswith(wings) for target in sorted(targets)
             if target in ("qbeast.spark.session", "qbeast.spark.catalog")]
    assert above == []


#: wing of ``qbeast.spark`` -> the wings it may import. read/ and write/ stand alone (what both
#: need, e.g. ``arrow_jobs``, ``data_footers``, ``paths``, sits beside them in ``qbeast.spark``);
#: the row-level changes use both; the SQL wing (what Spark SQL and the bridge call back into)
#: uses all three.
WING_IMPORTS = {
    "read": (),
    "write": (),
    "changes": ("read", "write"),
    "sql": ("read", "write", "changes"),
}
#: the modules of ``qbeast.spark`` outside the wings that may import the SQL wing: the session
#: builder (inside its function) and the catalog helpers register the session's source.
SQL_WING_IMPORTERS = ("qbeast.spark.session", "qbeast.spark.catalog")


def _wing_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 3 and parts[:2] == ["qbeast", "spark"] and parts[2] in WING_IMPORTS:
        return parts[2]
    return None


def _wing_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """wing -> the other wings its modules import (at any level, as ``_import_graph`` counts)."""
    wings: dict[str, set[str]] = {wing: set() for wing in WING_IMPORTS}
    for name, targets in graph.items():
        wing = _wing_of(name)
        if wing is not None:
            wings[wing].update(w for w in map(_wing_of, targets) if w is not None and w != wing)
    return wings


def _wing_rule_breaks(graph: dict[str, set[str]]) -> list[str]:
    """``wing imports wing`` (or ``module imports module``) for every import across the Spark
    layer's wings that ``WING_IMPORTS`` and ``SQL_WING_IMPORTERS`` do not allow, and
    ``circle: ...`` for any loop between wings."""
    wings = _wing_graph(graph)
    bad = [f"{wing}/ imports {other}/" for wing, others in sorted(wings.items())
           for other in sorted(others) if other not in WING_IMPORTS[wing]]
    bad += [f"circle: {' '.join(c)}" for c in _cycles(wings)]
    bad += [f"{name} imports {target}" for name, targets in sorted(graph.items())
            if name.startswith("qbeast.spark.") and _wing_of(name) is None
            and name not in SQL_WING_IMPORTERS
            for target in sorted(targets) if _wing_of(target) == "sql"]
    return bad


def test_the_spark_wings_import_only_the_wings_below_them():
    """read/ and write/ import no other wing, changes/ only those two, sql/ only those three, and
    no loop runs between wings (docs/ARCHITECTURE.md, "The Spark layer"); outside the wings only
    the session builder and the catalog helpers reach the SQL wing."""
    graph = _import_graph()
    wings = _wing_graph(graph)
    assert wings["changes"] and wings["sql"]  # the graph sees the wings' imports
    assert _wing_rule_breaks(graph) == []
    # the check checks: a wing importing a wing above it, a loop, a helper reaching up
    wrong = {"qbeast.spark.read.a": {"qbeast.spark.write.b", "qbeast.spark.paths"},
             "qbeast.spark.write.b": {"qbeast.spark.read.a"},
             "qbeast.spark.changes.c": {"qbeast.spark.sql.d"},
             "qbeast.spark.sql.d": {"qbeast.spark.changes.c"},
             "qbeast.spark.bridge": {"qbeast.spark.sql.d"},
             "qbeast.spark.session": {"qbeast.spark.sql.d"}}
    assert _wing_rule_breaks(wrong) == [
        "changes/ imports sql/", "read/ imports write/", "write/ imports read/",
        "circle: changes sql", "circle: read write", "qbeast.spark.bridge imports qbeast.spark.sql.d"]
