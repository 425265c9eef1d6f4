"""dbt's wording of engine errors, made from the errors' fields (no rewriting of engine text)."""
from __future__ import annotations

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.qbeast.engine_errors import (
    DBT_CONFIG_KEYS, allowed_words, model_errors, operation_errors, render_option_error,
)
from dbt.adapters.qbeast.errors import QbeastModelConfigError, QbeastRunOperationError
from qbeast.core.transformers import LinearTransformer, parse_column_stats, parse_columns_to_index
from qbeast.core.types import QDataType
from qbeast.errors import FormatError, InvalidOptionError


def _raised_in_model(error: BaseException) -> BaseException:
    with pytest.raises(Exception) as raised:
        with model_errors("events", "qbeast write"):
            raise error
    return raised.value


@pytest.mark.parametrize(("engine", "dbt"), [
    ("cubeSize", "cube_size"), ("cube_size", "cube_size"), ("columnStats", "column_stats"),
    ("columnsToIndex", "columns_to_index"), ("non_finite", "non_finite"), ("on", "unique_key"),
    ("target_predicate", "incremental_predicates"),
])
def test_the_engine_option_becomes_the_config_key(engine, dbt):
    error = InvalidOptionError("engine words", option=engine, value=0, allowed="a positive integer")
    assert render_option_error("events", error) == (
        f"model events: invalid config {dbt}=0; allowed values: a positive integer")


def test_choices_and_booleans_read_as_in_a_dbt_config():
    assert allowed_words(["fail", "null"]) == "fail, null"
    assert allowed_words([True, False]) == "true, false"
    error = InvalidOptionError("x", option="non_finite", value="zero", allowed=["fail", "null"])
    assert render_option_error("m", error) == "model m: invalid config non_finite='zero'; allowed values: fail, null"


def test_a_missing_value_and_a_missing_allowed_field_are_worded_too():
    missing = InvalidOptionError("x", option="column_stats", value=None, allowed="the stats of column 'a'")
    assert render_option_error("m", missing) == (
        "model m: config column_stats needs a value; allowed values: the stats of column 'a'")
    bare = InvalidOptionError("x", option="cube_size", value=3)
    assert render_option_error("m", bare) == "model m: invalid config cube_size=3"


def test_errors_a_model_cannot_fix_by_config_keep_the_engine_text():
    assert render_option_error("m", InvalidOptionError("no fields")) is None
    assert render_option_error("m", InvalidOptionError("x", option="merge_schema", value=False)) is None
    assert render_option_error("m", ValueError("plain")) is None


def test_model_errors_word_config_errors_from_the_fields():
    engine = InvalidOptionError("cubeSize must be a positive integer, got 0", option="cube_size", value=0,
                                allowed="a positive integer")
    raised = _raised_in_model(engine)
    assert isinstance(raised, QbeastModelConfigError) and raised.__cause__ is engine
    assert raised.msg == "model events: invalid config cube_size=0; allowed values: a positive integer"
    assert "cubeSize" not in str(raised)


def test_model_errors_pass_other_errors_through_unchanged():
    unworded = _raised_in_model(InvalidOptionError("the data has columns ['c'] the table lacks"))
    assert isinstance(unworded, QbeastModelConfigError)
    assert unworded.msg == "model events: the data has columns ['c'] the table lacks"
    failed = _raised_in_model(FormatError("bad tag"))
    assert isinstance(failed, DbtRuntimeError) and str(failed).endswith("model events: qbeast write failed: bad tag")
    disk = _raised_in_model(OSError(28, "No space left on device", "/t/part-0.parquet"))
    assert "qbeast write failed: No space left on device (/t/part-0.parquet)" in str(disk)
    dbt_own = DbtRuntimeError("already worded for dbt")
    assert _raised_in_model(dbt_own) is dbt_own


def test_any_other_failure_is_one_line_naming_the_model_and_the_operation():
    """Never dbt's bare "Unhandled error": an engine bug's empty AssertionError, a KeyError, a
    Spark job's failure with its JVM stack all become one line; the trace stays the cause."""
    empty = AssertionError()
    raised = _raised_in_model(empty)
    assert isinstance(raised, DbtRuntimeError) and raised.__cause__ is empty
    assert raised.msg == "model events: qbeast write failed: AssertionError: (no message)"
    assert _raised_in_model(KeyError("k")).msg == "model events: qbeast write failed: KeyError: k"
    jvm = RuntimeError("An error occurred while calling o52.sql.\n: org.apache.spark.SparkException: "
                       "[TASK_WRITE_FAILED] Task failed while writing rows.\n\tat org.apache.spark"
                       ".sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRowsError(X.scala:1)")
    assert _raised_in_model(jvm).msg == ("model events: qbeast write failed: RuntimeError: An "
                                         "error occurred while calling o52.sql.")


def test_a_servers_java_stack_is_taken_out_of_the_message():
    from dbt.adapters.qbeast.engine_errors import engine_line, without_frames

    server = ("org.apache.hive.service.cli.HiveSQLException: Error running query: "
              "qbeast.rebase.WriteConflictError: merge of s3://b/t lost a race: a file it rewrites "
              "was removed by version 7\n\tat org.apache.spark.sql.hive.thriftserver.SparkExecute"
              "StatementOperation.run(X.scala:1)\n\tat java.base/java.lang.Thread.run(Thread.java:840)"
              "\nCaused by: py4j.Py4JException: ...\n\t... 12 more")
    assert without_frames(server) == ("merge of s3://b/t lost a race: a file it rewrites was "
                                      "removed by version 7")
    assert engine_line(DbtRuntimeError(server)) == without_frames(server)
    # Spark's own multi-line SQL errors keep their lines, only the frames go
    sql = "[UNRESOLVED_COLUMN] A column cannot be resolved.\n'Project ['x]\n\tat a.b(C.java:1)"
    assert without_frames(sql) == "[UNRESOLVED_COLUMN] A column cannot be resolved.\n'Project ['x]"
    with pytest.raises(QbeastRunOperationError) as op:
        with operation_errors("qbeast_optimize"):
            raise FormatError(server)
    assert op.value.msg == ("run-operation qbeast_optimize: merge of s3://b/t lost a race: a file "
                            "it rewrites was removed by version 7")


def test_run_operations_name_the_operation():
    with pytest.raises(QbeastRunOperationError, match="run-operation qbeast_vacuum: bad tag"):
        with operation_errors("qbeast_vacuum"):
            raise FormatError("bad tag")


@pytest.mark.parametrize(("stats", "expected"), [
    ({"a_min": "low"}, "invalid config column_stats={'a_min': 'low'}; allowed values: a number in 'a_min' (int column)"),
    ({"a_min": 1.5}, "invalid config column_stats={'a_min': 1.5}; allowed values: an integer in 'a_min'"),
    ({"b_min": 0}, "invalid config column_stats={'b_min': 0}; allowed values: keys a_min, a_max"),
    ("[1]", "invalid config column_stats='[1]'; allowed values: a JSON object"),
])
def test_the_engine_column_stats_errors_render_in_the_config_key(stats, expected):
    with pytest.raises(InvalidOptionError) as raised:
        parse_column_stats(stats, [LinearTransformer("a", QDataType.INTEGER)])
    rendered = render_option_error("m", raised.value)
    assert rendered is not None and rendered.startswith(f"model m: {expected}")
    assert "columnStats" not in rendered


@pytest.mark.parametrize(("spec", "value"), [
    ("a,,b", "a,,b"), (["a:zorder"], "a:zorder"), (["a", "a"], ["a", "a"]), ([3], [3]), ("", ""),
])
def test_the_engine_columns_to_index_errors_render_in_the_config_key(spec, value):
    with pytest.raises(InvalidOptionError) as raised:
        parse_columns_to_index(spec)
    rendered = render_option_error("m", raised.value)
    assert rendered is not None and rendered.startswith(f"model m: invalid config columns_to_index={value!r}")
    assert "allowed values: " in rendered and "columnsToIndex" not in rendered


def test_every_engine_option_dbt_used_to_rewrite_is_mapped():
    # the spellings the old text replacement covered (columnStats, columnsToIndex, cubeSize)
    for engine in ("columnStats", "columnsToIndex", "cubeSize"):
        assert engine in DBT_CONFIG_KEYS


def test_a_spark_analysis_error_loses_its_query_plan():
    from dbt.adapters.qbeast.engine_errors import statement_error, without_plan

    message = ("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with "
               "name `no_such_column` cannot be resolved. Did you mean one of the following? "
               "[`id`, `k`]. SQLSTATE: 42703; line 1 pos 22;\n"
               "'Project [id#1L, 'no_such_column]\n+- Range (0, 10, step=1, splits=Some(2))\n")
    words = message.split("\n", 1)[0].removesuffix(";")  # the position in the query stays
    assert words.endswith("SQLSTATE: 42703; line 1 pos 22")
    assert without_plan(message) == words
    assert statement_error(Exception(message)) == words
    # a message without a plan, or several lines of a message's own, is kept as it is
    assert without_plan("one line") == "one line"
    two = "first line of the engine's words\nsecond line"
    assert without_plan(two) == two
    # without a position
    assert without_plan("[X] bad. SQLSTATE: 42000;\nProject [a]") == "[X] bad. SQLSTATE: 42000"


def test_a_thrift_error_is_the_servers_message_without_its_java_stack():
    from types import SimpleNamespace

    from dbt.adapters.qbeast.engine_errors import statement_error

    status = SimpleNamespace(errorMessage=(
        "Error running query: org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] "
        "The table or view `nope` cannot be found. SQLSTATE: 42P01; line 1 pos 14;\n"
        "'Project [*]\n+- 'UnresolvedRelation [nope], [], false\n\n"
        "\tat org.apache.spark.sql.hive.thriftserver.HiveThriftServerErrors$.runningQueryError(x)"))
    assert statement_error(Exception(SimpleNamespace(status=status))) == (
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `nope` cannot be found. SQLSTATE: 42P01; "
        "line 1 pos 14")


def test_a_run_operation_refusal_names_the_argument_as_its_args_spell_it():
    from qbeast import InvalidOptionError

    from dbt.adapters.qbeast.engine_errors import operation_errors

    refusal = InvalidOptionError("too short. Pass allow_short_retention=True to do it anyway.",
                                 option="allow_short_retention", value=False, allowed=True)
    with pytest.raises(QbeastRunOperationError) as raised:
        with operation_errors("qbeast_vacuum"):
            raise refusal
    assert str(raised.value).endswith(
        "run-operation qbeast_vacuum: too short. Pass allow_short_retention: true (in --args) to "
        "do it anyway.")
