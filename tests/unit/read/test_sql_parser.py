"""The SQL predicate parser: SQL text (a user's filter, or the data filters Spark hands the JVM
bridge) becomes an exact, canonical core expression over a table's columns.

The key property: a translated predicate never keeps fewer rows than the original one (pruning is
allowed to be coarse, never lossy). Checked directly, and by evaluating both sides on rows. The
parser is pure Python: these tests give it the table's schema as Delta's JSON and start no JVM.
"""
from __future__ import annotations

import datetime as dt
import decimal
import random

import pytest

from qbeast.core import expressions as ex
from qbeast.core.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast.errors import InvalidOptionError
from qbeast.spark.read.sql_parser import parse_sql_predicate, weight_bounds


def _field(name: str, kind: object) -> dict:
    return {"name": name, "type": kind, "nullable": True, "metadata": {}}


SCHEMA = {"type": "struct", "fields": [
    _field("user_id", "integer"),
    _field("Brand", "string"),
    _field("price", "double"),
    _field("big", "long"),
    _field("day", "date"),
    _field("ts", "timestamp"),
    _field("amount", "decimal(10,2)"),
]}

UTC = dt.timezone.utc


def millis(moment: dt.datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("user_id > 5", ex.GreaterThan("user_id", 5)),
        ("5 < user_id", ex.GreaterThan("user_id", 5)),
        ("user_id BETWEEN 1 AND 10", ex.And(ex.GreaterThanOrEqual("user_id", 1), ex.LessThanOrEqual("user_id", 10))),
        ("brand IN ('a', 'b') OR brand IS NULL", ex.Or(ex.In("Brand", ("a", "b")), ex.IsNull("Brand"))),
        ("NOT (price <= 2.5)", ex.Not(ex.LessThanOrEqual("price", 2.5))),
        ("day >= '2020-01-02'", ex.GreaterThanOrEqual("day", millis(dt.datetime(2020, 1, 2)))),
        ("day < DATE '2020-01-02'", ex.LessThan("day", millis(dt.datetime(2020, 1, 2)))),
        ("ts > TIMESTAMP '2020-01-02 03:04:05.123'", ex.GreaterThan("ts", millis(dt.datetime(2020, 1, 2, 3, 4, 5)) + 123)),
        ("`user_id` = '7'", ex.EqualTo("user_id", 7)),
        ("amount = 12.50", ex.EqualTo("amount", 12.5)),
        ("brand LIKE 'ab%'", ex.And(ex.GreaterThanOrEqual("Brand", "ab"), ex.LessThan("Brand", "ac"))),
        ("user_id NOT IN (1, 2)", ex.Not(ex.In("user_id", (1, 2)))),
        ("big is not null and user_id <> 3", ex.And(ex.IsNotNull("big"), ex.NotEqualTo("user_id", 3))),
        # Spark's epoch-number functions are timestamp literals
        ("ts >= timestamp_micros(1704067200123000)",
         ex.GreaterThanOrEqual("ts", millis(dt.datetime(2024, 1, 1)) + 123)),
        ("ts BETWEEN timestamp_millis(1704067200000) AND TIMESTAMP_SECONDS(1704153600)",
         ex.And(ex.GreaterThanOrEqual("ts", millis(dt.datetime(2024, 1, 1))),
                ex.LessThanOrEqual("ts", millis(dt.datetime(2024, 1, 2))))),
        ("ts < timestamp_seconds(-1.5)", ex.LessThan("ts", -1500)),
        # with a column or a sub-microsecond value they stay unknown
        ("ts < timestamp_seconds(user_id) AND user_id = 1", ex.EqualTo("user_id", 1)),
        ("ts < timestamp_seconds(0.0000001) OR user_id = 1", ex.AlwaysTrue()),
    ],
)
def test_sql_predicates(sql, expected):
    assert parse_sql_predicate(sql, SCHEMA) == expected


@pytest.mark.parametrize(
    "sql, expected",
    [
        # unknown parts drop out of an AND ...
        ("md5(brand) = 'A' AND user_id > 5", ex.GreaterThan("user_id", 5)),
        ("user_id + 1 > 5 AND price < 3", ex.LessThan("price", 3.0)),
        ("abs(price) BETWEEN 1 AND 2 AND user_id = 4", ex.EqualTo("user_id", 4)),
        # ... but make an OR or a NOT unknown
        ("user_id > 5 OR md5(brand) = 'A'", ex.AlwaysTrue()),
        # calls skipping indexes may be declared on are kept only in their exact forms
        ("upper(user_id) = 'A' OR substring(brand, 0, 2) = 'x' OR trim(BOTH 'x' FROM brand) = 'y'",
         ex.AlwaysTrue()),
        ("NOT (user_id = price)", ex.AlwaysTrue()),
        ("missing_column = 3 AND user_id = 1", ex.EqualTo("user_id", 1)),
        ("brand LIKE '%x'", ex.AlwaysTrue()),
        ("user_id = NULL", ex.AlwaysFalse()),
    ],
)
def test_sql_predicates_degrade_conservatively(sql, expected):
    assert parse_sql_predicate(sql, SCHEMA) == expected


def test_calls_of_string_columns_are_predicate_subjects():
    """How Spark prints the calls skipping indexes may be declared on (Expression.sql())."""
    from qbeast.core.derived import Call

    brand = Call("lower", "Brand")
    assert parse_sql_predicate("((t.brand IS NOT NULL) AND (lower(t.brand) = 'x'))", SCHEMA) == \
        ex.And(ex.IsNotNull("Brand"), ex.EqualTo(brand, "x"))
    assert parse_sql_predicate("(lower(`BRAND`) <=> NULL) OR LOWER(brand) IN ('a', NULL)", SCHEMA) == \
        ex.Or(ex.IsNull(brand), ex.In(brand, ("a",)))
    prefix = Call("substring", "Brand", (1, 3))
    for text in ["substring(brand, 1, 3) = 'abc'", "substr(brand, 1, 3) = 'abc'", "left(brand, 3) = 'abc'"]:
        assert parse_sql_predicate(text, SCHEMA) == ex.EqualTo(prefix, "abc"), text
    assert parse_sql_predicate("substring(brand, 2) = 'b'", SCHEMA) == \
        ex.EqualTo(Call("substring", "Brand", (2, 2**31 - 1)), "b")
    assert parse_sql_predicate("btrim(brand) = 'a'", SCHEMA) == ex.EqualTo(Call("trim", "Brand"), "a")


STRUCTS = {"type": "struct", "fields": SCHEMA["fields"] + [
    _field("s", {"type": "struct", "fields": [_field("user_id", "integer")]}),
    _field("date", "date"),
]}


@pytest.mark.parametrize(
    "sql, expected",
    [
        # what Spark's Expression.sql() prints for the data filters it hands the JVM bridge
        ("(price >= 100.0D)", ex.GreaterThanOrEqual("price", 100.0)),
        ("(big < 5L)", ex.LessThan("big", 5)),
        ("(amount = 2.50BD)", ex.EqualTo("amount", decimal.Decimal("2.50"))),
        ("((user_id < 5) OR (price > 90.5D))", ex.Or(ex.LessThan("user_id", 5), ex.GreaterThan("price", 90.5))),
        ("(user_id IN (1, 2, 3))", ex.In("user_id", (1, 2, 3))),
        ("(NOT (user_id IN (1, 2)))", ex.Not(ex.In("user_id", (1, 2)))),
        ("(user_id IS NULL)", ex.IsNull("user_id")),
        ("(Brand IS NOT NULL)", ex.IsNotNull("Brand")),
        ("(user_id <=> 4)", ex.EqualTo("user_id", 4)),
        ("(day >= DATE '2024-01-10')", ex.GreaterThanOrEqual("day", millis(dt.datetime(2024, 1, 10)))),
        ("(day IN (DATE '2024-01-01', DATE '2024-01-02'))",
         ex.In("day", (millis(dt.datetime(2024, 1, 1)), millis(dt.datetime(2024, 1, 2))))),
        ("(ts < TIMESTAMP '2024-02-25 00:00:00')", ex.LessThan("ts", millis(dt.datetime(2024, 2, 25)))),
        ("(Brand = 'it\\'s')", ex.EqualTo("Brand", "it's")),
        # qualifiers Spark may print before a column
        ("(spark_catalog.default.t.user_id < 5)", ex.LessThan("user_id", 5)),
        ("(`spark_catalog`.`default`.`t`.`price` > 1.0D)", ex.GreaterThan("price", 1.0)),
        # exact widening casts of a column keep pruning; narrowing ones do not
        ("(CAST(user_id AS BIGINT) > 5L)", ex.GreaterThan("user_id", 5)),
        ("(CAST(user_id AS DOUBLE) <= 7.0D)", ex.LessThanOrEqual("user_id", 7)),
        ("(CAST(user_id AS DOUBLE) <= 7.5D)", ex.AlwaysTrue()),
        ("(CAST(big AS INT) > 5)", ex.AlwaysTrue()),
        ("(CAST(price AS STRING) = '1')", ex.AlwaysTrue()),
        # LIKE 'ab%' after Spark's optimizer
        ("startswith(Brand, 'ab')", ex.And(ex.GreaterThanOrEqual("Brand", "ab"), ex.LessThan("Brand", "ac"))),
        ("(hash(user_id, price) < -5)", ex.AlwaysTrue()),  # a weight filter is not a predicate
    ],
)
def test_pushed_filter_text(sql, expected):
    assert parse_sql_predicate(sql, SCHEMA) == expected


def test_pushed_filters_with_struct_fields_keyword_names_and_time_zones():
    # `s.user_id` reads a struct field, not the column user_id: never prunes by user_id
    assert parse_sql_predicate("(s.user_id < 5)", STRUCTS) == ex.AlwaysTrue()
    assert parse_sql_predicate("(t.s.user_id < 5)", STRUCTS) == ex.AlwaysTrue()
    # a column named like a keyword
    assert parse_sql_predicate("(date = DATE '2024-01-01')", STRUCTS) == ex.EqualTo(
        "date", millis(dt.datetime(2024, 1, 1)))
    # Spark prints timestamp literals in the session time zone, without an offset
    paris = parse_sql_predicate("(ts >= TIMESTAMP '2024-01-01 00:00:00')", SCHEMA, time_zone="Europe/Paris")
    assert paris == ex.GreaterThanOrEqual("ts", millis(dt.datetime(2023, 12, 31, 23)))
    offset = parse_sql_predicate("(ts >= TIMESTAMP '2024-01-01 00:00:00')", SCHEMA, time_zone="+02:00")
    assert offset == ex.GreaterThanOrEqual("ts", millis(dt.datetime(2023, 12, 31, 22)))


@pytest.mark.parametrize(
    "sql, columns, expected",
    [
        ("(hash(a, b) < -1717986918)", ["a", "b"], (MIN_WEIGHT, -1717986918)),
        ("hash(`a`, `b`) < -5", ["a", "b"], (MIN_WEIGHT, -5)),
        ("(hash(A, b) <= 10)", ["a", "b"], (MIN_WEIGHT, 11)),
        ("(hash(a, b) >= 3)", ["a", "b"], (3, MAX_WEIGHT + 1)),
        ("(hash(a, b) > 3)", ["a", "b"], (4, MAX_WEIGHT + 1)),
        ("(-5 > hash(a, b))", ["a", "b"], (MIN_WEIGHT, -5)),
        ("(hash(`a`) < 0)", ["a"], (MIN_WEIGHT, 0)),
        ("(hash(s.a, s.b) < 5)", ["a", "b"], None),  # maybe struct fields: never a sample
        # not the sample of this table: other columns, other order, another function, a range
        ("(hash(b, a) < 5)", ["a", "b"], None),
        ("(hash(a) < 5)", ["a", "b"], None),
        ("(xxhash64(a, b) < 5)", ["a", "b"], None),
        ("(hash(a, b) < 5.0D)", ["a", "b"], None),
        ("(hash(a, b) = 5)", ["a", "b"], None),
        ("((hash(a, b) < 5) OR (a = 1))", ["a", "b"], None),
        ("(hash(a, b) < 5)", [], None),
    ],
)
def test_weight_filters_are_recognised_exactly(sql, columns, expected):
    assert weight_bounds(sql, columns) == expected


def test_empty_sql_predicate_is_rejected():
    with pytest.raises(InvalidOptionError, match="SQL predicate"):
        parse_sql_predicate("  ", SCHEMA)


def _random_predicate(rng: random.Random) -> str:
    def atom() -> str:
        value = rng.randint(0, 20)
        return rng.choice(
            [
                f"user_id > {value}",
                f"user_id <= {value}",
                f"user_id BETWEEN {value} AND {value + rng.randint(0, 5)}",
                f"user_id IN ({value}, {value + 2})",
                "user_id IS NULL",
                f"abs(user_id) = {value}",  # unknown to the parser
                f"user_id NOT IN ({value})",
                f"user_id <> {value}",
            ]
        )

    def expr(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return atom()
        op = rng.choice([" AND ", " OR "])
        text = f"({expr(depth - 1)}{op}{expr(depth - 1)})"
        return f"NOT {text}" if rng.random() < 0.2 else text

    return expr(3)


def _sql_eval(sql: str, value: int | None) -> bool | None:
    """Reference semantics: evaluate the SQL text in Python with three-valued logic."""
    import re

    text = sql.replace("abs(user_id)", "ABS")
    text = re.sub(r"user_id NOT IN \((\d+)\)", r"NOTIN(\1)", text)
    text = re.sub(r"user_id IN \((\d+), (\d+)\)", r"IN2(\1,\2)", text)
    text = re.sub(r"user_id BETWEEN (\d+) AND (\d+)", r"BETW(\1,\2)", text)
    text = text.replace("user_id IS NULL", "ISNULL")
    text = re.sub(r"user_id (<=|>|<>) (\d+)", r"CMP('\1',\2)", text)
    text = text.replace(" AND ", " & ").replace(" OR ", " | ").replace("NOT ", "~")

    class V:
        def __init__(self, b):
            self.b = b

        def __and__(self, o):
            if self.b is False or o.b is False:
                return V(False)
            return V(None) if None in (self.b, o.b) else V(True)

        def __or__(self, o):
            if self.b is True or o.b is True:
                return V(True)
            return V(None) if None in (self.b, o.b) else V(False)

        def __invert__(self):
            return V(None if self.b is None else not self.b)

    def known(f):
        return V(None) if value is None else V(f())

    env = {
        "ABS": None,
        "NOTIN": lambda a: known(lambda: value != a),
        "IN2": lambda a, b: known(lambda: value in (a, b)),
        "BETW": lambda a, b: known(lambda: a <= value <= b),
        "ISNULL": V(value is None),
        "CMP": lambda op, a: known(lambda: {"<=": value <= a, ">": value > a, "<>": value != a}[op]),
    }
    text = re.sub(r"ABS = (\d+)", lambda m: f"known(lambda: abs(value) == {m.group(1)})", text)
    env["known"] = known
    env["value"] = value
    return eval(text, env).b  # noqa: S307 - test-only evaluator over generated text


def test_random_sql_predicates_never_lose_rows():
    rng = random.Random(7)
    for _ in range(300):
        sql = _random_predicate(rng)
        pruning = parse_sql_predicate(sql, SCHEMA)
        for value in [None, *range(-1, 28)]:
            if _sql_eval(sql, value) is True:
                row = {f["name"]: None for f in SCHEMA["fields"]}
                row["user_id"] = value
                assert ex.evaluate(pruning, row) is not False, (sql, value, pruning)




@pytest.mark.parametrize(("sql", "names"), [
    ("nope < 1", "nope"),
    ("user_id = 1 and (usr_id = 2 or brand = 'x')", "usr_id"),
    ("t.prise > 2", "prise"),  # a qualifier is not a column; the name after it is
    ("nope in (1, 2) and other is null", "nope, other"),
])
def test_a_typed_filter_naming_a_missing_column_is_an_error(sql: str, names: str) -> None:
    """A user's filter with a misspelt column fails at once, naming it and the table's columns
    (it would otherwise prune nothing, and fail later where Spark applies it)."""
    with pytest.raises(InvalidOptionError, match=f"names {names}, which the table has no column "
                                                 "of; allowed columns: user_id, Brand, price"):
        parse_sql_predicate(sql, SCHEMA, known_columns_only=True)
    assert parse_sql_predicate(sql, SCHEMA) is not None  # pushed filters are never refused


@pytest.mark.parametrize("sql", [
    "ts < current_timestamp and day = current_date",
    "case when price > 1 then true else false end",
    "ts > current_timestamp - interval 1 day",
    "`Brand`.`x` = 1",  # a struct field access on a column (never prunes)
    "events.user_id = 3 and BRAND = 'a'",  # a table qualifier; names are case-insensitive
    "lower(brand) = 'a'",
])
def test_valid_filters_are_not_refused(sql: str) -> None:
    parse_sql_predicate(sql, SCHEMA, known_columns_only=True)
