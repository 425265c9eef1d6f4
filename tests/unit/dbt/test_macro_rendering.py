"""The adapter's Jinja macros rendered with a fake adapter and context: no Spark, no dbt run.

dbt-databricks tests its macros this way: load the macro files into dbt's Jinja environment, give
the template the names dbt would (``adapter``, ``config``, ``exceptions``, ``return``, ...) as
test doubles, call a macro and assert on the SQL it renders and on the adapter calls it makes.
The functional tests (tests/functional) run the same macros end to end on Spark; these pin each
branch of their logic in milliseconds.
"""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from dbt_common.clients.jinja import MacroReturn, get_environment

MACROS = Path(__file__).resolve().parents[3] / "dbt" / "include" / "qbeast" / "macros"


class CompilerError(Exception):
    """What the fake ``exceptions.raise_compiler_error`` raises."""


def _raise_compiler_error(message: str) -> None:
    raise CompilerError(message)


def _return(value: Any) -> None:
    raise MacroReturn(value)  # dbt's own way out of a macro with a value


class Recorder:
    """A fake adapter: every method call is recorded; ``returns`` gives results by method name.

    (dbt renders macros in a sandboxed Jinja environment, which refuses to call mocks.)
    """

    def __init__(self, **returns: Any) -> None:
        self.calls: list[tuple] = []
        self.returns = returns

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("unsafe_callable", "alters_data"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, *args, *kwargs.values()))
            result = self.returns.get(name)
            return result(*args, **kwargs) if callable(result) else result

        return method

    def called(self, name: str) -> list[tuple]:
        return [call[1:] for call in self.calls if call[0] == name]


class Relation:
    """A stand-in for a dbt relation: renders as ``schema.identifier``."""

    def __init__(self, schema: str, identifier: str, *, is_qbeast: bool = False,
                 type: str = "table") -> None:  # noqa: A002 - dbt's attribute name
        self.schema, self.identifier, self.is_qbeast, self.type = schema, identifier, is_qbeast, type
        self.database = None

    def __str__(self) -> str:
        return f"{self.schema}.{self.identifier}"


def _context(adapter: Recorder | None = None, **names: Any) -> dict[str, Any]:
    context: dict[str, Any] = {
        "adapter": adapter or Recorder(),
        "exceptions": SimpleNamespace(raise_compiler_error=_raise_compiler_error),
        "return": _return,
        "execute": True,
        "graph": {"nodes": {}},
    }
    context.update(names)
    return context


def _macro(module: dict[str, Any], name: str) -> Any:
    """How dbt hands a macro to other macros: calling it gives its ``return(...)`` value."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(module["loaded"], f"dbt_macro__{name}")(*args, **kwargs)
        except MacroReturn as returned:
            return returned.value

    return call


def _call(file: str, macro: str, context: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    """Render ``macro`` of ``file`` in ``context``: its ``return(...)`` value, else its text."""
    source = (MACROS / file).read_text()
    module: dict[str, Any] = {}
    for name in re.findall(r"{%-?\s*macro\s+(\w+)", source):  # the file's macros see each other
        context[name] = _macro(module, name)
    module["loaded"] = get_environment().from_string(source, globals=context).module
    result = _macro(module, macro)(*args, **kwargs)
    return str(result).strip() if isinstance(result, str) else result


# -- qbeast_sample --------------------------------------------------------------------------------


def test_qbeast_sample_expands_to_the_engine_row_filter():
    adapter = Recorder(qbeast_sample_predicate="hash(`a`, `b`) < -1717986918")
    events = Relation("analytics", "events")
    sql = _call("sampling.sql", "qbeast_sample", _context(adapter), events, 0.1)
    assert sql == "(select * from analytics.events where hash(`a`, `b`) < -1717986918)"
    assert adapter.calls == [("qbeast_sample_predicate", events, 0.1)]


def test_qbeast_sample_while_parsing_is_the_plain_relation():
    context = _context(execute=False)
    assert _call("sampling.sql", "qbeast_sample", context, Relation("s", "t"), 1) == "s.t"
    assert context["adapter"].calls == []


@pytest.mark.parametrize("fraction", [0, 1.5, -0.1, True, "0.1", None])
def test_qbeast_sample_refuses_fractions_outside_0_1(fraction):
    context = _context()
    with pytest.raises(CompilerError, match=r"allowed values: a number in \(0, 1\]"):
        _call("sampling.sql", "qbeast_sample", context, Relation("s", "t"), fraction)
    assert context["adapter"].calls == []


# -- run-operations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/data/events", ("qbeast_optimize", "/data/events")),
        (" file:/data/events ", ("qbeast_optimize", "file:/data/events")),
        ("analytics.events", ("qbeast_optimize", "analytics", "events")),
        ("db.analytics.events", ("qbeast_optimize", "analytics", "events")),
        ("events", ("qbeast_optimize", "marts", "events_v2")),
    ],
)
def test_run_operations_resolve_their_target(target, expected):
    graph = {"nodes": {
        "model.p.events": {"resource_type": "model", "name": "events", "schema": "marts",
                           "alias": "events_v2"},
        "seed.p.events": {"resource_type": "seed", "name": "events", "schema": "seeds",
                          "alias": None},
    }}
    adapter = Recorder(qbeast_table_location="/resolved", qbeast_optimize={"commits": []})
    result = _call("run_operations.sql", "qbeast_optimize", _context(adapter, graph=graph), target,
                   fraction=0.5)
    assert result == {"commits": []}
    assert adapter.calls == [("qbeast_table_location", *expected),
                             ("qbeast_optimize", "/resolved", None, 0.5, None)]


def test_run_operations_take_a_relation():
    adapter = Recorder(qbeast_table_location="/resolved")
    _call("run_operations.sql", "qbeast_vacuum", _context(adapter), Relation("s", "t"), 24, True,
          True)
    assert adapter.calls == [("qbeast_table_location", "qbeast_vacuum", "s", "t"),
                             ("qbeast_vacuum", "/resolved", 24, True, True)]


@pytest.mark.parametrize("target", ["missing_model", None, 3])
def test_run_operations_refuse_unknown_targets(target):
    context = _context()
    with pytest.raises(CompilerError, match="invalid argument relation_or_path=.*allowed values: "
                                            "a model name of this project"):
        _call("run_operations.sql", "qbeast_index_metrics", context, target)
    assert context["adapter"].calls == []


def test_convert_and_upgrade_pass_their_arguments_through():
    adapter = Recorder(qbeast_table_location="/t")
    _call("run_operations.sql", "qbeast_convert", _context(adapter), "/pq", ["id"], 20, "parquet")
    _call("run_operations.sql", "qbeast_upgrade_format", _context(adapter), "/t", dry_run=True)
    assert adapter.calls == [("qbeast_convert", "/pq", ["id"], 20, "parquet"),
                             ("qbeast_table_location", "qbeast_upgrade_format", "/t"),
                             ("qbeast_upgrade_format", "/t", True)]


# -- the qbeast materialization -------------------------------------------------------------------


TARGET = Relation("analytics", "events")


def _materialization_context(*, existing: Relation | None, write_mode: str = "append",
                             full_refresh: bool = False) -> dict[str, Any]:
    """The context of the qbeast materialization; hooks and results are recorded as calls."""
    adapter = Recorder(
        qbeast_model_config=SimpleNamespace(write_mode=write_mode),
        get_relation=existing,
        qbeast_location="/warehouse/analytics/events",
        qbeast_write="OK",
    )
    return _context(
        adapter,
        model={"alias": "events", "name": "events"}, database=None, schema="analytics",
        compiled_code="select 1 as id", pre_hooks=["pre"], post_hooks=["post"],
        should_full_refresh=lambda: full_refresh,
        api=SimpleNamespace(Relation=SimpleNamespace(create=lambda **kwargs: TARGET)),
        run_hooks=lambda hooks: adapter.calls.append(("run_hooks", hooks)) or "",
        store_result=lambda name, response: adapter.calls.append(("store_result", name, response)),
    )


@pytest.mark.parametrize(
    ("existing", "write_mode", "full_refresh", "mode"),
    [
        (None, "append", False, "overwrite"),  # the first run creates the table
        (Relation("analytics", "events", is_qbeast=True), "append", False, "append"),
        (Relation("analytics", "events", is_qbeast=True), "append", True, "overwrite"),
        (Relation("analytics", "events", is_qbeast=True), "overwrite", False, "overwrite"),
    ],
)
def test_materialization_writes_in_the_mode_the_config_and_the_table_call_for(
        existing, write_mode, full_refresh, mode):
    context = _materialization_context(existing=existing, write_mode=write_mode,
                                       full_refresh=full_refresh)
    result = _call("qbeast_materialization.sql", "materialization_qbeast_qbeast", context)
    assert result == {"relations": [TARGET]}
    adapter = context["adapter"]
    config = adapter.returns["qbeast_model_config"]
    assert adapter.calls == [
        ("qbeast_model_config", context["model"]),
        ("get_relation", None, "analytics", "events"),
        ("qbeast_location", TARGET, config),
        ("run_hooks", ["pre"]),
        ("qbeast_write", TARGET, "select 1 as id", config, "/warehouse/analytics/events", mode),
        ("store_result", "main", "OK"),
        ("run_hooks", ["post"]),
    ]


def test_materialization_replaces_a_view_of_the_same_name():
    view = Relation("analytics", "events", type="view")
    context = _materialization_context(existing=view)
    _call("qbeast_materialization.sql", "materialization_qbeast_qbeast", context)
    adapter = context["adapter"]
    assert adapter.called("drop_relation") == [(view,)]
    assert [c[0] for c in adapter.calls].index("drop_relation") < [
        c[0] for c in adapter.calls].index("qbeast_write")
    assert adapter.called("qbeast_write")[0][-1] == "overwrite"


@pytest.mark.parametrize(
    ("materialized", "write_mode", "relation", "full_refresh", "expected"),
    [
        ("qbeast", None, Relation("s", "t", is_qbeast=True), False, True),
        ("qbeast", " Append ", Relation("s", "t", is_qbeast=True), False, True),
        ("qbeast", "overwrite", Relation("s", "t", is_qbeast=True), False, False),
        ("qbeast", None, Relation("s", "t", is_qbeast=False), False, False),
        ("qbeast", None, Relation("s", "t", is_qbeast=True), True, False),
        ("qbeast", None, None, False, False),
        ("qbeast", None, Relation("s", "t", is_qbeast=True, type="view"), False, False),
        ("incremental", None, Relation("s", "t"), False, True),
        ("table", None, Relation("s", "t"), False, False),
    ],
)
def test_is_incremental(materialized, write_mode, relation, full_refresh, expected):
    config = {"materialized": materialized, "write_mode": write_mode}
    model = SimpleNamespace(config=SimpleNamespace(
        materialized=materialized, get=lambda key, default=None: config.get(key, default)))
    this = SimpleNamespace(database=None, schema="s", table="t")
    context = _context(Recorder(get_relation=relation), model=model, this=this,
                       should_full_refresh=lambda: full_refresh)
    assert _call("qbeast_materialization.sql", "is_incremental", context) is expected
    assert context["adapter"].calls == [("get_relation", None, "s", "t")]
