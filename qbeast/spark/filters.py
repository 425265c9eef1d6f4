"""Turning the predicates users and Spark give us into ``qbeast.core.expressions`` and back.

Two sources of predicates reach the reader, and pruning must treat them alike:

* simple SQL predicate strings given to ``QbeastTable.to_df(filter="...")``;
* core expressions built in Python.

Everything converts to core expressions with *canonical* literals typed by the column's Spark
type (a string ``'2024-01-31'`` compared with a ``date`` column becomes that date's epoch millis, an
integral float on an ``int`` column becomes an ``int``), because transformations and the hashed
columns' point lookups only give the right coordinates for values of the column's own type.

The rule that makes pruning safe: anything we cannot translate exactly becomes "unknown", and an
unknown part only ever widens the selection (it is dropped from an AND, it makes an OR or a NOT
unknown). Spark still applies every original predicate to the rows, so results never change.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from qbeast.core import expressions as ex
from qbeast.core.columns import ColumnTypes
from qbeast.core.columns import column_types as json_column_types
from qbeast.core.sql import quote_identifier
from qbeast.errors import InvalidOptionError

logger = logging.getLogger("qbeast.spark.filters")

_INTEGRAL = {"byte", "short", "integer", "long", "tinyint", "smallint", "int", "bigint"}
_FRACTIONAL = {"float", "double"}


class _Unknown(Exception):
    """A predicate (part) that cannot be translated exactly; it must not prune anything."""


# -- column types ---------------------------------------------------------------------------------


def column_types(schema: Any) -> ColumnTypes:
    """Lower-cased top-level column names -> ``(name, type)`` of a ``StructType`` or JSON schema.

    The rule lives in :func:`qbeast.core.columns.column_types` (on the JSON form the Delta log
    stores); a ``pyspark`` ``StructType`` is converted to that form first.
    """
    if hasattr(schema, "jsonValue"):
        schema = schema.jsonValue()
    return json_column_types(schema)


def _resolve(types: dict[str, tuple[str, str]], name: str) -> tuple[str, str]:
    try:
        return types[name.lower()]
    except KeyError:
        raise _Unknown(f"column {name!r} is not in the table") from None


def _parse_date(text: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise _Unknown(f"not a date literal: {text!r}") from None


def _parse_timestamp(text: str) -> _dt.datetime:
    value = text.strip().replace(" ", "T", 1)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = _dt.datetime.fromisoformat(value)
    except ValueError:
        raise _Unknown(f"not a timestamp literal: {text!r}") from None
    # The engine pins the session time zone to UTC, so zone-less literals are UTC.
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=_dt.timezone.utc)


def typed_literal(type_name: str, value: Any) -> Any:
    """``value`` as the Python value Spark would compare with a column of ``type_name``.

    Raises ``_Unknown`` when the comparison would involve a cast we do not model (so the predicate
    must not prune).
    """
    if value is None or isinstance(value, (list, tuple, dict, bytes, bytearray)):
        raise _Unknown("unsupported literal")
    if type_name in _INTEGRAL:
        if isinstance(value, bool):
            raise _Unknown("boolean against integral column")
        if isinstance(value, int):
            return value
        if isinstance(value, (float, decimal.Decimal)) and value == int(value):
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise _Unknown("non-integral string against integral column") from None
        raise _Unknown("non-integral literal against integral column")
    if type_name in _FRACTIONAL or type_name.startswith("decimal"):
        if isinstance(value, bool):
            raise _Unknown("boolean against numeric column")
        if isinstance(value, (int, float, decimal.Decimal)):
            return float(value) if type_name in _FRACTIONAL else decimal.Decimal(value)
        if isinstance(value, str):
            try:
                return float(value) if type_name in _FRACTIONAL else decimal.Decimal(value.strip())
            except (ValueError, decimal.InvalidOperation):
                raise _Unknown("non-numeric string against numeric column") from None
        raise _Unknown("unsupported literal for numeric column")
    if type_name == "string":
        if isinstance(value, str):
            return value
        raise _Unknown("non-string literal against string column")
    if type_name == "date":
        if isinstance(value, _dt.datetime):
            raise _Unknown("timestamp literal against date column")
        if isinstance(value, _dt.date):
            return value
        if isinstance(value, str):
            return _parse_date(value)
        raise _Unknown("unsupported literal for date column")
    if type_name in ("timestamp", "timestamp_ntz"):
        if isinstance(value, _dt.datetime):
            if type_name == "timestamp_ntz" and value.tzinfo is not None:
                value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            return value
        if isinstance(value, _dt.date):
            return _dt.datetime(value.year, value.month, value.day, tzinfo=_dt.timezone.utc)
        if isinstance(value, str):
            return _parse_timestamp(value)
        raise _Unknown("unsupported literal for timestamp column")
    if type_name == "boolean":
        if isinstance(value, bool):
            return value
        raise _Unknown("non-boolean literal against boolean column")
    raise _Unknown(f"columns of type {type_name} are not used for pruning")


# -- combinators that keep "unknown" conservative ---------------------------------------------


def _and(parts: Iterable[ex.Expression | None], negated: bool = False) -> ex.Expression | None:
    """AND of translated parts; ``negated`` says an odd number of NOTs encloses it.

    Dropping an unknown operand widens an AND, which is safe only when nothing negates it: under a
    NOT the AND acts as an OR (De Morgan), where one unknown makes the whole node unknown.
    """
    parts = list(parts)
    if negated:
        return _or_like(parts, ex.And, ex.AlwaysTrue, ex.AlwaysFalse)
    return _and_like(parts, ex.And, ex.AlwaysTrue, ex.AlwaysFalse)


def _or(parts: Sequence[ex.Expression | None], negated: bool = False) -> ex.Expression | None:
    """OR of translated parts (unknown parts make it unknown unless a NOT encloses it)."""
    parts = list(parts)
    if negated:
        return _and_like(parts, ex.Or, ex.AlwaysFalse, ex.AlwaysTrue)
    return _or_like(parts, ex.Or, ex.AlwaysFalse, ex.AlwaysTrue)


def _and_like(parts: list, node: type, neutral: type, absorbing: type) -> ex.Expression | None:
    """Combine dropping unknown and neutral operands (the result may only get wider)."""
    known = [p for p in parts if p is not None and not isinstance(p, neutral)]
    if any(isinstance(p, absorbing) for p in known):
        return absorbing()
    if not known:
        return None if any(p is None for p in parts) else neutral()
    return known[0] if len(known) == 1 else node(*known)


def _or_like(parts: list, node: type, neutral: type, absorbing: type) -> ex.Expression | None:
    """Combine where any unknown operand makes the result unknown."""
    if any(p is None for p in parts):
        return None
    known = [p for p in parts if not isinstance(p, neutral)]
    if any(isinstance(p, absorbing) for p in known):
        return absorbing()
    if not known:
        return neutral()
    return known[0] if len(known) == 1 else node(*known)


def _not(part: ex.Expression | None) -> ex.Expression | None:
    return None if part is None else ex.Not(part)


def _finish(expr: ex.Expression | None) -> ex.Expression:
    return ex.AlwaysTrue() if expr is None else expr


_COMPARISON = {
    "=": ex.EqualTo,
    "==": ex.EqualTo,
    "<=>": ex.EqualTo,
    "<>": ex.NotEqualTo,
    "!=": ex.NotEqualTo,
    "<": ex.LessThan,
    "<=": ex.LessThanOrEqual,
    ">": ex.GreaterThan,
    ">=": ex.GreaterThanOrEqual,
}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _comparison(types: dict, column: str, op: str, value: Any) -> ex.Expression:
    name, type_name = _resolve(types, column)
    if value is None:
        if op == "<=>":
            return ex.IsNull(name)
        return ex.AlwaysFalse()  # a comparison with NULL is never true
    return _COMPARISON[op](name, typed_literal(type_name, value))


def _in(types: dict, column: str, values: Iterable[Any]) -> ex.Expression:
    name, type_name = _resolve(types, column)
    typed = [typed_literal(type_name, v) for v in values if v is not None]
    if not typed:
        return ex.AlwaysFalse()
    return ex.In(name, tuple(typed))


def _prefix_range(types: dict, column: str, prefix: str) -> ex.Expression:
    """``col LIKE 'prefix%'`` as the string range it implies (code point order = UTF-8 order)."""
    name, type_name = _resolve(types, column)
    if type_name != "string" or not prefix:
        raise _Unknown("prefix filter on a non-string column")
    lower = ex.GreaterThanOrEqual(name, prefix)
    last = ord(prefix[-1])
    if last >= 0x10FFFF:
        return lower
    return ex.And(lower, ex.LessThan(name, prefix[:-1] + chr(last + 1)))


# -- simple SQL predicates -------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[LlDdSsYy]?(?:BD|bd)?)
      | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
      | (?P<quoted>`(?:[^`]|``)+`)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<op><=>|<=|>=|<>|!=|==|=|<|>|\(|\)|,)
      | (?P<other>\S)
    )""",
    re.VERBOSE,
)


def _tokenize(text: str) -> list[tuple[str, Any]]:
    tokens: list[tuple[str, Any]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:  # pragma: no cover - the pattern matches any non-space character
            break
        pos = match.end()
        kind = match.lastgroup or "other"  # every alternative of the pattern is a named group
        raw = match.group(kind)
        if kind == "number":
            body = raw.rstrip("LlDdSsYyBb")
            value: Any = decimal.Decimal(body) if any(c in body for c in ".eE") else int(body)
            if isinstance(value, decimal.Decimal) and raw[-1:] in ("D", "d"):
                value = float(body)
            tokens.append(("lit", value))
        elif kind == "string":
            quote = raw[0]
            body = raw[1:-1].replace(quote * 2, quote)
            body = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)
            tokens.append(("lit", body))
        elif kind == "quoted":
            tokens.append(("ident", raw[1:-1].replace("``", "`")))
        elif kind == "word":
            upper = raw.upper()
            if upper in ("AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE",
                         "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"):
                tokens.append(("kw", upper))
            else:
                tokens.append(("ident", raw))
        elif kind == "op":
            tokens.append(("op", raw))
        else:
            tokens.append(("other", raw))
    tokens.append(("end", None))
    return tokens


class _SqlPredicateParser:
    """Recursive descent over the subset of Spark SQL predicates that can prune files.

    Grammar: ``or := and (OR and)*``, ``and := not (AND not)*``, ``not := NOT not | atom``,
    ``atom := '(' or ')' | operand (cmp operand | [NOT] BETWEEN a AND b | [NOT] IN (...) |
    IS [NOT] NULL | [NOT] LIKE 'p%')``. Any other atom (function calls, arithmetic, column-to-
    column comparisons) is skipped as unknown.
    """

    def __init__(self, text: str, types: dict) -> None:
        self.tokens = _tokenize(text)
        self.pos = 0
        self.types = types

    # token helpers
    def peek(self, offset: int = 0) -> tuple[str, Any]:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def take(self) -> tuple[str, Any]:
        token = self.peek()
        self.pos += 1
        return token

    def at_kw(self, word: str) -> bool:
        return self.peek() == ("kw", word)

    def expect(self, token: tuple[str, Any]) -> None:
        if self.take() != token:
            raise _Unknown(f"expected {token[1]!r}")

    def parse(self) -> ex.Expression | None:
        expr = self.parse_or(False)
        if self.peek()[0] != "end":
            raise _Unknown("trailing input")
        return expr

    def parse_or(self, negated: bool) -> ex.Expression | None:
        parts = [self.parse_and(negated)]
        while self.at_kw("OR"):
            self.take()
            parts.append(self.parse_and(negated))
        return parts[0] if len(parts) == 1 else _or(parts, negated)

    def parse_and(self, negated: bool) -> ex.Expression | None:
        parts = [self.parse_not(negated)]
        while self.at_kw("AND"):
            self.take()
            parts.append(self.parse_not(negated))
        return parts[0] if len(parts) == 1 else _and(parts, negated)

    def parse_not(self, negated: bool) -> ex.Expression | None:
        if self.at_kw("NOT"):
            self.take()
            return _not(self.parse_not(not negated))
        start = self.pos
        try:
            return self.parse_atom(negated)
        except _Unknown:
            self.pos = start
            self.skip_unknown_atom()
            return None

    def skip_unknown_atom(self) -> None:
        """Skip to the end of an atom we cannot translate (next top-level AND/OR, or ')')."""
        depth = 0
        in_between = False
        while True:
            kind, value = self.peek()
            if kind == "end":
                return
            if kind == "op" and value == "(":
                depth += 1
            elif kind == "op" and value == ")":
                if depth == 0:
                    return
                depth -= 1
            elif depth == 0 and (kind, value) == ("kw", "BETWEEN"):
                in_between = True
            elif depth == 0 and (kind, value) == ("kw", "AND") and in_between:
                in_between = False
            elif depth == 0 and kind == "kw" and value in ("AND", "OR"):
                return
            self.take()

    def parse_atom(self, negated_context: bool) -> ex.Expression | None:
        result: ex.Expression
        if self.peek() == ("op", "("):
            self.take()
            inner = self.parse_or(negated_context)
            self.expect(("op", ")"))
            return inner
        left = self.parse_operand()
        negated = False
        if self.at_kw("NOT"):
            self.take()
            negated = True
        kind, value = self.peek()
        if kind == "kw" and value == "BETWEEN":
            self.take()
            low = self.parse_operand()
            self.expect(("kw", "AND"))
            high = self.parse_operand()
            result = ex.And(self.compare(left, ">=", low), self.compare(left, "<=", high))
        elif kind == "kw" and value == "IN":
            self.take()
            self.expect(("op", "("))
            items = [self.parse_operand()]
            while self.peek() == ("op", ","):
                self.take()
                items.append(self.parse_operand())
            self.expect(("op", ")"))
            column = self.column_of(left)
            if any(kind_ != "lit" for kind_, _ in items):
                raise _Unknown("IN list with non-literal items")
            result = _in(self.types, column, [v for _, v in items])
        elif kind == "kw" and value == "LIKE":
            self.take()
            pattern = self.parse_operand()
            if pattern[0] != "lit" or not isinstance(pattern[1], str):
                raise _Unknown("LIKE without a string pattern")
            text = pattern[1]
            if "_" in text or "\\" in text or not text.endswith("%") or "%" in text[:-1]:
                raise _Unknown("only LIKE 'prefix%' is used for pruning")
            result = _prefix_range(self.types, self.column_of(left), text[:-1])
        elif kind == "kw" and value == "IS" and not negated:
            self.take()
            is_not = False
            if self.at_kw("NOT"):
                self.take()
                is_not = True
            self.expect(("kw", "NULL"))
            name = _resolve(self.types, self.column_of(left))[0]
            return ex.IsNotNull(name) if is_not else ex.IsNull(name)
        elif kind == "op" and value in _COMPARISON and not negated:
            self.take()
            right = self.parse_operand()
            return self.compare(left, value, right)
        else:
            raise _Unknown("not a predicate")
        return _not(result) if negated else result

    def parse_operand(self) -> tuple[str, Any]:
        kind, value = self.take()
        if kind == "lit":
            return ("lit", value)
        if kind == "ident":
            if self.peek() == ("op", "("):
                raise _Unknown("function calls are not used for pruning")
            return ("col", value)
        if kind == "kw" and value in ("TRUE", "FALSE"):
            return ("lit", value == "TRUE")
        if kind == "kw" and value == "NULL":
            return ("lit", None)
        if kind == "kw" and value in ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"):
            lit_kind, text = self.take()
            if lit_kind != "lit" or not isinstance(text, str):
                raise _Unknown(f"{value} must be followed by a string")
            if value == "DATE":
                return ("lit", _parse_date(text))
            parsed = _parse_timestamp(text)
            return ("lit", parsed.replace(tzinfo=None) if value == "TIMESTAMP_NTZ" else parsed)
        if kind == "op" and value in ("-", "+"):
            raise _Unknown("arithmetic")
        raise _Unknown(f"unexpected token {value!r}")

    def column_of(self, operand: tuple[str, Any]) -> str:
        if operand[0] != "col":
            raise _Unknown("expected a column")
        return operand[1]

    def compare(self, left: tuple[str, Any], op: str, right: tuple[str, Any]) -> ex.Expression:
        if left[0] == "col" and right[0] == "lit":
            return _comparison(self.types, left[1], op, right[1])
        if left[0] == "lit" and right[0] == "col":
            return _comparison(self.types, right[1], _FLIPPED.get(op, op), left[1])
        raise _Unknown("comparison must be between a column and a literal")


def parse_sql_predicate(text: str, schema: Any) -> ex.Expression:
    """A simple Spark SQL predicate as a core expression for pruning.

    Understood: comparisons (``=``, ``<>``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``<=>``) between a
    column and a literal, ``[NOT] BETWEEN``, ``[NOT] IN``, ``IS [NOT] NULL``, ``LIKE 'prefix%'``,
    ``AND``/``OR``/``NOT`` and parentheses; literals: numbers, quoted strings, ``TRUE``/``FALSE``,
    ``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``. Anything else is ignored for pruning (never
    for the result: the reader still applies the full SQL text with Spark).
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError(f"filter must be a non-empty SQL predicate string, got {text!r}")
    types = column_types(schema)
    try:
        return _finish(_SqlPredicateParser(text, types).parse())
    except _Unknown as why:
        logger.info("filter %r is not used for pruning (%s); it is still applied to rows", text, why)
        return ex.AlwaysTrue()


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
            return _and(results)

        def visit_or(self, results: list) -> ex.Expression | None:
            return _or(results)

        def visit_not(self, result: ex.Expression | None) -> ex.Expression | None:
            return _not(result)

        def _name(self, column: str) -> tuple[str, str]:
            if column.lower() not in types:
                raise InvalidOptionError(
                    f"filter references column {column!r}, which the table does not have; "
                    f"columns: {', '.join(n for n, _ in types.values())}"
                )
            return types[column.lower()]

        def visit_comparison(self, predicate: ex.Comparison) -> ex.Expression | None:
            name, type_name = self._name(predicate.column)
            value = _from_canonical(type_name, predicate.value)
            try:
                return type(predicate)(name, typed_literal(type_name, value))
            except _Unknown:
                return None

        def visit_in(self, predicate: ex.In) -> ex.Expression | None:
            name, type_name = self._name(predicate.column)
            try:
                return _in(types, name, [_from_canonical(type_name, v) for v in predicate.values])
            except _Unknown:
                return None

        def visit_is_null(self, predicate: ex.IsNull) -> ex.Expression:
            return ex.IsNull(self._name(predicate.column)[0])

        def visit_is_not_null(self, predicate: ex.IsNotNull) -> ex.Expression:
            return ex.IsNotNull(self._name(predicate.column)[0])

    # Without NOTs every node has positive polarity, so dropping unknown AND operands is safe.
    return _finish(ex.visit(ex.push_down_not(expr), Retype()))


# -- back to Spark ----------------------------------------------------------------------------

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _from_canonical(type_name: str, value: Any) -> Any:
    """The Spark-side literal for a canonical value of a column of ``type_name``."""
    if type_name == "date" and isinstance(value, int) and not isinstance(value, bool):
        return (_EPOCH + _dt.timedelta(milliseconds=value)).date()
    if type_name in ("timestamp", "timestamp_ntz") and isinstance(value, int) and not isinstance(value, bool):
        moment = _EPOCH + _dt.timedelta(milliseconds=value)
        return moment.replace(tzinfo=None) if type_name == "timestamp_ntz" else moment
    return value


def to_spark_column(expr: ex.Expression, schema: Any):
    """A ``pyspark.sql.Column`` that keeps exactly the rows ``expr`` keeps (SQL null semantics)."""
    from pyspark.sql import functions as F

    types = column_types(schema)

    def lit(column: str, value: Any):
        _, type_name = types.get(column.lower(), (column, ""))
        spark_value = _from_canonical(type_name, value)
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
            column = F.col(quote_identifier(p.column))
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
            return F.col(quote_identifier(p.column)).isin([lit(p.column, v) for v in p.values])

        def visit_is_null(self, p: ex.IsNull):
            return F.col(quote_identifier(p.column)).isNull()

        def visit_is_not_null(self, p: ex.IsNotNull):
            return F.col(quote_identifier(p.column)).isNotNull()

    return ex.visit(expr, ToColumn())
