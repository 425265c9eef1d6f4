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

logger = logging.getLogger("qbeast.spark.read.predicates")

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


def _zone(name: str) -> _dt.tzinfo:
    """The ``tzinfo`` of a Spark session time zone name (``UTC``, ``Europe/Paris``, ``+02:00``)."""
    if name.upper() in ("UTC", "Z", "GMT", "ETC/UTC"):
        return _dt.timezone.utc
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except (ValueError, KeyError, ImportError, OSError):
        pass
    match = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})?", name.strip(), re.IGNORECASE)
    if match is None:
        raise _Unknown(f"unknown session time zone {name!r}")
    sign = -1 if match.group(1) == "-" else 1
    delta = _dt.timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0))
    return _dt.timezone(sign * delta)


def _parse_timestamp(text: str, zone: str = "UTC") -> _dt.datetime:
    """A timestamp literal; without an offset it is a wall-clock time in ``zone``.

    The engine pins its sessions to UTC, so zone-less strings users write are UTC; Spark prints
    ``TIMESTAMP '...'`` literals in the session time zone, which the SQL bridge passes along.
    """
    value = text.strip().replace(" ", "T", 1)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = _dt.datetime.fromisoformat(value)
    except ValueError:
        raise _Unknown(f"not a timestamp literal: {text!r}") from None
    if parsed.tzinfo is not None:
        return parsed
    return parsed.replace(tzinfo=_zone(zone)).astimezone(_dt.timezone.utc)


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


#: Integral types by width (Spark SQL and ``typeName()`` spellings).
_INTEGRAL_RANK = {"tinyint": 0, "byte": 0, "smallint": 1, "short": 1, "int": 2, "integer": 2,
                  "bigint": 3, "long": 3}
#: Column types whose every value a double holds exactly.
_EXACT_IN_DOUBLE = {"byte", "short", "integer", "float"}
#: Keywords that start a typed literal (``DATE '2024-01-31'``) or, alone, name a column.
_LITERAL_PREFIXES = ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ")
#: Spark's functions from an epoch number to a timestamp, with the microseconds per unit
_EPOCH_UNITS = {"timestamp_micros": 1, "timestamp_millis": 1_000, "timestamp_seconds": 1_000_000}
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

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
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op><=>|<=|>=|<>|!=|==|=|<|>|\(|\)|,|\.)
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
            if raw[-2:].upper() == "BD":  # Spark's decimal literal: keep it exact
                value = decimal.Decimal(body)
            elif raw[-1:] in ("D", "d"):  # Spark's double literal
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
                         "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "CAST", "AS"):
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
    ``atom := '(' or ')' | startswith(column, 'p') | operand (cmp operand | [NOT] BETWEEN a AND b
    | [NOT] IN (...) | IS [NOT] NULL | [NOT] LIKE 'p%')``, ``operand := literal | column |
    CAST(column AS <wider integral type or double>) | timestamp_micros/millis/seconds(number)``.
    Columns may carry table qualifiers (``t.x``, ```db`.`t`.`x```), as Spark's
    ``Expression.sql()`` prints them. Any other atom
    (function calls, arithmetic, column-to-column comparisons) is skipped as unknown.
    """

    def __init__(self, text: str, types: dict, time_zone: str = "UTC") -> None:
        self.tokens = _tokenize(text)
        self.pos = 0
        self.types = types
        self.time_zone = time_zone

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
        kind, value = self.peek()
        if kind == "ident" and value.lower() == "startswith" and self.peek(1) == ("op", "("):
            # what Spark's optimizer makes of LIKE 'prefix%'
            self.take()
            self.take()
            column = self.column_of(self.parse_operand())
            self.expect(("op", ","))
            prefix = self.parse_operand()
            self.expect(("op", ")"))
            if prefix[0] != "lit" or not isinstance(prefix[1], str):
                raise _Unknown("startswith without a string prefix")
            return _prefix_range(self.types, column, prefix[1])
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
        if kind == "kw" and value == "CAST" and self.peek() == ("op", "("):
            return self.parse_cast()
        if kind == "kw" and value in _LITERAL_PREFIXES and self.peek()[0] == "lit":
            text = self.take()[1]
            if not isinstance(text, str):
                raise _Unknown(f"{value} must be followed by a string")
            if value == "DATE":
                return ("lit", _parse_date(text))
            parsed = _parse_timestamp(text, self.time_zone)
            return ("lit", parsed.replace(tzinfo=None) if value == "TIMESTAMP_NTZ" else parsed)
        if kind == "kw" and value in ("TRUE", "FALSE"):
            return ("lit", value == "TRUE")
        if kind == "kw" and value == "NULL":
            return ("lit", None)
        if kind == "ident" or (kind == "kw" and value in _LITERAL_PREFIXES):
            if self.peek() == ("op", "(") and kind == "ident" and value.lower() in _EPOCH_UNITS:
                return ("lit", self.parse_epoch(_EPOCH_UNITS[value.lower()]))
            if self.peek() == ("op", "("):
                raise _Unknown("function calls are not used for pruning")
            return ("col", self.column_name(value))
        if kind == "op" and value in ("-", "+"):
            raise _Unknown("arithmetic")
        raise _Unknown(f"unexpected token {value!r}")

    def parse_epoch(self, micros_per_unit: int) -> _dt.datetime:
        """``timestamp_micros(n)`` / ``timestamp_millis(n)`` / ``timestamp_seconds(n)`` of a
        number literal: the instant ``n`` units after the epoch (what a program that holds
        times as epoch numbers writes; Spark folds them into the same timestamp literal)."""
        self.expect(("op", "("))
        negative = self.peek() == ("op", "-")
        if negative:
            self.take()
        kind, number = self.take()
        self.expect(("op", ")"))
        if kind != "lit" or isinstance(number, bool) or not isinstance(number, (int, decimal.Decimal)):
            raise _Unknown("epoch functions are used for pruning with a number literal only")
        micros = decimal.Decimal(-number if negative else number) * micros_per_unit
        if micros != micros.to_integral_value():
            raise _Unknown("epoch value below a microsecond")
        try:
            return _EPOCH + _dt.timedelta(microseconds=int(micros))
        except OverflowError:
            raise _Unknown("epoch value out of range") from None

    def column_name(self, first: str) -> str:
        """A column reference, without the table qualifiers Spark may print before it.

        ``a.b`` where ``a`` (or any part before the last) is a column is a struct field access,
        which never prunes; otherwise the leading parts are qualifiers (catalog, database, table
        or alias) and the last part is the column.
        """
        parts = [first]
        while self.peek() == ("op", ".") and self.peek(1)[0] in ("ident", "kw"):
            self.take()
            parts.append(str(self.take()[1]))
        if any(part.lower() in self.types for part in parts[:-1]):
            raise _Unknown("struct field access")
        return parts[-1]

    def parse_cast(self) -> tuple[str, Any]:
        """``CAST(column AS type)`` where the cast is exact (integral widening): the column itself.

        Spark wraps a column in such a cast when it meets a literal of a wider type
        (``CAST(int_col AS BIGINT) > 5L``); comparing the column with the literal converted to the
        column's type selects the same rows. Any other cast is unknown.
        """
        self.expect(("op", "("))
        operand = self.parse_operand()
        self.expect(("kw", "AS"))
        target_kind, target = self.take()
        if target_kind not in ("ident", "kw"):
            raise _Unknown("CAST without a type")
        target_type = str(target).lower()
        if self.peek() == ("op", "("):
            raise _Unknown(f"CAST to {target_type}(...) is not used for pruning")
        self.expect(("op", ")"))
        column = self.column_of(operand)
        _, source_type = _resolve(self.types, column)
        widening = _INTEGRAL_RANK.get(source_type, 99) <= _INTEGRAL_RANK.get(target_type, -1) or (
            source_type in _EXACT_IN_DOUBLE and target_type == "double"
        )
        if not widening:
            raise _Unknown(f"CAST of a {source_type} column to {target_type}")
        return ("col", column)

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


def parse_sql_predicate(text: str, schema: Any, *, time_zone: str = "UTC") -> ex.Expression:
    """A simple Spark SQL predicate as a core expression for pruning.

    Understood: comparisons (``=``, ``<>``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``<=>``) between a
    column and a literal, ``[NOT] BETWEEN``, ``[NOT] IN``, ``IS [NOT] NULL``, ``LIKE 'prefix%'``
    and ``startswith(column, 'prefix')``, ``AND``/``OR``/``NOT`` and parentheses; literals:
    numbers (with Spark's type suffixes ``5L``, ``1.5D``, ``2.50BD``), quoted strings,
    ``TRUE``/``FALSE``, ``NULL``, ``DATE '...'``, ``TIMESTAMP '...'`` (a wall-clock time in
    ``time_zone`` unless it has an offset), ``TIMESTAMP_NTZ '...'``; columns optionally qualified
    (``t.x``) or in an exact widening ``CAST``. That covers what Spark's ``Expression.sql()``
    prints for pushed filters. Anything else is ignored for pruning (never for the result: the
    reader still applies the full SQL text with Spark).
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError(f"filter must be a non-empty SQL predicate string, got {text!r}")
    types = column_types(schema)
    try:
        return _finish(_SqlPredicateParser(text, types, time_zone).parse())
    except _Unknown as why:
        logger.info("filter %r is not used for pruning (%s); it is still applied to rows", text, why)
        return ex.AlwaysTrue()


_WEIGHT_OPS = {"<": (None, 0), "<=": (None, 1), ">=": (0, None), ">": (1, None)}


def weight_bounds(text: str, hash_columns: Sequence[str]) -> tuple[int, int] | None:
    """The weight range ``[lo, hi)`` a filter ``hash(<hash_columns>) <op> <integer>`` keeps.

    This is how a sample reaches a scan in SQL (FORMAT §2.4): ``QbeastTable.sample_predicate``,
    dbt's ``qbeast_sample()`` and the bridge's ``TABLESAMPLE`` rewrite all produce it. The columns
    must be exactly the indexed columns in revision order (case-insensitive, unqualified);
    anything else returns None (the filter then only applies to rows).
    """
    from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT

    if not hash_columns:
        return None
    tokens = [t for t in _tokenize(text) if t[0] != "end"]
    while len(tokens) >= 2 and tokens[0] == ("op", "(") and tokens[-1] == ("op", ")"):
        tokens = tokens[1:-1]
    if len(tokens) > 2 and tokens[0][0] == "lit":  # `w > hash(...)`
        tokens = tokens[2:] + [(tokens[1][0], _FLIPPED.get(tokens[1][1], tokens[1][1])), tokens[0]]
    if len(tokens) < 6 or tokens[0][0] != "ident" or tokens[0][1].lower() != "hash" or tokens[1] != ("op", "("):
        return None
    close = next((i for i, t in enumerate(tokens) if t == ("op", ")")), None)
    if close is None or close + 3 != len(tokens):
        return None
    # plain column names only: the bridge prints columns without qualifiers, and `s.a` may be a
    # struct field rather than column `a`
    names: list[str] = []
    expect_name = True
    for kind, value in tokens[2:close]:
        if expect_name and kind in ("ident", "kw"):
            names.append(str(value))
        elif expect_name or (kind, value) != ("op", ","):
            return None
        expect_name = not expect_name
    if expect_name:
        return None
    (op_kind, op), (lit_kind, bound) = tokens[close + 1], tokens[close + 2]
    if op_kind != "op" or op not in _WEIGHT_OPS or lit_kind != "lit" or not isinstance(bound, int):
        return None
    if [n.lower() for n in names] != [c.lower() for c in hash_columns]:
        return None
    low_shift, high_shift = _WEIGHT_OPS[op]
    lo = MIN_WEIGHT if low_shift is None else bound + low_shift
    hi = MAX_WEIGHT + 1 if high_shift is None else bound + high_shift
    return max(lo, MIN_WEIGHT), min(hi, MAX_WEIGHT + 1)


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
        return parse_sql_predicate(filter, schema), filter
    if isinstance(filter, ex.Expression):
        return normalize_predicate(filter, schema), to_spark_column(filter, schema)
    raise InvalidOptionError(
        f"filter must be a SQL predicate string or a qbeast.core.expressions predicate, "
        f"got {type(filter).__name__}"
    )
