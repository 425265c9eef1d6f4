"""Predicates -> query spaces (FORMAT §7.3), and the expression helpers they rely on."""
from __future__ import annotations

import datetime as dt
import decimal
import random

import pytest

from qbeast.core.cube_id import CubeId
from qbeast.core.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
    Expression,
    ExpressionVisitor,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    Or,
    canonical_literal,
    evaluate,
    push_down_not,
    references,
    to_dnf,
    visit,
)
from qbeast.core.query_space import (
    AllSpace,
    EmptySpace,
    QuerySpaceFromTo,
    query_spaces,
)
from qbeast.errors import InvalidOptionError

# FORMAT §3.4: Scala 2.12 hash coordinates.
HASH_OF_A = 0.9137243399926109
HASH_OF_123 = 0.5320517670046779

# -- expressions ------------------------------------------------------------------------------


def test_canonical_literals():
    assert canonical_literal(dt.date(1970, 1, 2)) == 86_400_000
    assert canonical_literal(dt.datetime(1970, 1, 1, 0, 0, 1, 999)) == 1000  # floor to millis
    assert canonical_literal(dt.datetime(1969, 12, 31, 23, 59, 59, 999_999)) == -1  # floor
    aware = dt.datetime(1970, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert canonical_literal(aware) == 0
    assert canonical_literal(decimal.Decimal("2.5")) == 2.5
    assert EqualTo("d", dt.date(2024, 1, 2)).value == 1704153600000
    with pytest.raises(InvalidOptionError, match="unsupported filter literal"):
        canonical_literal(b"bytes")
    with pytest.raises(InvalidOptionError, match="IsNull"):
        EqualTo("a", None)
    with pytest.raises(InvalidOptionError, match="column"):
        LessThan("", 1)


def test_compound_flattening_and_operators():
    a, b, c = EqualTo("a", 1), EqualTo("b", 2), EqualTo("c", 3)
    assert (a & b) & c == And(a, b, c)
    assert (a | b) | c == Or(a, b, c)
    assert ~a == Not(a)
    assert In("x", [3, None, 3, 1]).values == (3, 1)
    with pytest.raises(InvalidOptionError, match="two operands"):
        And(a)
    with pytest.raises(InvalidOptionError, match="expressions"):
        Or(a, "b")  # type: ignore[arg-type]


def test_references_and_visitor():
    expr = Or(And(GreaterThan("a", 1), IsNull("b")), Not(In("c", [1, 2])), AlwaysTrue())
    assert references(expr) == {"a", "b", "c"}

    class Count(ExpressionVisitor[int]):
        def visit_true(self):
            return 0

        visit_false = visit_true

        def visit_and(self, results):
            return sum(results)

        visit_or = visit_and

        def visit_not(self, result):
            return result

        def _leaf(self, predicate):
            return 1

        visit_comparison = visit_in = visit_is_null = visit_is_not_null = _leaf

    assert visit(expr, Count()) == 3
    with pytest.raises(InvalidOptionError):
        visit("nope", Count())  # type: ignore[arg-type]


def _random_expr(rng: random.Random, depth: int = 0) -> Expression:
    cols = ["a", "b"]
    if depth < 3 and rng.random() < 0.5:
        kind = rng.choice([And, Or, Not])
        if kind is Not:
            return Not(_random_expr(rng, depth + 1))
        return kind(*(_random_expr(rng, depth + 1) for _ in range(rng.randrange(2, 4))))
    leaf = rng.randrange(7)
    col = rng.choice(cols)
    if leaf == 0:
        return IsNull(col)
    if leaf == 1:
        return IsNotNull(col)
    if leaf == 2:
        return In(col, rng.sample(range(6), rng.randrange(0, 3)))
    if leaf == 3:
        return rng.choice([AlwaysTrue(), AlwaysFalse()])
    op = rng.choice([EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual])
    return op(col, rng.randrange(6))


def test_push_down_not_and_dnf_keep_the_same_rows():
    rng = random.Random(3)
    rows = [{"a": a, "b": b} for a in [None, *range(6)] for b in [None, 0, 3, 5]]
    for _ in range(300):
        expr = _random_expr(rng)
        nnf = push_down_not(expr)
        assert "Not(" not in repr(nnf)
        terms = to_dnf(nnf, max_terms=10_000)
        for row in rows:
            keep = evaluate(expr, row) is True
            assert (evaluate(nnf, row) is True) == keep
            assert any(all(evaluate(leaf, row) is True for leaf in term) for term in terms) == keep


def test_to_dnf_gives_up_beyond_the_limit():
    wide = And(*(Or(EqualTo("a", i), EqualTo("b", i)) for i in range(8)))  # 2^8 terms
    assert to_dnf(wide, max_terms=64) is None
    assert len(to_dnf(wide, max_terms=256)) == 256
    with pytest.raises(InvalidOptionError, match="push_down_not"):
        to_dnf(Not(EqualTo("a", 1)))


# -- QuerySpaceFromTo.intersects ----------------------------------------------------------------


def test_intersects_epsilon_rule():
    lower, upper = CubeId.from_string(1, "A"), CubeId.from_string(1, "g")  # [0,.5) and [.5,1]
    point_half = QuerySpaceFromTo((0.5,), (0.5,))
    assert not point_half.intersects(lower) and point_half.intersects(upper)
    up_to_half = QuerySpaceFromTo((None,), (0.5,))
    assert up_to_half.intersects(lower) and up_to_half.intersects(upper)  # <= 0.5 reaches 0.5
    point_one = QuerySpaceFromTo((1.0,), (1.0,))
    assert point_one.intersects(upper) and point_one.intersects(CubeId.from_string(1, "ggg"))
    assert not point_one.intersects(CubeId.from_string(1, "ggA"))
    assert AllSpace().intersects(lower) and not EmptySpace().intersects(lower)
    with pytest.raises(InvalidOptionError, match="dimensions"):
        point_half.intersects(CubeId.root(2))


# -- query_spaces -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rev(revisions):
    """x: linear int [0, 100] (null -> 50); h: hashed string; b: histogram a..z."""
    return revisions.revision(
        revisions.linear("x", "IntegerDataType", 0, 100, 50),
        revisions.hashing("h"),
        revisions.histogram("b", [chr(c) for c in range(ord("a"), ord("z") + 1)]),
    )


def test_no_predicate_or_unindexed_columns(rev):
    assert query_spaces(rev, None) == [AllSpace()]
    assert query_spaces(rev, AlwaysTrue()) == [AllSpace()]
    assert query_spaces(rev, EqualTo("other", 3)) == [AllSpace()]
    assert query_spaces(rev, And(NotEqualTo("x", 3), IsNotNull("h"))) == [AllSpace()]
    assert query_spaces(rev, AlwaysFalse()) == [EmptySpace()]


def test_linear_ranges(rev):
    (space,) = query_spaces(rev, And(GreaterThanOrEqual("x", 25), LessThan("x", 50)))
    assert space == QuerySpaceFromTo((0.25, None, None), (0.5, None, None))
    # Several bounds on one column intersect; out-of-range sides are open.
    (space,) = query_spaces(rev, And(GreaterThan("x", 10), GreaterThan("x", 20), LessThan("x", 500)))
    assert space == QuerySpaceFromTo((0.2, None, None), (None, None, None))
    (space,) = query_spaces(rev, EqualTo("x", 75))
    assert space == QuerySpaceFromTo((0.75, None, None), (0.75, None, None))
    (space,) = query_spaces(rev, In("x", [60, 10, 30]))
    assert space == QuerySpaceFromTo((0.1, None, None), (0.6, None, None))
    (space,) = query_spaces(rev, IsNull("x"))  # nulls were written at the null value 50
    assert space == QuerySpaceFromTo((0.5, None, None), (0.5, None, None))
    (space,) = query_spaces(rev, Not(GreaterThan("x", 40)))
    assert space == QuerySpaceFromTo((None, None, None), (0.4, None, None))


def test_empty_results(rev):
    assert query_spaces(rev, GreaterThan("x", 100.5)) == [EmptySpace()]
    assert query_spaces(rev, LessThan("x", -1)) == [EmptySpace()]
    assert query_spaces(rev, And(GreaterThan("x", 60), LessThan("x", 40))) == [EmptySpace()]
    assert query_spaces(rev, In("x", [None])) == [EmptySpace()]
    assert query_spaces(rev, And(EqualTo("h", "a"), EqualTo("h", "b"))) == [EmptySpace()]


def test_or_gives_one_space_per_disjunct(rev):
    spaces = query_spaces(rev, Or(LessThan("x", 10), GreaterThan("x", 90)))
    assert spaces == [
        QuerySpaceFromTo((None, None, None), (0.1, None, None)),
        QuerySpaceFromTo((0.9, None, None), (None, None, None)),
    ]
    # A conjunction with an OR is distributed.
    spaces = query_spaces(rev, And(EqualTo("h", "a"), Or(EqualTo("x", 10), EqualTo("x", 20))))
    assert spaces == [
        QuerySpaceFromTo((0.1, HASH_OF_A, None), (0.1, HASH_OF_A, None)),
        QuerySpaceFromTo((0.2, HASH_OF_A, None), (0.2, HASH_OF_A, None)),
    ]
    # A disjunct that cannot prune makes the whole read unpruned.
    assert query_spaces(rev, Or(LessThan("x", 10), EqualTo("other", 1))) == [AllSpace()]
    # An empty disjunct disappears.
    assert query_spaces(rev, Or(LessThan("x", 10), GreaterThan("x", 1000))) == [
        QuerySpaceFromTo((None, None, None), (0.1, None, None))
    ]


def test_too_wide_predicates_fall_back_to_plain_conjuncts(rev):
    wide = And(
        GreaterThan("x", 50),
        *(Or(EqualTo("b", chr(97 + i)), EqualTo("h", str(i))) for i in range(8)),
    )
    assert query_spaces(rev, wide) == [QuerySpaceFromTo((0.5, None, None), (None, None, None))]


def test_hashed_dimension_only_prunes_on_equality(rev):
    (space,) = query_spaces(rev, EqualTo("h", "a"))
    assert space == QuerySpaceFromTo((None, HASH_OF_A, None), (None, HASH_OF_A, None))
    (space,) = query_spaces(rev, In("h", ["a"]))
    assert space.from_[1] == HASH_OF_A
    # Ranges and multi-value IN on a hashed column keep the dimension whole, even when another
    # dimension prunes (qbeast-spark would use the hashed bounds there: FORMAT §7.3 bug).
    (space,) = query_spaces(rev, And(GreaterThan("h", "a"), LessThan("x", 50)))
    assert space == QuerySpaceFromTo((None, None, None), (0.5, None, None))
    assert query_spaces(rev, In("h", ["a", "b"])) == [AllSpace()]
    # A literal of another type than the column's would hash differently: no pruning.
    assert query_spaces(rev, EqualTo("h", 123)) == [AllSpace()]


def test_hashed_integer_column(revisions):
    rev = revisions.revision(revisions.hashing("n", "IntegerDataType"))
    (space,) = query_spaces(rev, EqualTo("n", 123))
    assert space == QuerySpaceFromTo((HASH_OF_123,), (HASH_OF_123,))
    assert query_spaces(rev, EqualTo("n", 123.0)) == [AllSpace()]
    assert query_spaces(rev, EqualTo("n", True)) == [AllSpace()]


def test_histogram_dimension(rev):
    (space,) = query_spaces(rev, And(GreaterThanOrEqual("b", "c"), LessThanOrEqual("b", "e")))
    assert space == QuerySpaceFromTo((None, None, 2 / 25), (None, None, 4 / 25))
    # Strings only: a number compared with a string column is cast by Spark, not ordered as text.
    assert query_spaces(rev, GreaterThan("b", 5)) == [AllSpace()]


def test_wrong_literal_type_on_linear_column(rev):
    assert query_spaces(rev, GreaterThan("x", "50")) == [AllSpace()]
    assert query_spaces(rev, EqualTo("x", True)) == [AllSpace()]


def test_bad_predicate(rev):
    with pytest.raises(InvalidOptionError, match="Expression"):
        query_spaces(rev, "x > 1")  # type: ignore[arg-type]


# -- the safety property: pruning never loses a qualifying row --------------------------------


DAY = 86_400_000
DATES = [dt.date(2024, 1, 1) + dt.timedelta(days=k) for k in range(0, 40, 3)]

# Candidate values per column (canonical for rows; predicates get the same or Python dates).
COLUMN_VALUES = {
    "x": [0, 50, 100, 7, 33, 99, 12.5, -5, 105],
    "h": ["a", "b", "c", "", "zz", "q"],
    "b": ["a", "b", "m", "mm", "z", "zz", "A", "", "null"],
    "q": [0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 7.0],
    "d": DATES,
}


@pytest.fixture(scope="module")
def wide_rev(revisions):
    """Every kind of dimension: linear int, hashed string, histogram, quantiles with duplicated
    boundaries, linear date (epoch millis of UTC midnights)."""
    lo, hi = canonical_literal(DATES[0]), canonical_literal(DATES[-1])
    return revisions.revision(
        revisions.linear("x", "IntegerDataType", 0, 100, 50),
        revisions.hashing("h"),
        revisions.histogram("b", [chr(c) for c in range(ord("a"), ord("z") + 1)]),
        revisions.quantiles("q", "DoubleDataType", [1.0, 2.0, 2.0, 2.0, 3.0, 5.0]),
        revisions.linear("d", "DateDataType", lo, hi, lo + 2 * DAY),
    )


def _row_predicate(rng: random.Random, depth: int = 0) -> Expression:
    if depth < 2 and rng.random() < 0.45:
        kind = rng.choice([And, Or, Not])
        if kind is Not:
            return Not(_row_predicate(rng, depth + 1))
        return kind(*(_row_predicate(rng, depth + 1) for _ in range(2)))
    col = rng.choice([*COLUMN_VALUES, "other"])
    choices = COLUMN_VALUES.get(col, [0, 1, 2])
    kind = rng.randrange(9)
    if kind == 0:
        return IsNull(col)
    if kind == 1:
        return IsNotNull(col)
    if kind == 2:
        return In(col, [rng.choice(choices) for _ in range(rng.randrange(1, 4))])
    op = rng.choice([EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual])
    return op(col, rng.choice(choices))


def test_pruning_never_drops_a_qualifying_row(wide_rev):
    rng = random.Random(2024)
    columns = wide_rev.columns
    rows = []
    for _ in range(300):
        row = {"other": rng.randrange(3)}
        for col in columns:
            # Rows hold values of the column's type within the revision's range.
            values = [v for v in COLUMN_VALUES[col] if col != "x" or v in range(0, 101)]
            value = rng.choice([None, *values])
            row[col] = canonical_literal(value) if value is not None else None
        rows.append(row)
    ts = wide_rev.transformations
    points = [tuple(t.transform(r[c]) for t, c in zip(ts, columns)) for r in rows]
    cubes = [list(CubeId.containers(p, max_depth=4)) for p in points]
    pruned = 0
    for _ in range(400):
        predicate = _row_predicate(rng)
        spaces = query_spaces(wide_rev, predicate)
        assert spaces
        pruned += spaces != [AllSpace()]
        for row, chain in zip(rows, cubes):
            if evaluate(predicate, row) is not True:
                continue
            assert any(
                all(space.intersects(c) for c in chain) for space in spaces
            ), (predicate, row, spaces)
    assert pruned > 100  # the test exercises real pruning, not only AllSpace


def test_date_literals_prune_a_date_dimension(wide_rev):
    (space,) = query_spaces(wide_rev, GreaterThanOrEqual("d", DATES[-1]))
    # (max - min) * (1 / (max - min)) rounds below 1, as in qbeast-spark; rows at the max share it.
    assert space.from_[4] == pytest.approx(1.0) and space.to[4] is None
    assert space.from_[4] == wide_rev.transformations[4].transform(canonical_literal(DATES[-1]))
    (space,) = query_spaces(wide_rev, LessThan("d", dt.datetime(2024, 1, 1, 12, 0)))
    # Half a day after the first date, over a 39-day range.
    assert space.to[4] == pytest.approx(0.5 / 39)
