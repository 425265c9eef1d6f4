"""The SQL predicate parser: simple Spark SQL predicate text -> a core expression for pruning.

Two kinds of text reach it: the ``filter=`` strings users give ``QbeastTable.to_df``, and the
data filters Spark pushes to the JVM read bridge, printed by ``Expression.sql()`` (qualified
columns, widening casts, ``5L`` / ``1.5D`` literals, ``TIMESTAMP '...'`` in the session zone).
A tokenizer and a recursive-descent parser cover the subset that can prune files; anything else
is skipped as unknown, which only widens the selection (:mod:`qbeast.spark.read.typed_predicates`).
:func:`weight_bounds` recognises the one other filter a scan can prune by: the row-weight filter
``hash(indexed columns) < w`` of a sample.

Plain Python over a JSON schema: the planner process the bridge calls parses every scan's
filters, and none of this needs Spark.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import logging
import re
from collections.abc import Sequence
from typing import Any

from qbeast.core import derived
from qbeast.core import expressions as ex
from qbeast.errors import InvalidOptionError
from qbeast.spark.read.literals import (
    EPOCH,
    Untranslatable,
    column_types,
    parse_date,
    parse_timestamp,
    resolve_column,
)
from qbeast.spark.read.typed_predicates import (
    COMPARISONS,
    all_of,
    any_of,
    negation,
    or_always_true,
    prefix_range,
    typed_comparison,
    typed_in,
)

logger = logging.getLogger("qbeast.spark.read.sql_parser")

#: Integral types by width (Spark SQL and ``typeName()`` spellings).
_INTEGRAL_RANK = {"tinyint": 0, "byte": 0, "smallint": 1, "short": 1, "int": 2, "integer": 2,
                  "bigint": 3, "long": 3}
#: Column types whose every value a double holds exactly.
_EXACT_IN_DOUBLE = {"byte", "short", "integer", "float"}
#: Keywords that start a typed literal (``DATE '2024-01-31'``) or, alone, name a column.
_LITERAL_PREFIXES = ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ")
#: Spark's functions from an epoch number to a timestamp, with the microseconds per unit
_EPOCH_UNITS = {"timestamp_micros": 1, "timestamp_millis": 1_000, "timestamp_seconds": 1_000_000}
#: A comparison read from the other side (``5 < x`` is ``x > 5``).
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}

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
        #: names read in a column's place that are not columns of the table (in order met)
        self.unknown: list[str] = []

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
            raise Untranslatable(f"expected {token[1]!r}")

    def parse(self) -> ex.Expression | None:
        expr = self.parse_or(False)
        if self.peek()[0] != "end":
            raise Untranslatable("trailing input")
        return expr

    def parse_or(self, negated: bool) -> ex.Expression | None:
        parts = [self.parse_and(negated)]
        while self.at_kw("OR"):
            self.take()
            parts.append(self.parse_and(negated))
        return parts[0] if len(parts) == 1 else any_of(parts, negated)

    def parse_and(self, negated: bool) -> ex.Expression | None:
        parts = [self.parse_not(negated)]
        while self.at_kw("AND"):
            self.take()
            parts.append(self.parse_not(negated))
        return parts[0] if len(parts) == 1 else all_of(parts, negated)

    def parse_not(self, negated: bool) -> ex.Expression | None:
        if self.at_kw("NOT"):
            self.take()
            return negation(self.parse_not(not negated))
        start = self.pos
        try:
            return self.parse_atom(negated)
        except Untranslatable:
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
                raise Untranslatable("startswith without a string prefix")
            return prefix_range(self.types, column, prefix[1])
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
                raise Untranslatable("IN list with non-literal items")
            result = typed_in(self.types, column, [v for _, v in items])
        elif kind == "kw" and value == "LIKE":
            self.take()
            pattern = self.parse_operand()
            if pattern[0] != "lit" or not isinstance(pattern[1], str):
                raise Untranslatable("LIKE without a string pattern")
            text = pattern[1]
            if "_" in text or "\\" in text or not text.endswith("%") or "%" in text[:-1]:
                raise Untranslatable("only LIKE 'prefix%' is used for pruning")
            result = prefix_range(self.types, self.column_of(left), text[:-1])
        elif kind == "kw" and value == "IS" and not negated:
            self.take()
            is_not = False
            if self.at_kw("NOT"):
                self.take()
                is_not = True
            self.expect(("kw", "NULL"))
            name = resolve_column(self.types, self.column_of(left))[0]
            return ex.IsNotNull(name) if is_not else ex.IsNull(name)
        elif kind == "op" and value in COMPARISONS and not negated:
            self.take()
            right = self.parse_operand()
            return self.compare(left, value, right)
        else:
            raise Untranslatable("not a predicate")
        return negation(result) if negated else result

    def parse_operand(self) -> tuple[str, Any]:
        kind, value = self.take()
        if kind == "lit":
            return ("lit", value)
        if kind == "kw" and value == "CAST" and self.peek() == ("op", "("):
            return self.parse_cast()
        if kind == "kw" and value in _LITERAL_PREFIXES and self.peek()[0] == "lit":
            text = self.take()[1]
            if not isinstance(text, str):
                raise Untranslatable(f"{value} must be followed by a string")
            if value == "DATE":
                return ("lit", parse_date(text))
            parsed = parse_timestamp(text, self.time_zone)
            return ("lit", parsed.replace(tzinfo=None) if value == "TIMESTAMP_NTZ" else parsed)
        if kind == "kw" and value in ("TRUE", "FALSE"):
            return ("lit", value == "TRUE")
        if kind == "kw" and value == "NULL":
            return ("lit", None)
        if kind == "ident" or (kind == "kw" and value in _LITERAL_PREFIXES):
            if self.peek() == ("op", "(") and kind == "ident" and value.lower() in _EPOCH_UNITS:
                return ("lit", self.parse_epoch(_EPOCH_UNITS[value.lower()]))
            if self.peek() == ("op", "(") and kind == "ident" and value.lower() in derived.NAMES:
                return self.parse_call(value)
            if self.peek() == ("op", "("):
                raise Untranslatable("function calls are not used for pruning")
            return ("col", self.column_name(value))
        if kind == "op" and value in ("-", "+"):
            raise Untranslatable("arithmetic")
        raise Untranslatable(f"unexpected token {value!r}")

    def parse_call(self, function: str) -> tuple[str, Any]:
        """``lower(column)``, ``substring(column, 1, 3)``, ...: a call of a string column that
        skipping indexes may be declared on (:mod:`qbeast.core.derived`), as the subject of a
        predicate; any other form of these functions is unknown."""
        self.expect(("op", "("))
        column = self.column_of(self.parse_operand())
        args: list[int] = []
        while self.peek() == ("op", ","):
            self.take()
            kind, number = self.take()
            if kind != "lit" or isinstance(number, bool) or not isinstance(number, int):
                raise Untranslatable(f"{function} with an argument that is not an integer literal")
            args.append(number)
        self.expect(("op", ")"))
        if isinstance(column, derived.Call):
            raise Untranslatable("a call of a call")
        call = derived.make_call(function, column, tuple(args))
        if call is None:
            raise Untranslatable(f"{function} with these arguments is not used for pruning")
        return ("col", resolve_column(self.types, call)[0])

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
            raise Untranslatable("epoch functions are used for pruning with a number literal only")
        micros = decimal.Decimal(-number if negative else number) * micros_per_unit
        if micros != micros.to_integral_value():
            raise Untranslatable("epoch value below a microsecond")
        try:
            return EPOCH + _dt.timedelta(microseconds=int(micros))
        except OverflowError:
            raise Untranslatable("epoch value out of range") from None

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
            raise Untranslatable("struct field access")
        name = parts[-1]
        if name.lower() not in self.types and name.lower() not in _NOT_COLUMNS:
            self.unknown.append(name)
        return name

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
            raise Untranslatable("CAST without a type")
        target_type = str(target).lower()
        if self.peek() == ("op", "("):
            raise Untranslatable(f"CAST to {target_type}(...) is not used for pruning")
        self.expect(("op", ")"))
        column = self.column_of(operand)
        _, source_type = resolve_column(self.types, column)
        widening = _INTEGRAL_RANK.get(source_type, 99) <= _INTEGRAL_RANK.get(target_type, -1) or (
            source_type in _EXACT_IN_DOUBLE and target_type == "double"
        )
        if not widening:
            raise Untranslatable(f"CAST of a {source_type} column to {target_type}")
        return ("col", column)

    def column_of(self, operand: tuple[str, Any]) -> str:
        if operand[0] != "col":
            raise Untranslatable("expected a column")
        return operand[1]

    def compare(self, left: tuple[str, Any], op: str, right: tuple[str, Any]) -> ex.Expression:
        if left[0] == "col" and right[0] == "lit":
            return typed_comparison(self.types, left[1], op, right[1])
        if left[0] == "lit" and right[0] == "col":
            return typed_comparison(self.types, right[1], _FLIPPED.get(op, op), left[1])
        raise Untranslatable("comparison must be between a column and a literal")


#: words Spark SQL reads in a column's place that are not columns: functions called without
#: parentheses and the keywords of CASE and INTERVAL expressions
_NOT_COLUMNS = frozenset({
    "current_date", "current_timestamp", "current_time", "current_user", "user", "session_user",
    "localtimestamp", "localtime", "current_catalog", "current_database", "current_schema",
    "case", "when", "then", "else", "end", "interval"})


def parse_sql_predicate(text: str, schema: Any, *, time_zone: str = "UTC",
                        known_columns_only: bool = False) -> ex.Expression:
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

    ``known_columns_only`` (a filter a user typed): a name in a column's place that the table
    does not have is an error naming it and the table's columns, instead of a filter that
    prunes nothing (and, where Spark applies it later, fails there). Names after the first
    part the parser cannot use are not looked at.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError(f"filter must be a non-empty SQL predicate string, got {text!r}")
    types = column_types(schema)
    parser = _SqlPredicateParser(text, types, time_zone)
    try:
        predicate = or_always_true(parser.parse())
    except Untranslatable as why:
        logger.info("filter %r is not used for pruning (%s); it is still applied to rows", text, why)
        predicate = ex.AlwaysTrue()
    if known_columns_only and parser.unknown:
        names = ", ".join(dict.fromkeys(parser.unknown))
        raise InvalidOptionError(
            f"filter {text!r} names {names}, which the table has no column of; allowed columns: "
            f"{', '.join(name for name, _ in types.values())}")
    return predicate


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
