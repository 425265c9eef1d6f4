"""A small predicate language over column names, independent of Spark.

The reader translates the filters Spark pushes into a data source into these expressions; the
format core turns them into query spaces (``query_space.py``) to prune files. Keeping the tree
here, free of Spark, lets the pruning logic be tested with plain Python values.

Literals are canonical Python values, the same ones transformations receive (ARCHITECTURE.md):
``int``, ``float``, ``str``, ``bool``; ``Decimal`` becomes ``float``; ``datetime.date`` becomes the
epoch millis of its UTC midnight and ``datetime.datetime`` the epoch millis (floored; naive values
are taken as UTC, the session time zone the engine pins). ``None`` is not a comparison literal:
use :class:`IsNull`.

Traversal follows a visitor pattern: subclass :class:`ExpressionVisitor` and call :func:`visit`,
which hands each node the already-visited results of its children (bottom-up).
"""
from __future__ import annotations

import datetime as _dt
import decimal
import itertools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Mapping, TypeVar

from qbeast.core.derived import Call, apply
from qbeast.errors import InvalidOptionError

T = TypeVar("T")
#: What a predicate leaf tests: a column name, or a :class:`~qbeast.core.derived.Call` of one
#: (``lower(email)``), which only skipping indexes declared on it prune by.
Subject = str | Call

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MILLI = _dt.timedelta(milliseconds=1)


def canonical_literal(value: Any) -> int | float | str | bool:
    """Convert a filter literal to the canonical form transformations understand."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)
        return (aware - _EPOCH) // _MILLI
    if isinstance(value, _dt.date):
        return (_dt.datetime(value.year, value.month, value.day, tzinfo=_dt.timezone.utc) - _EPOCH) // _MILLI
    raise InvalidOptionError(
        f"unsupported filter literal {value!r} of type {type(value).__name__}; allowed: int, "
        "float, str, bool, decimal.Decimal, datetime.date, datetime.datetime"
    )


def _check_column(column: object) -> Subject:
    if isinstance(column, Call):
        return column
    if not isinstance(column, str) or not column:
        raise InvalidOptionError(f"a predicate column must be a non-empty string, got {column!r}")
    return column


class Expression:
    """Base class of predicate expressions (immutable, comparable by value)."""

    __slots__ = ()

    def __and__(self, other: Expression) -> Expression:
        return And(self, other)

    def __or__(self, other: Expression) -> Expression:
        return Or(self, other)

    def __invert__(self) -> Expression:
        return Not(self)


@dataclass(frozen=True)
class AlwaysTrue(Expression):
    """Matches every row."""


@dataclass(frozen=True)
class AlwaysFalse(Expression):
    """Matches no row."""


class _Compound(Expression):
    """An n-ary And/Or; nested nodes of the same kind are flattened."""

    __slots__ = ("children",)
    children: tuple[Expression, ...]

    def __init__(self, *children: Expression) -> None:
        flat: list[Expression] = []
        for child in children:
            if not isinstance(child, Expression):
                raise InvalidOptionError(
                    f"{type(self).__name__} operands must be expressions, got {child!r}"
                )
            if isinstance(child, _Compound) and type(child) is type(self):
                flat.extend(child.children)
            else:
                flat.append(child)
        if len(flat) < 2:
            raise InvalidOptionError(f"{type(self).__name__} needs at least two operands")
        object.__setattr__(self, "children", tuple(flat))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.children == self.children  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.children))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.children))})"


class And(_Compound):
    """All children hold."""


class Or(_Compound):
    """At least one child holds."""


@dataclass(frozen=True)
class Not(Expression):
    child: Expression

    def __post_init__(self) -> None:
        if not isinstance(self.child, Expression):
            raise InvalidOptionError(f"Not operand must be an expression, got {self.child!r}")


@dataclass(frozen=True)
class _ColumnPredicate(Expression):
    column: Subject

    def __post_init__(self) -> None:
        _check_column(self.column)


@dataclass(frozen=True)
class IsNull(_ColumnPredicate):
    """The column is null."""


@dataclass(frozen=True)
class IsNotNull(_ColumnPredicate):
    """The column is not null."""


@dataclass(frozen=True)
class Comparison(Expression):
    """``column <op> value`` with a canonical, non-null literal."""

    column: Subject
    value: Any

    def __post_init__(self) -> None:
        _check_column(self.column)
        if self.value is None:
            raise InvalidOptionError(
                f"{type(self).__name__} on {self.column!r} got a null literal; use IsNull/IsNotNull"
            )
        object.__setattr__(self, "value", canonical_literal(self.value))


@dataclass(frozen=True)
class EqualTo(Comparison):
    pass


@dataclass(frozen=True)
class NotEqualTo(Comparison):
    pass


@dataclass(frozen=True)
class LessThan(Comparison):
    pass


@dataclass(frozen=True)
class LessThanOrEqual(Comparison):
    pass


@dataclass(frozen=True)
class GreaterThan(Comparison):
    pass


@dataclass(frozen=True)
class GreaterThanOrEqual(Comparison):
    pass


@dataclass(frozen=True)
class In(Expression):
    """``column IN (values)``; null entries never match and are dropped."""

    column: Subject
    values: tuple

    def __post_init__(self) -> None:
        _check_column(self.column)
        if isinstance(self.values, (str, bytes)) or not isinstance(self.values, Iterable):
            raise InvalidOptionError(f"In on {self.column!r} needs a collection, got {self.values!r}")
        canon = tuple(dict.fromkeys(canonical_literal(v) for v in self.values if v is not None))
        object.__setattr__(self, "values", canon)


COMPARISONS: dict[type, Callable[[Any, Any], bool]] = {
    EqualTo: operator.eq,
    NotEqualTo: operator.ne,
    LessThan: operator.lt,
    LessThanOrEqual: operator.le,
    GreaterThan: operator.gt,
    GreaterThanOrEqual: operator.ge,
}

_NEGATED_COMPARISON: dict[type, type] = {
    EqualTo: NotEqualTo,
    NotEqualTo: EqualTo,
    LessThan: GreaterThanOrEqual,
    GreaterThanOrEqual: LessThan,
    GreaterThan: LessThanOrEqual,
    LessThanOrEqual: GreaterThan,
}


# -- visitors ---------------------------------------------------------------------------------


class ExpressionVisitor(Generic[T]):
    """Bottom-up visitor: compound nodes receive their children's results."""

    def visit_true(self) -> T:
        raise NotImplementedError

    def visit_false(self) -> T:
        raise NotImplementedError

    def visit_and(self, results: list[T]) -> T:
        raise NotImplementedError

    def visit_or(self, results: list[T]) -> T:
        raise NotImplementedError

    def visit_not(self, result: T) -> T:
        raise NotImplementedError

    def visit_comparison(self, predicate: Comparison) -> T:
        raise NotImplementedError

    def visit_in(self, predicate: In) -> T:
        raise NotImplementedError

    def visit_is_null(self, predicate: IsNull) -> T:
        raise NotImplementedError

    def visit_is_not_null(self, predicate: IsNotNull) -> T:
        raise NotImplementedError


def visit(expr: Expression, visitor: ExpressionVisitor[T]) -> T:
    """Apply ``visitor`` to ``expr`` bottom-up."""
    if isinstance(expr, AlwaysTrue):
        return visitor.visit_true()
    if isinstance(expr, AlwaysFalse):
        return visitor.visit_false()
    if isinstance(expr, And):
        return visitor.visit_and([visit(c, visitor) for c in expr.children])
    if isinstance(expr, Or):
        return visitor.visit_or([visit(c, visitor) for c in expr.children])
    if isinstance(expr, Not):
        return visitor.visit_not(visit(expr.child, visitor))
    if isinstance(expr, Comparison):
        return visitor.visit_comparison(expr)
    if isinstance(expr, In):
        return visitor.visit_in(expr)
    if isinstance(expr, IsNull):
        return visitor.visit_is_null(expr)
    if isinstance(expr, IsNotNull):
        return visitor.visit_is_not_null(expr)
    raise InvalidOptionError(f"not a predicate expression: {expr!r}")


class _References(ExpressionVisitor[frozenset]):
    def visit_true(self) -> frozenset:
        return frozenset()

    visit_false = visit_true

    def visit_and(self, results: list[frozenset]) -> frozenset:
        return frozenset().union(*results)

    visit_or = visit_and

    def visit_not(self, result: frozenset) -> frozenset:
        return result

    def _column(self, predicate: Any) -> frozenset:
        return frozenset((predicate.column,))

    visit_comparison = visit_in = visit_is_null = visit_is_not_null = _column


def references(expr: Expression) -> frozenset[Subject]:
    """The subjects ``expr`` tests: column names and calls of columns."""
    return visit(expr, _References())


class _Evaluator(ExpressionVisitor["bool | None"]):
    """SQL three-valued evaluation against one row (None = unknown)."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row

    def value(self, subject: Subject) -> Any:
        if isinstance(subject, Call):
            return apply(subject, self.row[subject.column])
        return self.row[subject]

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_and(self, results: list[bool | None]) -> bool | None:
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True

    def visit_or(self, results: list[bool | None]) -> bool | None:
        if any(r is True for r in results):
            return True
        return None if any(r is None for r in results) else False

    def visit_not(self, result: bool | None) -> bool | None:
        return None if result is None else not result

    def visit_comparison(self, predicate: Comparison) -> bool | None:
        value = self.value(predicate.column)
        return None if value is None else COMPARISONS[type(predicate)](value, predicate.value)

    def visit_in(self, predicate: In) -> bool | None:
        value = self.value(predicate.column)
        return None if value is None else value in predicate.values

    def visit_is_null(self, predicate: IsNull) -> bool:
        return self.value(predicate.column) is None

    def visit_is_not_null(self, predicate: IsNotNull) -> bool:
        return self.value(predicate.column) is not None


def evaluate(expr: Expression, row: Mapping[str, Any]) -> bool | None:
    """Evaluate ``expr`` on a row of canonical values with SQL null semantics."""
    return visit(expr, _Evaluator(row))


# -- rewrites used by pruning -----------------------------------------------------------------


def push_down_not(expr: Expression) -> Expression:
    """An equivalent expression (for the rows a filter keeps) with no :class:`Not` left.

    Negations move into the leaves: comparisons flip, ``IsNull`` and ``IsNotNull`` swap. A negated
    ``In`` has no single-predicate form; it becomes ``And`` of ``NotEqualTo``. Rows where a negated
    comparison is unknown (nulls) are dropped by the filter either way, so the rewrite keeps exactly
    the same rows.
    """
    return _nnf(expr, negate=False)


def _nnf(expr: Expression, negate: bool) -> Expression:
    if isinstance(expr, Not):
        return _nnf(expr.child, not negate)
    if not negate:
        if isinstance(expr, (And, Or)):
            return type(expr)(*(_nnf(c, False) for c in expr.children))
        return expr
    if isinstance(expr, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(expr, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(expr, And):
        return Or(*(_nnf(c, True) for c in expr.children))
    if isinstance(expr, Or):
        return And(*(_nnf(c, True) for c in expr.children))
    if isinstance(expr, Comparison):
        return _NEGATED_COMPARISON[type(expr)](expr.column, expr.value)
    if isinstance(expr, IsNull):
        return IsNotNull(expr.column)
    if isinstance(expr, IsNotNull):
        return IsNull(expr.column)
    if isinstance(expr, In):
        if not expr.values:
            return IsNotNull(expr.column)
        parts = [NotEqualTo(expr.column, v) for v in expr.values]
        return parts[0] if len(parts) == 1 else And(*parts)
    raise InvalidOptionError(f"not a predicate expression: {expr!r}")


def conjuncts(expr: Expression) -> tuple[Expression, ...]:
    """The operands of a top-level And (or the expression itself)."""
    return expr.children if isinstance(expr, And) else (expr,)


def disjuncts(expr: Expression) -> tuple[Expression, ...]:
    """The operands of a top-level Or (or the expression itself)."""
    return expr.children if isinstance(expr, Or) else (expr,)


def to_dnf(expr: Expression, max_terms: int = 64) -> list[tuple[Expression, ...]] | None:
    """Disjunctive normal form of a Not-free expression: a list of conjunctions of leaves.

    Returns ``None`` when the expansion would exceed ``max_terms`` conjunctions, so callers can fall
    back to a coarser (still correct) treatment instead of blowing up on wide OR/AND nests.
    """
    if isinstance(expr, Or):
        terms: list[tuple[Expression, ...]] = []
        for child in expr.children:
            sub = to_dnf(child, max_terms)
            if sub is None:
                return None
            terms.extend(sub)
            if len(terms) > max_terms:
                return None
        return terms
    if isinstance(expr, And):
        product: list[tuple[Expression, ...]] = [()]
        for child in expr.children:
            sub = to_dnf(child, max_terms)
            if sub is None or len(product) * len(sub) > max_terms:
                return None
            product = [a + b for a, b in itertools.product(product, sub)]
        return product
    if isinstance(expr, Not):
        raise InvalidOptionError("to_dnf expects an expression without Not; call push_down_not first")
    return [(expr,)]


_COMPARISON_SYMBOLS: dict[type, str] = {
    EqualTo: "=", NotEqualTo: "!=", LessThan: "<", LessThanOrEqual: "<=", GreaterThan: ">",
    GreaterThanOrEqual: ">=",
}


class _Text(ExpressionVisitor[str]):
    """SQL-like text of an expression, for people reading what a planner used (not for Spark)."""

    def visit_true(self) -> str:
        return "true"

    def visit_false(self) -> str:
        return "false"

    def visit_and(self, results: list[str]) -> str:
        return " AND ".join(f"({r})" if " OR " in r else r for r in results)

    def visit_or(self, results: list[str]) -> str:
        return " OR ".join(results)

    def visit_not(self, result: str) -> str:
        return f"NOT ({result})"

    def visit_comparison(self, predicate: Comparison) -> str:
        return f"{predicate.column} {_COMPARISON_SYMBOLS[type(predicate)]} {predicate.value!r}"

    def visit_in(self, predicate: In) -> str:
        return f"{predicate.column} IN ({', '.join(repr(v) for v in predicate.values)})"

    def visit_is_null(self, predicate: IsNull) -> str:
        return f"{predicate.column} IS NULL"

    def visit_is_not_null(self, predicate: IsNotNull) -> str:
        return f"{predicate.column} IS NOT NULL"


def expression_text(expr: Expression) -> str:
    """``id < 150 AND x >= 0.5``: an expression as a person reads it (literals as Python repr)."""
    return visit(expr, _Text())
