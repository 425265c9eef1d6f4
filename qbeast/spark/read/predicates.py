"""A user's filter as the two things a read needs: a pruning predicate and a Spark row filter.

Users filter reads and row-level changes with SQL text or a :mod:`qbeast.core.expressions`
predicate. Pruning needs a core expression whose literals have the columns' own types
(:func:`normalize_predicate`, or the parser of :mod:`qbeast.spark.read.sql_parser` for text);
the rows are filtered by Spark with the original condition (the same SQL text, or
:func:`to_spark_column`), so results equal a full scan plus the filter whatever pruning did.
:func:`user_predicate` is the one entry point reads and row-level changes take conditions
through. pyspark is imported only inside the functions that build Spark columns.
"""
from __future__ import annotations

from typing import Any

from qbeast.core import expressions as ex
from qbeast.core.derived import ALLOWED, RESULT_TYPE, Call
from qbeast.core.sql import quote_identifier
from qbeast.errors import InvalidOptionError
from qbeast.spark.read.literals import (
    Untranslatable,
    column_types,
    from_canonical,
    resolve_column,
    typed_literal,
)
from qbeast.spark.read.sql_parser import parse_sql_predicate
from qbeast.spark.read.typed_predicates import all_of, any_of, negation, or_always_true, typed_in


def normalize_predicate(expr: ex.Expression, schema: Any) -> ex.Expression:
    """Retype a user-built core expression's literals to its columns' types (for exact pruning).

    Raises :class:`InvalidOptionError` naming the column when an expression references a column
    the table does not have.
    """
    types = column_types(schema)

    class Retype(ex.ExpressionVisitor):
        def visit_true(self) -> ex.Expression | None:
            return None

        def visit_false(self) -> ex.Expression:
            return ex.AlwaysFalse()

        def visit_and(self, results: list) -> ex.Expression | None:
            return all_of(results)

        def visit_or(self, results: list) -> ex.Expression | None:
            return any_of(results)

        def visit_not(self, result: ex.Expression | None) -> ex.Expression | None:
            return negation(result)

        def _name(self, subject: ex.Subject) -> tuple[ex.Subject, str]:
            column = subject.column if isinstance(subject, Call) else subject
            if column.lower() not in types:
                raise InvalidOptionError(
                    f"filter references column {column!r}, which the table does not have; "
                    f"columns: {', '.join(n for n, _ in types.values())}"
                )
            try:
                return resolve_column(types, subject)
            except Untranslatable as why:
                raise InvalidOptionError(f"filter on {subject}: {why}; allowed: "
                                         f"{', '.join(ALLOWED)} of a string column c") from None

        def visit_comparison(self, predicate: ex.Comparison) -> ex.Expression | None:
            name, type_name = self._name(predicate.column)
            value = from_canonical(type_name, predicate.value)
            try:
                return type(predicate)(name, typed_literal(type_name, value))
            except Untranslatable:
                return None

        def visit_in(self, predicate: ex.In) -> ex.Expression | None:
            name, type_name = self._name(predicate.column)
            try:
                return typed_in(types, name, [from_canonical(type_name, v) for v in predicate.values])
            except Untranslatable:
                return None

        def visit_is_null(self, predicate: ex.IsNull) -> ex.Expression:
            return ex.IsNull(self._name(predicate.column)[0])

        def visit_is_not_null(self, predicate: ex.IsNotNull) -> ex.Expression:
            return ex.IsNotNull(self._name(predicate.column)[0])

    # Without NOTs every node has positive polarity, so dropping unknown AND operands is safe.
    return or_always_true(ex.visit(ex.push_down_not(expr), Retype()))


def spark_column(subject: ex.Subject):
    """The Spark Column of a predicate subject: a column, or Spark's own function of one."""
    from pyspark.sql import functions as F

    if not isinstance(subject, Call):
        return F.col(quote_identifier(subject))
    column = F.col(quote_identifier(subject.column))
    if subject.function == "substring":
        return F.substring(column, *subject.args)
    functions: dict[str, Any] = {"lower": F.lower, "upper": F.upper, "trim": F.trim,
                                 "ltrim": F.ltrim, "rtrim": F.rtrim}
    return functions[subject.function](column)


def to_spark_column(expr: ex.Expression, schema: Any):
    """A ``pyspark.sql.Column`` that keeps exactly the rows ``expr`` keeps (SQL null semantics)."""
    from pyspark.sql import functions as F

    types = column_types(schema)

    def lit(column: ex.Subject, value: Any):
        type_name = RESULT_TYPE if isinstance(column, Call) else types.get(column.lower(), (column, ""))[1]
        spark_value = from_canonical(type_name, value)
        if type_name == "date":
            return F.lit(spark_value).cast("date")
        if type_name == "timestamp_ntz":
            return F.lit(spark_value).cast("timestamp_ntz")
        return F.lit(spark_value)

    class ToColumn(ex.ExpressionVisitor):
        def visit_true(self):
            return F.lit(True)

        def visit_false(self):
            return F.lit(False)

        def visit_and(self, results):
            out = results[0]
            for r in results[1:]:
                out = out & r
            return out

        def visit_or(self, results):
            out = results[0]
            for r in results[1:]:
                out = out | r
            return out

        def visit_not(self, result):
            return ~result

        def visit_comparison(self, p: ex.Comparison):
            column = spark_column(p.column)
            value = lit(p.column, p.value)
            return {
                ex.EqualTo: column == value,
                ex.NotEqualTo: column != value,
                ex.LessThan: column < value,
                ex.LessThanOrEqual: column <= value,
                ex.GreaterThan: column > value,
                ex.GreaterThanOrEqual: column >= value,
            }[type(p)]

        def visit_in(self, p: ex.In):
            if not p.values:
                return F.lit(False)
            return spark_column(p.column).isin([lit(p.column, v) for v in p.values])

        def visit_is_null(self, p: ex.IsNull):
            return spark_column(p.column).isNull()

        def visit_is_not_null(self, p: ex.IsNotNull):
            return spark_column(p.column).isNotNull()

    return ex.visit(expr, ToColumn())


def user_predicate(snapshot: Any, filter: Any) -> tuple[ex.Expression, Any]:  # noqa: A002
    """(pruning predicate, row filter) of a user's ``filter`` argument on a table's snapshot.

    ``filter`` is None (every row), a SQL predicate string (the row filter is the same text,
    which Spark resolves) or a :mod:`qbeast.core.expressions` predicate (the row filter is its
    Spark Column). Reads and row-level changes take their conditions through here.
    """
    if filter is None:
        return ex.AlwaysTrue(), None
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(snapshot.delta.schema)
    if isinstance(filter, str):
        return parse_sql_predicate(filter, schema, known_columns_only=True), filter
    if isinstance(filter, ex.Expression):
        return normalize_predicate(filter, schema), to_spark_column(filter, schema)
    raise InvalidOptionError(
        f"filter must be a SQL predicate string or a qbeast.core.expressions predicate, "
        f"got {type(filter).__name__}"
    )
