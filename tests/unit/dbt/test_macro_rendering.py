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
    context = _context(Recorder(qbeast_operation_words=lambda op: f"run-operation {op}"))
    with pytest.raises(CompilerError, match="run-operation qbeast_index_metrics: invalid argument "
                                            "relation_or_path=.*allowed values: a model name of this project"):
        _call("run_operations.sql", "qbeast_index_metrics", context, target)
    # the refusal's words are the adapter's (a macro in a model is not called a run-operation)
    assert context["adapter"].calls == [("qbeast_operation_words", "qbeast_index_metrics")]


def test_convert_and_upgrade_pass_their_arguments_through():
    adapter = Recorder(qbeast_table_location="/t")
    _call("run_operations.sql", "qbeast_convert", _context(adapter), "/pq", ["id"], 20, "parquet")
    _call("run_operations.sql", "qbeast_upgrade_format", _context(adapter), "/t", dry_run=True)
    assert adapter.calls == [("qbeast_convert", "/pq", ["id"], 20, "parquet"),
                             ("qbeast_table_location", "qbeast_upgrade_format", "/t"),
                             ("qbeast_upgrade_format", "/t", True)]


# -- the qbeast materialization -------------------------------------------------------------------


TARGET = Relation("analytics", "events")
QBEAST_EVENTS = Relation("analytics", "events", is_qbeast=True)


def _materialization_context(*, existing: Relation | None, incremental: bool = True,
                             full_refresh: bool = False, contract: bool = False,
                             sql_header: str | None = None,
                             warnings: tuple[str, ...] = (), empty: bool = False) -> dict[str, Any]:
    """The context of the qbeast materialization; hooks, results and warnings are recorded."""
    adapter = Recorder(
        qbeast_model_config=SimpleNamespace(warnings=warnings),
        get_relation=existing,
        qbeast_is_incremental=incremental,
        qbeast_write="OK",
    )
    settings = {"sql_header": sql_header, "contract": SimpleNamespace(enforced=contract)}
    return _context(
        adapter,
        model={"alias": "events", "name": "events", "language": "sql"}, database=None,
        schema="analytics", compiled_code="select 1 as id", pre_hooks=["pre"], post_hooks=["post"],
        config=SimpleNamespace(get=lambda key, default=None: settings.get(key, default)),
        should_full_refresh=lambda: full_refresh,
        api=SimpleNamespace(Relation=SimpleNamespace(create=lambda **kwargs: TARGET)),
        run_hooks=lambda hooks: adapter.calls.append(("run_hooks", hooks)) or "",
        store_result=lambda name, response: adapter.calls.append(("store_result", name, response)),
        exceptions=SimpleNamespace(raise_compiler_error=_raise_compiler_error,
                                   warn=lambda note: adapter.calls.append(("warn", note))),
        get_assert_columns_equivalent=lambda sql: adapter.calls.append(("assert_columns", sql)) or "",
        get_select_subquery=lambda sql: f"select id from ({sql})",
        flags=SimpleNamespace(EMPTY=empty),  # dbt's --empty
    )


@pytest.mark.parametrize("empty", [False, True])  # dbt's --empty goes to the write as it is
@pytest.mark.parametrize(
    ("existing", "strategy_says", "full_refresh", "incremental"),
    [
        (None, False, False, False),  # the first run creates the table
        (QBEAST_EVENTS, True, False, True),  # an incremental strategy over this model's table
        (QBEAST_EVENTS, False, False, False),  # no strategy: the table is rebuilt
        (QBEAST_EVENTS, True, True, False),  # --full-refresh rebuilds whatever the strategy
    ],
)
def test_materialization_hands_the_write_the_incremental_decision(
        existing, strategy_says, full_refresh, incremental, empty):
    context = _materialization_context(existing=existing, incremental=strategy_says,
                                       full_refresh=full_refresh, empty=empty)
    result = _call("qbeast_materialization.sql", "materialization_qbeast_qbeast", context)
    assert result == {"relations": [TARGET]}
    adapter = context["adapter"]
    config = adapter.returns["qbeast_model_config"]
    asked = [] if full_refresh else [("qbeast_is_incremental", context["model"], existing)]
    assert adapter.calls == [
        ("qbeast_model_config", context["model"]),
        ("get_relation", None, "analytics", "events"),
        *asked,
        ("run_hooks", ["pre"]),
        ("qbeast_write", context["model"], TARGET, existing, "select 1 as id", config, incremental,
         empty),
        ("store_result", "main", "OK"),
        ("run_hooks", ["post"]),
    ]


def test_materialization_checks_an_enforced_contract_before_writing_its_query():
    context = _materialization_context(existing=None, contract=True)
    _call("qbeast_materialization.sql", "materialization_qbeast_qbeast", context)
    adapter = context["adapter"]
    names = [c[0] for c in adapter.calls]
    assert ("assert_columns", "select 1 as id") in adapter.calls
    assert names.index("assert_columns") < names.index("qbeast_write")
    # the written query is the contract's column list over the model's query
    assert adapter.called("qbeast_write")[0][3] == "select id from (select 1 as id)"


def test_materialization_passes_config_warnings_on():
    context = _materialization_context(existing=None, warnings=("write_mode is deprecated",))
    _call("qbeast_materialization.sql", "materialization_qbeast_qbeast", context)
    assert context["adapter"].called("warn") == [("write_mode is deprecated",)]


@pytest.mark.parametrize(
    ("materialized", "relation", "full_refresh", "expected", "asks_adapter"),
    [
        ("qbeast", QBEAST_EVENTS, False, True, True),  # the adapter's answer (strategy, location)
        ("qbeast", QBEAST_EVENTS, False, False, True),
        ("qbeast", QBEAST_EVENTS, True, False, False),
        ("qbeast", None, False, False, False),
        ("qbeast", Relation("s", "t", is_qbeast=True, type="view"), False, False, False),
        # dbt-spark's spelling of a qbeast model: the adapter decides as for `qbeast`
        ("incremental+qbeast", QBEAST_EVENTS, False, True, True),
        ("incremental", Relation("s", "t"), False, True, False),
        ("incremental", Relation("s", "t", is_qbeast=True), False, False, False),  # rebuilt first
        ("table", Relation("s", "t"), False, False, False),
    ],
)
def test_is_incremental(materialized, relation, full_refresh, expected, asks_adapter):
    qbeast_model = materialized == "qbeast" or materialized.endswith("+qbeast")
    model = SimpleNamespace(config=SimpleNamespace(materialized=materialized.split("+")[0]))
    this = SimpleNamespace(database=None, schema="s", table="t")
    adapter = Recorder(get_relation=relation, qbeast_is_incremental=expected,
                       qbeast_is_qbeast_model=qbeast_model)
    context = _context(adapter, model=model, this=this, should_full_refresh=lambda: full_refresh)
    assert _call("qbeast_materialization.sql", "is_incremental", context) is expected
    asked = [("qbeast_is_qbeast_model", model)] if relation is not None and relation.type == "table" \
        and not full_refresh else []
    if asks_adapter:
        asked.append(("qbeast_is_incremental", model, relation))
    assert adapter.calls == [("get_relation", None, "s", "t"), *asked]
