"""Typed predicate atoms, and the AND/OR/NOT that keep an untranslatable part harmless.

The rule that makes pruning safe: a part we cannot translate exactly is "unknown" (``None``
here), and an unknown part only ever widens the selection: it is dropped from an AND, it makes
an OR or a NOT unknown, and a NOT swaps the two (De Morgan). Spark still applies every original
predicate to the rows, so results never change. Both translations (SQL text in
:mod:`qbeast.spark.read.sql_parser`, user-built expressions in :mod:`qbeast.spark.read.predicates`)
combine their parts here; the atoms type their literals with :mod:`qbeast.spark.read.literals`.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from qbeast.core import expressions as ex
from qbeast.spark.read.literals import Untranslatable, resolve_column, typed_literal

def all_of(parts: Iterable[ex.Expression | None], negated: bool = False) -> ex.Expression | None:
    """AND of translated parts; ``negated`` says an odd number of NOTs encloses it.

    Dropping an unknown operand widens an AND, which is safe only when nothing negates it: under a
    NOT the AND acts as an OR (De Morgan), where one unknown makes the whole node unknown.
    """
    parts = list(parts)
    if negated:
        return _or_like(parts, ex.And, ex.AlwaysTrue, ex.AlwaysFalse)
    return _and_like(parts, ex.And, ex.AlwaysTrue, ex.AlwaysFalse)


def any_of(parts: Sequence[ex.Expression | None], negated: bool = False) -> ex.Expression | None:
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


def negation(part: ex.Expression | None) -> ex.Expression | None:
    return None if part is None else ex.Not(part)


def or_always_true(expr: ex.Expression | None) -> ex.Expression:
    return ex.AlwaysTrue() if expr is None else expr


COMPARISONS = {
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


def typed_comparison(types: dict, column: ex.Subject, op: str, value: Any) -> ex.Expression:
    name, type_name = resolve_column(types, column)
    if value is None:
        if op == "<=>":
            return ex.IsNull(name)
        return ex.AlwaysFalse()  # a comparison with NULL is never true
    return COMPARISONS[op](name, typed_literal(type_name, value))


def typed_in(types: dict, column: ex.Subject, values: Iterable[Any]) -> ex.Expression:
    name, type_name = resolve_column(types, column)
    typed = [typed_literal(type_name, v) for v in values if v is not None]
    if not typed:
        return ex.AlwaysFalse()
    return ex.In(name, tuple(typed))


def prefix_range(types: dict, column: ex.Subject, prefix: str) -> ex.Expression:
    """``col LIKE 'prefix%'`` as the string range it implies (code point order = UTF-8 order)."""
    name, type_name = resolve_column(types, column)
    if type_name != "string" or not prefix:
        raise Untranslatable("prefix filter on a non-string column")
    lower = ex.GreaterThanOrEqual(name, prefix)
    last = ord(prefix[-1])
    if last >= 0x10FFFF:
        return lower
    return ex.And(lower, ex.LessThan(name, prefix[:-1] + chr(last + 1)))
