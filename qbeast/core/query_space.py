"""Predicates -> regions of the normalized space a read can be limited to (FORMAT §7.3).

A filter on indexed columns maps, through the revision's transformations, to per-dimension
``[from, to]`` bounds in [0, 1]; cubes outside every such region cannot hold a qualifying row.
Pruning must never lose a row, so anything not understood leaves its dimension whole:

* predicates on other columns, ``!=``, ``IS NOT NULL`` and literals of the wrong type are ignored;
* a top-level OR becomes one space per disjunct (the union is read); a conjunction of ORs is
  expanded into its disjunctive normal form up to :data:`MAX_DISJUNCTS` terms, beyond which the ORs
  are dropped (each OR only narrows the read, so dropping it widens the region);
* monotone transformations (linear, identity, quantiles, histogram) keep the order of values, so
  the bounds of several predicates on one column combine as an intersection;
* hashed dimensions scatter values, so only equality (``=``, a one-value ``IN``, ``IS NULL``)
  prunes them; a range on a hashed column leaves the dimension whole, unlike qbeast-spark, which
  sometimes uses hashed range bounds (the [ambiguous/bug] note of §7.3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from qbeast.core.cube_id import CubeId
from qbeast.core.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    conjuncts,
    push_down_not,
    to_dnf,
)
from qbeast.core.transformations import (
    CDFNumericQuantilesTransformation,
    CDFStringQuantilesTransformation,
    EmptyTransformation,
    HashTransformation,
    IdentityTransformation,
    LinearTransformation,
    StringHistogramTransformation,
)
from qbeast.core.types import QDataType
from qbeast.errors import InvalidOptionError, QbeastError

if TYPE_CHECKING:
    from qbeast.core.revision import Revision

#: Added to an upper bound so that the half-open cube test accepts points equal to it (FORMAT §7.3).
UPPER_BOUND_EPSILON = 1.1103e-16

#: Largest number of conjunctions a predicate is expanded into.
MAX_DISJUNCTS = 64


class QuerySpace:
    """A region of the normalized space of one revision."""

    def intersects(self, cube: CubeId) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class AllSpace(QuerySpace):
    """No restriction."""

    def intersects(self, cube: CubeId) -> bool:
        return True


@dataclass(frozen=True)
class EmptySpace(QuerySpace):
    """No row can qualify."""

    def intersects(self, cube: CubeId) -> bool:
        return False


@dataclass(frozen=True)
class QuerySpaceFromTo(QuerySpace):
    """Per dimension a closed interval ``[from, to]``; ``None`` leaves that side open."""

    from_: tuple[float | None, ...]
    to: tuple[float | None, ...]

    def __post_init__(self) -> None:
        if len(self.from_) != len(self.to):
            raise InvalidOptionError(
                f"query space bounds differ in length: {len(self.from_)} vs {len(self.to)}"
            )

    def intersects(self, cube: CubeId) -> bool:
        """qbeast-spark's overlap test of the interval with the cube's half-open range."""
        if cube.dimensions != len(self.from_):
            raise InvalidOptionError(
                f"cube has {cube.dimensions} dimensions, query space has {len(self.from_)}"
            )
        lows, highs = cube.bounds()
        for lo_q, hi_q, cf, ct in zip(self.from_, self.to, lows, highs):
            f = 0.0 if lo_q is None else lo_q
            t = 1.0 if hi_q is None else hi_q + UPPER_BOUND_EPSILON
            if not ((f <= cf < t) or (cf <= f < ct) or (f == 1.0 and ct == 1.0)):
                return False
        return True


# -- building spaces from predicates -----------------------------------------------------------

_MONOTONE = "monotone"
_HASHED = "hashed"
_OPAQUE = "opaque"

# Transformations that never reverse the order of values (exact types: a subclass could change
# that, so it is treated as opaque).
_MONOTONE_TYPES = frozenset(
    {
        LinearTransformation,
        IdentityTransformation,
        EmptyTransformation,
        CDFNumericQuantilesTransformation,
        CDFStringQuantilesTransformation,
        StringHistogramTransformation,
    }
)
# Literal types whose hash equals the hash of the column's own values (FORMAT §3.4 hashes Java's
# toString of the value, so 123 and 123.0 differ).
_HASH_LITERAL_TYPES: dict[QDataType, tuple[type, ...]] = {
    QDataType.STRING: (str,),
    QDataType.INTEGER: (int,),
    QDataType.LONG: (int,),
}


def _kind(transformation: object) -> str:
    """How a dimension's transformation orders values."""
    if type(transformation) is HashTransformation:
        return _HASHED
    return _MONOTONE if type(transformation) in _MONOTONE_TYPES else _OPAQUE


def _literal_fits(kind: str, data_type: QDataType | None, value: Any) -> bool:
    """Whether pruning with ``value`` is faithful to how Spark compares it with the column."""
    if isinstance(value, bool) or data_type is None:
        return False
    if kind == _HASHED:
        return isinstance(value, _HASH_LITERAL_TYPES.get(data_type, ()))
    if data_type is QDataType.STRING:
        return isinstance(value, str)
    return isinstance(value, (int, float))  # ordered types: numbers, dates/timestamps as millis


@dataclass
class _DimBounds:
    """Bounds collected for one dimension while scanning a conjunction."""

    lower: float | None = None
    upper: float | None = None
    point: float | None = None  # hashed dims: coordinate of the equality literal
    empty: bool = False

    def narrow(self, lower: float | None, upper: float | None) -> None:
        if lower is not None:
            self.lower = lower if self.lower is None else max(self.lower, lower)
        if upper is not None:
            self.upper = upper if self.upper is None else min(self.upper, upper)

    def set_point(self, coordinate: float) -> None:
        if self.point is not None and self.point != coordinate:
            self.empty = True  # one value cannot equal two different values
        self.point = coordinate


class _Dimension:
    """One indexed column of the revision, with what pruning needs to know about it."""

    def __init__(self, transformation: Any, data_type: Any) -> None:
        self.transformation = transformation
        self.kind = _kind(transformation)
        self.data_type = data_type if isinstance(data_type, QDataType) else None

    def coordinate(self, value: Any) -> float | None:
        """Normalized coordinate of a literal (``None`` = null), or None if unusable."""
        if value is not None and not _literal_fits(self.kind, self.data_type, value):
            return None
        try:
            coordinate = float(self.transformation.transform(value))
        except (QbeastError, TypeError, ValueError, ArithmeticError):
            return None
        return coordinate if math.isfinite(coordinate) else None


def query_spaces(revision: Revision, predicate: Expression | None) -> list[QuerySpace]:
    """The regions of ``revision``'s space a read filtered by ``predicate`` must cover.

    The result is never empty: ``[AllSpace()]`` when nothing prunes, ``[EmptySpace()]`` when no
    row can match, otherwise one or more spaces whose union holds every qualifying row.
    """
    if predicate is None:
        return [AllSpace()]
    if not isinstance(predicate, Expression):
        raise InvalidOptionError(
            f"predicate must be a qbeast.core.expressions.Expression, got {predicate!r}"
        )
    columns = list(revision.columns)
    dims = {
        name: (i, _Dimension(t, ct.data_type))
        for i, (name, t, ct) in enumerate(
            zip(columns, revision.transformations, revision.column_transformers)
        )
    }
    if len(dims) != len(columns) or len(columns) != len(revision.transformations):
        # A revision without transformations (first write of an empty table) has no space to prune.
        return [AllSpace()]
    expr = push_down_not(predicate)
    terms = to_dnf(expr, MAX_DISJUNCTS)
    if terms is None:
        terms = [tuple(c for c in conjuncts(expr) if not _is_compound(c))]
    spaces = [_space_of_conjunction(len(columns), dims, term) for term in terms]
    if any(isinstance(s, AllSpace) for s in spaces):
        return [AllSpace()]
    kept = list(dict.fromkeys(s for s in spaces if not isinstance(s, EmptySpace)))
    return kept or [EmptySpace()]


def _is_compound(expr: Expression) -> bool:
    return bool(getattr(expr, "children", None))


def _space_of_conjunction(
    d: int, dims: dict[str, tuple[int, _Dimension]], leaves: Sequence[Expression]
) -> QuerySpace:
    bounds = [_DimBounds() for _ in range(d)]
    for leaf in leaves:
        if isinstance(leaf, AlwaysFalse):
            return EmptySpace()
        if isinstance(leaf, AlwaysTrue):
            continue
        column = getattr(leaf, "column", None)
        entry = dims.get(column) if isinstance(column, str) else None
        if entry is None or entry[1].kind == _OPAQUE:
            continue
        index, dim = entry
        if isinstance(leaf, In) and not leaf.values:
            return EmptySpace()  # IN () or IN (NULL): nothing equals
        _apply_leaf(bounds[index], dim, leaf)
    return _classify(bounds)


def _apply_leaf(bounds: _DimBounds, dim: _Dimension, leaf: Expression) -> None:
    """Narrow ``bounds`` with one predicate; predicates that cannot prune leave them unchanged."""
    if isinstance(leaf, IsNull):
        equal_values: tuple | None = (None,)
    elif isinstance(leaf, EqualTo):
        equal_values = (leaf.value,)
    elif isinstance(leaf, In):
        equal_values = leaf.values
    else:
        equal_values = None
    if dim.kind == _HASHED:
        if equal_values is not None and len(equal_values) == 1:
            coordinate = dim.coordinate(equal_values[0])
            if coordinate is not None:
                bounds.set_point(coordinate)
        return
    if equal_values is not None:
        coordinates = [dim.coordinate(v) for v in equal_values]
        if all(c is not None for c in coordinates):
            bounds.narrow(min(coordinates), max(coordinates))  # type: ignore[type-var]
    elif isinstance(leaf, (GreaterThan, GreaterThanOrEqual)):
        bounds.narrow(dim.coordinate(leaf.value), None)
    elif isinstance(leaf, (LessThan, LessThanOrEqual)):
        bounds.narrow(None, dim.coordinate(leaf.value))


def _classify(bounds: list[_DimBounds]) -> QuerySpace:
    from_: list[float | None] = []
    to: list[float | None] = []
    for b in bounds:
        if b.empty:
            return EmptySpace()
        if b.point is not None:
            from_.append(b.point)
            to.append(b.point)
            continue
        lower, upper = b.lower, b.upper
        if (lower is not None and lower > 1.0) or (upper is not None and upper < 0.0):
            return EmptySpace()
        if lower is not None and upper is not None and lower > upper:
            return EmptySpace()
        from_.append(None if lower is None or lower <= 0.0 else lower)
        to.append(None if upper is None or upper >= 1.0 else upper)
    if all(f is None for f in from_) and all(t is None for t in to):
        return AllSpace()
    return QuerySpaceFromTo(tuple(from_), tuple(to))
